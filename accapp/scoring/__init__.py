"""Scorers turn strings into per-token log-probabilities."""
