"""The graph writes a step's result over its first input only when nothing else cached may share that memory
(core/graph.py: `_shared`, which compares only arrays of the input's own memory before asking NumPy)."""

import numpy as np
from numpy.lib.stride_tricks import as_strided

from attncalc.core.graph import _shared


def test_an_array_of_its_own_memory_shares_with_nothing_else():
    a, other = np.zeros((4, 4)), np.zeros((4, 4))
    assert not _shared(a, "a", {"a": a, "other": other, "view of other": other[1:], "label": "x"})


def test_a_view_of_the_input_or_of_its_owner_is_shared():
    owner = np.zeros((4, 4))
    a = owner[:2]
    assert _shared(a, "a", {"a": a, "owner": owner})
    assert _shared(owner, "owner", {"owner": owner, "row": owner[3]})
    assert _shared(a, "a", {"a": a, "sibling": owner[1:3]})  # overlapping rows of the same owner
    assert not _shared(a, "a", {"a": a, "apart": owner[2:]})  # the same owner, rows that do not overlap


def test_memory_reached_another_way_is_asked_of_numpy():
    owner = np.zeros(16)
    strided = as_strided(owner, shape=(4, 4), strides=(8, 8))  # base: not the owner itself
    assert type(strided.base) is not np.ndarray or strided.base is not owner
    assert _shared(owner, "owner", {"owner": owner, "strided": strided})
    raw = bytearray(128)
    one, two = np.frombuffer(raw, np.float64), np.frombuffer(raw, np.float64)[8:]  # the same buffer twice
    assert _shared(one, "one", {"one": one, "two": two})


def test_the_input_itself_under_its_own_name_is_not_counted():
    a = np.zeros(3)
    assert not _shared(a, "a", {"a": a})
    assert _shared(a, "a", {"a": a, "alias": a})
