"""Acceptability Explorer: what a language model knows about grammar, method by method."""

__version__ = "0.1.0"
