"""Scorers turn strings into log-probabilities: the contract (api.py), the causal scorer, the
masked-LM scorer and the naive reference, each answering `execute(requests)`."""
