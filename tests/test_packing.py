"""Token-tree packing (accapp/scoring/packing.py): pure functions checked against brute force."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accapp.scoring.packing import ancestor_mask, balanced_capacity, build_units, first_fit_decreasing, pack_rows, passes

seqs_st = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=1, max_size=40)


def assert_partition(groups, n: int) -> None:
    """Every index 0..n-1 in exactly one group."""
    assert sorted(i for g in groups for i in g) == list(range(n))


def trie_size(seqs) -> int:
    """Distinct non-empty prefixes: the nodes of the token tree, counted the slow way."""
    return len({tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)})


@settings(max_examples=200, deadline=None)
@given(seqs_st, st.integers(1, 3), st.integers(1, 30))
def test_units_rebuild_every_sequence_and_respect_capacity(owns, n_keys, capacity):
    keys = [i % n_keys for i in range(len(owns))]
    cap = max(capacity, max(map(len, owns)))
    units = build_units(owns, keys, cap)
    assert_partition([u.members for u in units], len(owns))  # every sequence exactly once
    for u in units:
        assert len(u.tokens) <= cap
        for j, par in enumerate(u.parent):
            assert par < j  # parents come first
            assert u.depth[j] == (0 if par < 0 else u.depth[par] + 1)
        for i, path in zip(u.members, u.paths):
            assert keys[i] == u.key
            assert [u.tokens[j] for j in path] == list(owns[i])
            assert [u.depth[j] for j in path] == list(range(len(owns[i])))
            assert all(u.parent[path[k]] == (path[k - 1] if k else -1) for k in range(len(path)))


@settings(max_examples=100, deadline=None)
@given(seqs_st)
def test_units_without_a_capacity_limit_are_the_token_trie(owns):
    units = build_units(owns, [0] * len(owns), 10**6)
    assert len(units) == 1
    assert len(units[0].tokens) == trie_size(owns)  # no token of a shared start is run twice


def test_a_minimal_pair_shares_its_common_start():
    good, bad = [5, 6, 7, 8, 9], [5, 6, 7, 4, 9]
    (unit,) = build_units([good, bad], ["t", "t"], 64)
    assert len(unit.tokens) == 7  # 3 shared + 2 + 2
    assert unit.paths[0][:3] == unit.paths[1][:3]


def test_different_prefixes_never_share_a_unit():
    units = build_units([[1, 2], [1, 2]], ["a", "b"], 64)
    assert sorted(u.key for u in units) == ["a", "b"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=60), st.integers(1, 25))
def test_first_fit_decreasing_fits_and_covers(sizes, capacity):
    bins = first_fit_decreasing(sizes, capacity)
    assert_partition(bins, len(sizes))
    assert all(len(b) == 1 or sum(sizes[i] for i in b) <= capacity for b in bins)
    # no two bins could be merged: FFD leaves at most one bin at most half full
    assert sum(1 for b in bins if sum(sizes[i] for i in b) * 2 <= capacity) <= 1


def _first_fit_by_scanning(sizes, capacity):
    """First-fit decreasing as the textbook writes it: every bin scanned in order for each item."""
    bins, free = [], []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        b = next((b for b, room in enumerate(free) if sizes[i] <= room), None)
        if b is None:
            bins.append([i])
            free.append(capacity - sizes[i])
        else:
            bins[b].append(i)
            free[b] -= sizes[i]
    return bins


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 140), min_size=0, max_size=300), st.integers(1, 128))
def test_first_fit_decreasing_equals_the_scan_of_every_bin(sizes, capacity):
    """The tree's answer is the plain scan's, bin for bin and item for item (oversized and empty items too):
    the packing, hence every pass's shapes and scores, is what it was."""
    assert first_fit_decreasing(sizes, capacity) == _first_fit_by_scanning(sizes, capacity)


def test_pack_rows_keeps_a_key_together_when_it_fits():
    rng = random.Random(0)
    sizes = [rng.randint(5, 30) for _ in range(30)]
    keys = [i // 3 for i in range(30)]
    rows = pack_rows(sizes, keys, 128)
    assert_partition(rows, 30)
    assert all(sum(sizes[i] for i in r) <= 128 for r in rows)
    assert len(rows) <= -(-sum(sizes) // 128) + 1  # near the fewest rows possible
    split = sum(1 for k in set(keys) if len({n for n, r in enumerate(rows) for i in r if keys[i] == k}) > 1)
    assert split == 0  # every key's units share a row


def test_pack_rows_splits_a_key_too_big_for_one_row():
    rows = pack_rows([60, 60, 60, 10], ["a", "a", "a", "b"], 128)
    assert_partition(rows, 4)
    assert all(sum([60, 60, 60, 10][i] for i in r) <= 128 for r in rows)
    assert len(rows) == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 100), min_size=1, max_size=50), st.integers(1, 500))
def test_passes_respect_the_token_budget(lengths, budget):
    out = passes(lengths, budget)
    assert_partition(out, len(lengths))
    assert all(len(p) == 1 or len(p) * max(lengths[r] for r in p) <= budget for p in out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.integers(1, 4), st.integers(40, 128))
def test_balanced_capacity_never_adds_a_row_and_never_widens(sizes, n_keys, capacity):
    keys = [i % n_keys for i in range(len(sizes))]
    rows = len(pack_rows(sizes, keys, capacity))
    for budget in (rows * capacity, rows * capacity - 1):  # fits one pass / does not
        c = balanced_capacity(sizes, keys, capacity, budget)
        assert max(sizes) <= c <= capacity
        assert len(pack_rows(sizes, keys, c)) <= rows
        if budget < rows * capacity:
            assert c == capacity  # several passes: full rows, the short ones go together


def test_balanced_capacity_evens_out_a_short_last_row():
    """A probe's case: full rows and a short last one become even rows (a pass is padded to
    its longest row, so the longest row is what costs)."""
    sizes = [8] * 50  # at 128 a row: rows of 128, 128, 128 and 16
    keys = list(range(len(sizes)))
    assert max(sum(sizes[i] for i in r) for r in pack_rows(sizes, keys, 128)) == 128
    c = balanced_capacity(sizes, keys, 128, 4 * 128)
    rows = pack_rows(sizes, keys, c)
    assert len(rows) == 4 and c == 104  # 13 strings of 8 a row: 104, 104, 104, 88
    assert max(sum(sizes[i] for i in r) for r in rows) == 104


@settings(max_examples=200, deadline=None)
@given(seqs_st, st.integers(1, 3), st.integers(1, 4), st.integers(0, 5))
def test_ancestor_mask_is_what_each_token_sees_walked_by_hand(owns, n_keys, n_rows, padding):
    """Units laid side by side in rows, as the scorer lays them, then padding: each node sees exactly the
    nodes on its own path from the tree's root (itself included), found by walking its parents one by one;
    a padding slot sees only itself."""
    keys = [i % n_keys for i in range(len(owns))]
    units = build_units(owns, keys, max(map(len, owns)))
    rows = [units[r::n_rows] for r in range(n_rows)]
    L = max(sum(len(u.tokens) for u in row) for row in rows) + padding
    parents = np.full((n_rows, L), -1)
    want = np.zeros((n_rows, L, L), dtype=bool)
    for b, row in enumerate(rows):
        off = 0
        for u in row:
            for j, par in enumerate(u.parent):
                parents[b, off + j] = par + off if par >= 0 else -1
                node = j
                while node >= 0:  # up the tree to its root
                    want[b, off + j, off + node] = True
                    node = u.parent[node]
            off += len(u.tokens)
        for t in range(off, L):
            want[b, t, t] = True
    assert (ancestor_mask(parents) == want).all()
