"""``dpbandits._memo.IdentityMemo``: a value per object, found by identity."""

from dpbandits._memo import IdentityMemo


def test_a_value_is_computed_once_per_object_and_again_for_an_equal_copy():
    calls = []

    def compute(obj):
        calls.append(obj)
        return len(calls)

    memo, a, b = IdentityMemo(), [1, 2], [1, 2]  # equal, distinct, unhashable
    assert memo.get(a, compute) == 1 and memo.get(a, compute) == 1
    assert memo.get(b, compute) == 2 and memo.get(a, compute) == 1
    assert len(calls) == 2


def test_it_keeps_at_most_maxsize_objects():
    memo = IdentityMemo(maxsize=2)
    objs = [[i] for i in range(3)]
    for obj in objs:
        memo.get(obj, lambda o: o[0])
    assert 1 <= len(memo._entries) <= 2
    # the last object is kept (with its object, so that no new object can take its id)
    assert memo.get(objs[2], lambda o: -1) == 2
    assert memo.get([2], lambda o: -1) == -1
