"""Randomized differential tests: materialized views over materialized views × write streams.

Two base tables with NULLs and duplicates, ``r(a, b)`` and ``s(b, c)``, and a graph of views:

    u   = SPJ over r
    g   = aggregate over u              (SPJ view → aggregate over it)
    j   = g joined with the base table s (aggregate view joined with a base table)
    dst = DISTINCT over u               (DISTINCT over a view)
    top = aggregate over j              (r → u → g → j → top: a chain of four levels)

under random INSERT / DELETE / UPDATE batches, each followed by a refresh of a random view,
with or without CASCADE — so sometimes the upstream alone, sometimes a downstream before its
upstream (it then reads what the upstream has logged so far), sometimes the whole chain.
After every refresh each view it refreshed equals its query run afresh (docs/development.md:
over its upstream views as they stand) and was refreshed INCREMENTAL: a downstream view reads the
change its upstream logged (``capture/view_log.py``), never the upstream's stored rows, and a
full refresh of an upstream logs the exact difference. At the end every view is refreshed
with CASCADE and all equal their queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from conftest import assert_view_matches_query, spark_examples, view_description
from differential import NO_SHRINK
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sparkmv.commands.create import INITIAL_REASON

VIEWS = {
    "u": "SELECT a, b FROM r WHERE a IS NULL OR a > 0",
    "g": "SELECT b, COUNT(*) AS n, SUM(a) AS total FROM u GROUP BY b",
    "j": "SELECT g.b, g.n, s.c FROM g JOIN s ON g.b = s.b",
    "dst": "SELECT DISTINCT b FROM u",
    "top": "SELECT c, COUNT(*) AS groups, SUM(n) AS rows_read FROM j GROUP BY c",
}
"""In creation order: each view reads only views created before it."""
UPSTREAM = {"u": [], "g": ["u"], "j": ["g"], "dst": ["u"], "top": ["j"]}

small = st.one_of(st.none(), st.integers(0, 3))
r_rows = st.lists(st.tuples(small, small), max_size=5)
s_rows = st.lists(st.tuples(small, st.sampled_from([None, "x", "y"])), max_size=4)


@dataclass(frozen=True)
class Batch:
    """One batch of writes: rows inserted into r and s, r's rows with ``b = deleted`` deleted
    (NULL: ``b IS NULL``), r's rows with ``b = updated`` given ``a + 1``, then the refresh
    of ``view`` (with ``cascade``)."""

    r_inserted: list[tuple[int | None, int | None]]
    s_inserted: list[tuple[int | None, str | None]]
    deleted: int | None
    updated: int | None
    view: str
    cascade: bool
    full: bool  # the refresh asks for FULL (only of ``u``: its readers stay incremental)


batches = st.builds(
    Batch,
    r_rows,
    s_rows,
    small,
    small,
    st.sampled_from(list(VIEWS)),
    st.booleans(),
    st.booleans(),
)

RICH_INITIAL = (
    [(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3), (2, 2)],
    [(1, "x"), (1, "y"), (None, "x"), (2, None), (3, "y"), (1, "x")],
)
RICH_BATCHES = [
    Batch([(2, 1), (None, None), (1, 1)], [(2, "y")], 2, 1, "g", False, False),  # g alone
    Batch([(3, 2)], [(3, "x")], None, 3, "top", False, False),  # top before its upstreams
    Batch([], [(1, None)], 1, None, "u", False, True),  # u FULL alone
    Batch([(1, 3), (1, 3)], [], 0, 2, "top", True, False),  # the whole chain
    Batch([(0, 0)], [], None, None, "dst", False, False),
]


def values(rows: list[tuple[object, ...]]) -> str:
    def literal(value: object) -> str:
        return "NULL" if value is None else repr(value)

    return ", ".join(f"({', '.join(literal(v) for v in row)})" for row in rows)


def upstream_order(view: str) -> list[str]:
    """``view``'s upstream views, each after the views it reads, then ``view``."""
    order: list[str] = []
    for upstream in UPSTREAM[view]:
        order += [v for v in upstream_order(upstream) if v not in order]
    return [*order, view]


def write(spark: SparkSession, batch: Batch) -> None:
    if batch.r_inserted:
        spark.sql(f"INSERT INTO r VALUES {values(list(batch.r_inserted))}")
    if batch.s_inserted:
        spark.sql(f"INSERT INTO s VALUES {values(list(batch.s_inserted))}")
    where = "b IS NULL" if batch.deleted is None else f"b = {batch.deleted}"
    spark.sql(f"DELETE FROM r WHERE {where}")
    if batch.updated is not None:
        spark.sql(f"UPDATE r SET a = a + 1 WHERE b = {batch.updated}")


def check_refreshed(spark: SparkSession, views: list[str]) -> None:
    """Each of ``views`` was just refreshed: INCREMENTAL (a FULL one only when asked) and
    equal to its query run afresh. A refresh that found nothing to do records nothing, so
    the last refresh recorded may be the view's creation."""
    for view in views:
        described = view_description(spark, view)
        mode, reason = described["Last Refresh Mode"], described["Last Refresh Reason"]
        expected = mode == "INCREMENTAL" or reason in ("full refresh requested", INITIAL_REASON)
        assert expected, (view, reason)
        assert_view_matches_query(spark, view)


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(initial=st.tuples(r_rows, s_rows), stream=st.lists(batches, max_size=4))
@example(initial=RICH_INITIAL, stream=RICH_BATCHES)
def test_views_over_views_match_their_query_after_every_refresh(
    spark: SparkSession,
    db: str,
    initial: tuple[list[tuple[int | None, int | None]], list[tuple[int | None, str | None]]],
    stream: list[Batch],
) -> None:
    note(f"initial {initial}, stream {stream}")
    for table in ("top", "j", "dst", "g", "u"):
        spark.sql(f"DROP MATERIALIZED VIEW IF EXISTS {table}")
    spark.sql("DROP TABLE IF EXISTS r")
    spark.sql("DROP TABLE IF EXISTS s")
    spark.sql("CREATE TABLE r (a INT, b INT) USING parquet")
    spark.sql("CREATE TABLE s (b INT, c STRING) USING parquet")
    r_initial, s_initial = initial
    if r_initial:
        spark.sql(f"INSERT INTO r VALUES {values(list(r_initial))}")
    if s_initial:
        spark.sql(f"INSERT INTO s VALUES {values(list(s_initial))}")
    for name, query in VIEWS.items():
        spark.sql(f"CREATE MATERIALIZED VIEW {name} REFRESH INCREMENTAL AS {query}")
    for batch in stream:
        write(spark, batch)
        mode = " FULL" if batch.full and batch.view == "u" else ""
        cascade = " CASCADE" if batch.cascade else ""
        spark.sql(f"REFRESH MATERIALIZED VIEW {batch.view}{mode}{cascade}")
        check_refreshed(spark, upstream_order(batch.view) if batch.cascade else [batch.view])
    for leaf in ("top", "dst"):
        spark.sql(f"REFRESH MATERIALIZED VIEW {leaf} CASCADE")
    check_refreshed(spark, list(VIEWS))
