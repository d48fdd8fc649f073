"""Benchmarks (BLiMP, CLiMP, user files of pairs) and the runner that fills the results store."""
