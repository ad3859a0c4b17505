"""Randomized differential tests: window functions (issue 24 item 4) × write streams.

Views with ranking functions (``RANK``, ``DENSE_RANK``, ``PERCENT_RANK``, ``CUME_DIST``),
partition aggregates (``COUNT``, ``SUM``, ``AVG``, ``MIN``, ``MAX`` over whole partitions and
running ``RANGE`` frames), ``ROWS`` frames, ``LAG``/``LEAD``, ``ROW_NUMBER``/``NTILE``/
``FIRST_VALUE`` (these over total orders: PARTITION BY and ORDER BY cover every column the
view reads), top-k filters over them, windows without PARTITION BY, over joins and under a
WHERE (``window_views``), in fleets over three small tables with NULLs and duplicates, under
random INSERT / DELETE / UPDATE / MERGE batches. After CREATE and after every refresh every
view equals its query run afresh (docs/development.md), and every refresh is INCREMENTAL
(``check_fleet``).

Every run checks ``branch_fleet``: views drawn from fixed seeds until they take every branch
of ``BRANCHES`` (each view records the branches it took) and the canonical top-k views,
under a batch that inserts, deletes and updates keys; besides one random fleet.
"""

from __future__ import annotations

import functools

from conftest import spark_examples
from differential import NO_SHRINK
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from test_differential_fleet import Fleet, Tally, check_fleet
from test_differential_spj import seeded_example
from view_generator import TABLES, Draw, Step, View, batches, rows_of, storage_confs

FLEET_SIZE = 3
SEARCHED_SEEDS = 200

BRANCHES = frozenset(
    {
        "ranking",
        "partition aggregate",
        "running aggregate (RANGE)",
        "ROWS frame",
        "LAG/LEAD",
        "ROW_NUMBER/NTILE/FIRST_VALUE",
        "top-k filter",
        "no PARTITION BY",
        "PARTITION BY",
        "join input",
        "WHERE below the window",
    }
)

# The sources a window reads: (FROM clause, its columns as (qualified name, is an INT)).
SOURCES: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = (
    ("r", (("r.a", True), ("r.b", True))),
    ("s", (("s.b", True), ("s.c", False))),
    ("t", (("t.c", False), ("t.d", True))),
    ("r JOIN s ON r.b = s.b", (("r.a", True), ("r.b", True), ("s.c", False))),
)
RANKINGS = ("rank()", "dense_rank()", "percent_rank()", "cume_dist()")
AGGREGATES = ("count(*)", "count({x})", "min({x})", "max({x})", "sum({i})", "avg({i})")


class WindowViewBuilder:
    """One random window view: its text and the branches it took."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.took: set[str] = set()
        self.numbered = False  # the call numbers rows (a top-k filter reads it)

    def pick(self, options: tuple[str, ...] | list[str]) -> str:
        return str(self.draw(st.sampled_from(list(options))))

    def view(self) -> View:
        source, columns = self.draw(st.sampled_from(SOURCES))
        if "JOIN" in source:
            self.took.add("join input")
        names = [name for name, _ in columns]
        ints = [name for name, is_int in columns if is_int]
        partition = self.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
        self.took.add("PARTITION BY" if partition else "no PARTITION BY")
        rest = [name for name in names if name not in partition]
        kind = self.pick(["ranking", "aggregate", "rows", "lag", "row_number"])
        call, total = self.call(kind, partition, rest, names, ints)
        over = f"PARTITION BY {', '.join(partition)} " if partition else ""
        # a tie-sensitive call reads every column (total order); a tie-free one any subset
        selected = names if total else self.draw(st.lists(st.sampled_from(names), unique=True))
        where = ""
        if self.draw(st.booleans()):
            column = self.pick(ints)
            where = f" WHERE {column} IS NULL OR {column} <> {self.draw(st.integers(0, 3))}"
            self.took.add("WHERE below the window")
        items = ", ".join([*(f"{n} AS {n.replace('.', '_')}" for n in selected), f"{call}"])
        inner = f"SELECT {items} AS w FROM {source}{where}".replace("{over}", over)
        if self.numbered and self.draw(st.booleans()):
            self.took.add("top-k filter")
            k = self.draw(st.integers(1, 3))
            return View(f"SELECT * FROM ({inner}) AS q WHERE q.w <= {k}", branches=self.branches)
        return View(inner, branches=self.branches)

    @property
    def branches(self) -> frozenset[str]:
        return frozenset(self.took)

    def order(self, columns: list[str]) -> str:
        directions = ["", " DESC", " ASC NULLS LAST"]
        return ", ".join(f"{c}{self.pick(directions)}" for c in columns)

    def call(
        self, kind: str, partition: list[str], rest: list[str], names: list[str], ints: list[str]
    ) -> tuple[str, bool]:
        """The window call (``{over}`` for its PARTITION BY), and whether it needs a total
        order (then ``rest``, every column not in PARTITION BY, is its ORDER BY)."""
        total_order = f"ORDER BY {self.order(rest)}" if rest else ""
        if kind == "ranking":
            self.took.add("ranking")
            self.numbered = True
            column = self.pick(names)
            ranking = self.pick(RANKINGS)
            return f"{ranking} OVER ({{over}}ORDER BY {self.order([column])})", False
        if kind == "aggregate":
            function = self.pick(AGGREGATES).format(x=self.pick(names), i=self.pick(ints))
            if self.draw(st.booleans()):
                self.took.add("running aggregate (RANGE)")
                return f"{function} OVER ({{over}}ORDER BY {self.order([self.pick(names)])})", False
            self.took.add("partition aggregate")
            return f"{function} OVER ({{over}})", False
        if kind == "rows":
            self.took.add("ROWS frame")
            function = self.pick(AGGREGATES).format(x=self.pick(names), i=self.pick(ints))
            frame = self.pick(
                [
                    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                    "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
                ]
            )
            return f"{function} OVER ({{over}}{total_order or 'ORDER BY 1'} {frame})", True
        if kind == "lag":
            self.took.add("LAG/LEAD")
            lag = self.pick(["lag", "lead"])
            column = self.pick(ints)
            arguments = self.pick([column, f"{column}, 2", f"{column}, 1, -1"])
            return f"{lag}({arguments}) OVER ({{over}}{total_order or 'ORDER BY 1'})", True
        self.took.add("ROW_NUMBER/NTILE/FIRST_VALUE")
        function = self.pick(["row_number()", "ntile(2)", f"first_value({self.pick(names)})"])
        self.numbered = not function.startswith("first_value")
        return f"{function} OVER ({{over}}{total_order or 'ORDER BY 1'})", True


@st.composite
def window_views(draw: Draw) -> View:
    return WindowViewBuilder(draw).view()


EXAMPLE_ROWS: dict[str, list[tuple[object, ...]]] = {
    "r": [(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3)],
    "s": [(1, "x"), (1, "x"), (None, "y"), (2, None), (3, "z")],
    "t": [("x", 1), (None, 0), ("y", 3), ("x", 1)],
}
# One batch: duplicates come and go, keys change partition, a partition empties.
EXAMPLE_WRITES = (
    "INSERT INTO r VALUES (1, 1), (4, 2), (NULL, NULL)",
    "DELETE FROM s WHERE b = 3",
    "UPDATE r SET b = 3 WHERE a = 0",
    "DELETE FROM t WHERE c = 'y'",
    "INSERT INTO t VALUES ('x', 1), ('z', NULL)",
)


@functools.cache
def branch_views() -> tuple[View, ...]:
    """Views drawn from fixed seeds, each kept when it takes a branch none before took, until
    every branch of ``BRANCHES`` is taken."""
    kept: list[View] = []
    taken: set[str] = set()
    for number in range(SEARCHED_SEEDS):
        view = seeded_example(window_views(), number)
        if view.branches - taken:
            kept.append(view)
            taken |= view.branches
        if taken >= BRANCHES:
            break
    return tuple(kept)


# The canonical top-k views, besides the drawn ones: ROW_NUMBER per group, and a ranking
# over the whole table.
TOP_K_VIEWS = (
    "SELECT * FROM (SELECT r.a, r.b, row_number() OVER (PARTITION BY r.b ORDER BY r.a DESC)"
    " AS rn FROM r) AS q WHERE rn <= 2",
    "SELECT * FROM (SELECT s.b, s.c, dense_rank() OVER (ORDER BY s.c DESC) AS k FROM s) AS q"
    " WHERE k <= 2",
)


@functools.cache
def branch_fleet() -> Fleet:
    setup = [table.ddl(EXAMPLE_ROWS[table.name]) for table in TABLES]
    views = [*branch_views(), *(View(query) for query in TOP_K_VIEWS)]
    return Fleet(setup, views, [Step(list(EXAMPLE_WRITES), False)])


@st.composite
def window_fleets(draw: Draw) -> Fleet:
    """``FLEET_SIZE`` random window views over one set of tables and two batches of writes."""
    setup = [table.ddl(draw(rows_of(table, min_size=2, max_size=6))) for table in TABLES]
    views = [draw(window_views()) for _ in range(FLEET_SIZE)]
    steps = [Step(draw(batches()), False) for _ in range(2)]
    return Fleet(setup, views, steps, draw(storage_confs()))


def test_the_seeded_views_take_every_branch() -> None:
    """No Spark: the seeded views take every branch (and ``BRANCHES`` names all there are)."""
    taken = frozenset().union(*(view.branches for view in branch_views()))
    assert taken == BRANCHES, (sorted(BRANCHES - taken), sorted(taken - BRANCHES))


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(fleet=window_fleets())
@example(fleet=branch_fleet())
def test_window_views_match_their_query_after_every_refresh(
    spark: SparkSession, db: str, fleet: Fleet
) -> None:
    check_fleet(spark, db, fleet, Tally())
