"""The package's version, in a leaf of its own: what records it (provenance, run manifests) need not import the package root."""

__version__ = "0.2.0"
