"""Randomized differential tests: joins of three or more inputs whose every input changes.

With three or more changed inputs the join rule joins one of them, the pivot, last and once:
``Δ(⋈ X ⋈ P) = Δ(⋈ X) ⋈ P_old + (⋈ X_new) ⋈ ΔP`` (``delta/join.py``), recursively when ``X``
has three changed inputs itself. These views cover the shapes that choice depends on:
chains (an end or the middle may be cut off), a star (its centre is never the pivot), a
cycle (any input may go), self-joins (one table, several inputs), a ``FROM`` list under a
``WHERE``, a four-way join (pivoted twice), constant conjuncts, and aggregates and DISTINCT
above. Every batch writes every table, with NULLs, duplicates, updates and deletes. After
CREATE and after every refresh every view equals its query run afresh, and every refresh is
INCREMENTAL (``check_fleet``); the example's EXPLAIN shows the pivot's terms.
"""

from __future__ import annotations

from conftest import assert_view_matches_query, spark_examples
from differential import NO_SHRINK
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from test_differential_fleet import Fleet, Tally, check_fleet
from view_generator import TABLES, Draw, Step, View, rows_of, storage_confs, writes

FLEET_SIZE = 3

JOIN_VIEWS = (
    # a chain: r and t are ends, s the middle (never the pivot: it would cut r off t)
    "SELECT r.a, s.c, t.d FROM r JOIN s ON r.b = s.b JOIN t ON s.c = t.c",
    # the chain as a FROM list, with a constant conjunct and a local filter
    "SELECT r.a, r.b, t.d FROM r, s, t WHERE r.b = s.b AND s.c = t.c AND 1 = 1 AND r.a <> 2",
    # a star around s: r and t only meet through it
    "SELECT s.b, s.c, r.a, t.d FROM s JOIN r ON s.b = r.b JOIN t ON s.c = t.c",
    # a cycle: any one input may be joined last
    "SELECT r.a, s.c, t.d FROM r JOIN s ON r.b = s.b JOIN t ON s.c = t.c AND t.d = r.a",
    # self-joins: r twice, so three changed inputs over two tables
    "SELECT x.a, y.b, s.c FROM r AS x JOIN r AS y ON x.b = y.a JOIN s ON y.b = s.b",
    # four inputs, all changed: pivoted twice
    "SELECT r.a, s.c, t.d, r2.b FROM r JOIN s ON r.b = s.b JOIN t ON s.c = t.c"
    " JOIN r AS r2 ON t.d = r2.a",
    # aggregates and DISTINCT above the join
    "SELECT s.c, count(*) AS n, sum(r.a) AS total, max(t.d) AS top FROM r JOIN s ON r.b = s.b"
    " JOIN t ON s.c = t.c GROUP BY s.c",
    "SELECT DISTINCT r.b, t.c FROM r JOIN s ON r.b = s.b JOIN t ON s.c = t.c",
)

EXAMPLE_ROWS: dict[str, list[tuple[object, ...]]] = {
    "r": [(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3)],
    "s": [(1, "x"), (1, "x"), (None, "y"), (2, "z"), (3, "z")],
    "t": [("x", 1), (None, 0), ("z", 3), ("x", 1)],
}
# Each table gains, loses and updates rows, so every input of every view changes.
EXAMPLE_WRITES = (
    "INSERT INTO r VALUES (1, 1), (3, 2), (NULL, NULL)",
    "UPDATE r SET b = 3 WHERE a = 0",
    "DELETE FROM s WHERE b = 2",
    "INSERT INTO s VALUES (3, 'x'), (1, 'z')",
    "DELETE FROM t WHERE c IS NULL",
    "INSERT INTO t VALUES ('z', 1), ('x', 3)",
)


@st.composite
def every_table_written(draw: Draw) -> list[str]:
    """One to two writes to each base table, in a random order."""
    batch = [draw(writes(table)) for table in TABLES for _ in range(draw(st.integers(1, 2)))]
    return list(draw(st.permutations(batch)))


@st.composite
def join_fleets(draw: Draw) -> Fleet:
    """``FLEET_SIZE`` of the join views over random tables, and two batches that write every
    table."""
    setup = [table.ddl(draw(rows_of(table, min_size=2, max_size=6))) for table in TABLES]
    chosen = draw(st.lists(st.sampled_from(JOIN_VIEWS), min_size=FLEET_SIZE, max_size=FLEET_SIZE))
    steps = [Step(draw(every_table_written()), False) for _ in range(2)]
    return Fleet(setup, [View(query) for query in chosen], steps, draw(storage_confs()))


def example_fleet() -> Fleet:
    setup = [table.ddl(EXAMPLE_ROWS[table.name]) for table in TABLES]
    views = [View(query) for query in JOIN_VIEWS]
    return Fleet(setup, views, [Step(list(EXAMPLE_WRITES), False)])


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(fleet=join_fleets())
@example(fleet=example_fleet())
def test_joins_whose_every_input_changed_match_their_query_after_every_refresh(
    spark: SparkSession, db: str, fleet: Fleet
) -> None:
    check_fleet(spark, db, fleet, Tally())


def test_a_four_way_join_is_pivoted_twice(spark: SparkSession, db: str) -> None:
    """The four-way join after a change to every table: EXPLAIN's ΔV joins the change of
    three inputs with the fourth's old rows, and that change is pivoted again; the refresh
    is incremental and exact."""
    for table in TABLES:
        spark.sql(table.ddl(EXAMPLE_ROWS[table.name]))
    spark.sql(View(JOIN_VIEWS[5]).create("four", "INCREMENTAL"))
    for statement in EXAMPLE_WRITES:
        spark.sql(statement)
    plan = spark.sql("EXPLAIN REFRESH MATERIALIZED VIEW four").collect()[0][0]
    delta = next(line.strip() for line in plan.splitlines() if line.strip().startswith("ΔV = "))
    # e.g. π(((Δs' ⋈ t_old + s ⋈ Δt') ⋈ r_old + s ⋈ t ⋈ Δr') ⋈ r r2_old + r ⋈ s ⋈ t ⋈ Δr r2'):
    # two levels of pivots, and the pivot r2 read once (its old rows) besides its change,
    # where four plain terms would read it four times
    assert delta.startswith("ΔV = π(((") and delta.count("r r2") == 2, plan
    assert spark.sql("REFRESH MATERIALIZED VIEW four").collect()[0]["mode"] == "INCREMENTAL"
    assert_view_matches_query(spark, "four")
