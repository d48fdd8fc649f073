"""Pack sequences into rows as token trees (pure functions: lists in, lists out).

Why: a probe feeds the model ~50 strings of 8-45 tokens. Batched one string a row they make
several small, padded forward passes; packed several to a row, each token seeing only its
own sequence's earlier tokens and its template prefix (a 4-D attention mask), they make one
pass with large matrix products. And the strings of one template share more than the
template's text: a minimal pair's two sentences usually begin alike ("The cats that the dog
chased sleep/sleeps"), so sequences that begin alike are laid out as a tree whose shared
tokens are run once (docs/performance.md says how much that saves).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from accapp.scoring.tokens import common_prefix_len


@dataclass
class Unit:
    """Sequences of one template prefix laid out as a tree of tokens (nodes in an order where
    every parent comes before its children)."""

    key: Hashable
    members: list[int] = field(default_factory=list)  # sequence indices
    tokens: list[int] = field(default_factory=list)  # token id per node
    parent: list[int] = field(default_factory=list)  # parent node per node; -1: the prefix
    depth: list[int] = field(default_factory=list)  # position after the prefix, per node
    paths: list[list[int]] = field(default_factory=list)  # per member, its nodes in order


def _by_key(keys: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Indices per key, keys in order of first appearance."""
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        groups[k].append(i)
    return groups


def build_units(owns: Sequence[Sequence[int]], keys: Sequence[Hashable], capacity: int) -> list[Unit]:
    """Token trees of at most `capacity` nodes (a sequence longer than that gets a unit of its
    own): per key, the sequences in sorted order, each adding the tokens after its common
    start with the previous one; a tree that would grow past the capacity starts a new unit."""
    units: list[Unit] = []
    for key, members in _by_key(keys).items():
        members = sorted(members, key=lambda i: tuple(owns[i]))
        unit, prev = None, ()
        for i in members:
            own = tuple(owns[i])
            shared = common_prefix_len(prev, own) if unit is not None else 0
            if unit is not None and len(unit.tokens) + len(own) - shared > capacity:
                unit, shared = None, 0
            if unit is None:
                unit = Unit(key)
                units.append(unit)
                path: list[int] = []
            path = path[:shared]
            first, added = len(unit.tokens), len(own) - shared
            if added > 0:  # a chain of new nodes: each the parent of the next, the first under path's end
                unit.tokens.extend(own[shared:])
                unit.parent.append(path[-1] if path else -1)
                unit.parent.extend(range(first, first + added - 1))
                unit.depth.extend(range(shared, len(own)))
                path.extend(range(first, first + added))
            unit.members.append(i)
            unit.paths.append(list(path))
            prev = own
    return units

# Rows of this many tokens: large matrix products, little padding, cheap attention (docs/performance.md).
ROW_TOKENS = 128


def first_fit_decreasing(sizes: Sequence[int], capacity: int) -> list[list[int]]:
    """Bins of item indices (each bin's sizes sum to at most capacity; an item larger than
    the capacity gets a bin of its own), by first-fit decreasing.

    The first bin with room is found in a tree of the bins' largest free room: log n steps an item
    where scanning the bins took n (docs/performance.md)."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    bins: list[list[int]] = []
    leaves = 1
    while leaves < len(sizes):
        leaves *= 2
    room = [-1] * (2 * leaves)  # room[k]: the most free room under node k; -1 where no bin is yet
    for i in order:
        size = sizes[i]
        if bins and room[1] >= size:  # the leftmost bin with room: descend towards it
            k = 1
            while k < leaves:
                k = 2 * k if room[2 * k] >= size else 2 * k + 1
            b = k - leaves
            bins[b].append(i)
            room[k] -= size
        else:
            k = len(bins) + leaves
            bins.append([i])
            room[k] = capacity - size
        k //= 2
        while k:
            room[k] = max(room[2 * k], room[2 * k + 1])
            k //= 2
    return bins


def pack_rows(lengths: Sequence[int], keys: Sequence[Hashable], capacity: int) -> list[list[int]]:
    """Rows of item indices, each row's lengths summing to at most `capacity` (a longer item
    gets a row of its own), by first-fit decreasing.

    Items with one key (one template prefix) that fit in a row together are placed as one,
    so a row carries few distinct prefixes to copy and attend to.
    """
    items: list[list[int]] = []
    for members in _by_key(keys).values():
        if sum(lengths[i] for i in members) <= capacity:
            items.append(members)
        else:
            items.extend([i] for i in members)
    bins = first_fit_decreasing([sum(lengths[i] for i in it) for it in items], capacity)
    return [[i for j in b for i in items[j]] for b in bins]


def balanced_capacity(lengths: Sequence[int], keys: Sequence[Hashable], capacity: int, token_budget: int) -> int:
    """The row capacity to pack with: when everything fits one pass, the smallest capacity
    that still needs no more rows than `capacity` does, so the rows come out even and the pass,
    padded to its longest row, carries little padding. Otherwise `capacity`."""
    rows = len(pack_rows(lengths, keys, capacity))
    total = sum(lengths)
    if rows * capacity > token_budget:
        return capacity
    for c in range(max(max(lengths, default=1), -(-total // rows)), capacity):
        if len(pack_rows(lengths, keys, c)) <= rows:
            return c
    return capacity


def passes(row_lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """Row indices per forward pass: rows of similar length together, at most token_budget
    padded tokens (rows x longest row) a pass, at least one row."""
    order = sorted(range(len(row_lengths)), key=lambda r: -row_lengths[r])
    out: list[list[int]] = []
    for r in order:
        if out and (len(out[-1]) + 1) * row_lengths[out[-1][0]] <= token_budget:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def ancestor_mask(parents: np.ndarray) -> np.ndarray:
    """Which nodes each node sees: itself and its ancestors. parents (B, L): per row, each node's parent's
    column, -1 for a tree's root or padding (parents come before their children). Returns (B, L, L) bool,
    [b, i, j] true where node j of row b is i or an ancestor of i; one vectorised step per tree level."""
    B, L = parents.shape
    seen = np.zeros((B, L, L), dtype=bool)
    rows, nodes = np.divmod(np.arange(B * L), L)
    at = nodes.copy()  # the ancestor each node has reached: itself first
    while rows.size:
        seen[rows, nodes, at] = True
        at = parents[rows, at]
        going = at >= 0
        rows, nodes, at = rows[going], nodes[going], at[going]
    return seen
