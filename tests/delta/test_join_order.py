"""The join rule's order: from the changed input along the condition, never a needless cross;
the connected part of the inputs that holds the changed ones (``changed_core``); and the
changed input joined last, once (``pivot``), with the bytes the terms scan.

Pure sqlglot, no Spark: ``join_order`` only reads the IR's column names.
"""

from __future__ import annotations

import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from sparkmv.analyze.relational import Join, Scan
from sparkmv.delta.join import (
    changed_core,
    conjunct_inputs,
    conjuncts_of,
    join_order,
    pivot,
    terms_scans,
)


def chain(count: int, condition: str) -> Join:
    """Inputs ``t0 … t{count-1}``, input ``i`` with the columns ``a{i}`` and ``b{i}``."""
    inputs = tuple(
        Scan(f"db.t{i}", (f"a{i}", f"b{i}"), (f"a{i}", f"b{i}"), f"t{i}") for i in range(count)
    )
    return Join(inputs, sqlglot.parse_one(condition) if condition else None)


def test_a_from_list_in_an_unlucky_order_is_joined_along_its_condition() -> None:
    # t0 - t2 - t1 - t3: in FROM order t1 would be crossed with t0
    node = chain(4, "b0 = a2 AND b2 = a1 AND (b1 = a3) AND a0 = 6")
    order, attached = join_order(node, start=0)
    assert order == [0, 2, 1, 3]
    assert [[c.sql() for c in step] for step in attached] == [
        ["a0 = 6"],  # a filter on the first input
        ["b0 = a2"],
        ["b2 = a1"],
        ["b1 = a3"],
    ]


def test_a_delta_term_starts_at_its_changed_input() -> None:
    node = chain(3, "b0 = a1 AND b1 = a2")
    assert join_order(node, start=2)[0] == [2, 1, 0]


def test_inputs_no_conjunct_connects_are_crossed_last_in_their_order() -> None:
    node = chain(4, "b0 = a3 AND 1 = 1")
    order, attached = join_order(node, start=0)
    assert order == [0, 3, 1, 2]
    assert [c.sql() for c in attached[0]] == ["1 = 1"]  # reads no input: filters the first
    assert attached[2] == attached[3] == []


def test_a_single_input_keeps_its_conjuncts() -> None:
    order, attached = join_order(chain(1, "a0 = b0"), start=0)
    assert order == [0]
    assert [c.sql() for c in attached[0]] == ["a0 = b0"]


@given(
    count=st.integers(min_value=1, max_value=6),
    pairs=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=8),
    start=st.integers(0, 5),
)
def test_every_input_is_joined_once_and_every_conjunct_attached_once(
    count: int, pairs: list[tuple[int, int]], start: int
) -> None:
    start %= count
    condition = " AND ".join(f"b{i % count} = a{j % count}" for i, j in pairs)
    node = chain(count, condition)
    order, attached = join_order(node, start)
    assert sorted(order) == list(range(count)) and order[0] == start
    assert len(attached) == count
    placed = [c for step in attached for c in step]
    assert sorted(c.sql() for c in placed) == sorted(c.sql() for c in conjuncts_of(node.condition))
    for step, conjuncts in enumerate(attached):  # each attached where its inputs are joined
        joined = {f"t{i}" for i in order[: step + 1]}
        for conjunct in conjuncts:
            tables = {f"t{column.name[1:]}" for column in conjunct.find_all(sqlglot.exp.Column)}
            assert tables <= joined
            assert step == 0 or not tables <= {f"t{i}" for i in order[:step]}  # not earlier


def test_conjuncts_are_flattened_through_parentheses() -> None:
    condition = sqlglot.parse_one("a AND (b AND (c OR d)) AND ((e))")
    assert [c.sql() for c in conjuncts_of(condition)] == ["a", "b", "c OR d", "e"]
    assert conjuncts_of(None) == []


def test_the_core_is_the_changed_inputs_and_the_paths_between_them() -> None:
    # t0 - t1 - t2 - t3 - t4, and t1 - t5: t2 and t5 changed
    node = chain(6, "b0 = a1 AND b1 = a2 AND b2 = a3 AND b3 = a4 AND b1 = a5 AND a0 = 1")
    assert changed_core(node, [2, 5]) == [1, 2, 5]
    assert changed_core(node, [0, 1]) == [0, 1]
    assert changed_core(node, [4, 0]) == [0, 1, 2, 3, 4]


def test_a_conjunct_over_three_inputs_connects_none_of_them() -> None:
    node = chain(3, "b0 + b1 = a2 AND b0 = a1")
    assert changed_core(node, [0, 1]) == [0, 1]
    assert changed_core(node, [0, 2]) == []  # t2 is reached by the wide conjunct only


@given(
    count=st.integers(min_value=2, max_value=7),
    pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=9),
    changed=st.sets(st.integers(0, 6), min_size=2, max_size=4),
)
def test_a_core_holds_the_changed_inputs_and_is_connected(
    count: int, pairs: list[tuple[int, int]], changed: set[int]
) -> None:
    condition = " AND ".join(f"b{i % count} = a{j % count}" for i, j in pairs)
    node = chain(count, condition)
    wanted = sorted({index % count for index in changed})
    core = changed_core(node, wanted)
    edges = [inputs for _, inputs in conjunct_inputs(node) if len(inputs) == 2]
    reached = {wanted[0]}
    for _ in range(count):  # everything connected to the first changed input
        reached |= {i for inputs in edges if inputs & reached for i in inputs}
    if not set(wanted) <= reached:
        assert core == []
        return
    assert set(wanted) <= set(core) <= reached
    inside = {core[0]}
    for _ in range(count):  # the core is connected by its own conjuncts
        inside |= {i for inputs in edges if inputs & inside and inputs <= set(core) for i in inputs}
    assert inside == set(core)


def test_the_pivot_is_the_largest_changed_input_whose_removal_leaves_the_rest_connected() -> None:
    # t0 - t1 - t2 - t3: without t1 or t2 the chain falls apart
    node = chain(4, "b0 = a1 AND b1 = a2 AND b2 = a3")
    assert pivot(node, [0, 1, 3], [5, 100, 7, 1]) == 0  # t1 is larger but a cut
    assert pivot(node, [0, 1, 3], [5, 100, 7, 9]) == 3
    assert pivot(node, [0, 3], [5, 100, 7, 9]) is None  # two terms scan t3 once anyway
    assert pivot(node, [1, 2, 3], [0, 0, 0, 0]) == 3  # the only one, sizes unknown


def test_a_pivot_is_scanned_once_and_the_others_as_often_as_before() -> None:
    # t0 - t1 - t2, all changed, sizes 1, 10, 100: without a pivot the terms scan
    # (111 - 1) + (111 - 10) + (111 - 100); t2 last: Δ(t0 ⋈ t1) ⋈ t2_old + t0 ⋈ t1 ⋈ Δt2
    node = chain(3, "b0 = a1 AND b1 = a2")
    assert terms_scans(node, [0, 1, 2], [1, 10, 100]) == [2, 2, 1]
    assert terms_scans(node, [0, 1], [1, 10, 100]) == [1, 1, 2]  # no pivot: one term each


@given(
    count=st.integers(min_value=3, max_value=6),
    pairs=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=8),
    changed=st.sets(st.integers(0, 5), min_size=3, max_size=6),
    sizes=st.lists(st.integers(0, 1000), min_size=6, max_size=6),
)
def test_a_pivot_never_scans_an_input_more_often(
    count: int, pairs: list[tuple[int, int]], changed: set[int], sizes: list[int]
) -> None:
    node = chain(count, " AND ".join(f"b{i % count} = a{j % count}" for i, j in pairs))
    hit = sorted({index % count for index in changed})
    sizes = sizes[:count]
    counts = terms_scans(node, hit, sizes)
    unpivoted = [len(hit) - (i in hit) for i in range(count)]
    assert all(scans <= before for scans, before in zip(counts, unpivoted, strict=True))
    last = pivot(node, hit, sizes)
    assert counts == unpivoted if last is None else counts[last] == 1 and last in hit
