"""Tests added to kill surviving mutants of the privacy-critical code (scripts/mutation.sh,
docs/mutation-report.md): each pins a contract whose mutation changed the noise drawn."""

from __future__ import annotations

from dpbandits.privacy.tree import tree_node_levels


def _bits(t: int) -> list[int]:
    return [j for j in range(t.bit_length()) if t >> j & 1]


def test_tree_node_levels_are_the_lowest_and_next_set_bits():
    # by brute force over the bits: a wrong ``above`` makes the partial-sum noise reuse a
    # stale node's noise (or drop one), i.e. a release whose noise is not the tree's
    for t in range(1, 4097):
        bits = _bits(t)
        assert tree_node_levels(t) == (bits[0], bits[1] if len(bits) > 1 else -1), t
