"""Randomized differential tests: subqueries and outer joins (issue 24) × write streams.

Views with ``[NOT] EXISTS``, ``x [NOT] IN (subquery)``, scalar subqueries (in WHERE, the
select list and HAVING; ``COUNT``, ``SUM``, ``MIN``, ``MAX``, ``AVG``), correlated by
equalities, by other comparisons or not at all, ``LEFT``/``RIGHT``/``FULL`` outer joins (extra
``ON`` conditions, chains, aggregates above them) and ``LEFT SEMI``/``LEFT ANTI`` joins
(``view_generator.SubqueryViewBuilder``), in fleets over three small tables with NULLs and
duplicates, under random INSERT / DELETE / UPDATE / MERGE batches. After CREATE and after
every refresh every view equals its query run afresh (docs/development.md), and every refresh is
INCREMENTAL (``check_fleet``).

Every run checks ``example_fleet``, views written to take every branch the generator can
draw (``BRANCHES``, found in a view's text by ``branches_of``) under a batch that empties a
subquery's table and puts a NULL in another (the cases of ``NOT IN``), besides the random
draws;
``test_the_example_and_the_generator_take_every_branch`` checks both without Spark.
"""

from __future__ import annotations

import functools

import sqlglot
from conftest import spark_examples
from differential import NO_SHRINK
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from sqlglot import exp
from test_differential_fleet import Fleet, Tally, check_fleet
from test_differential_spj import seeded_example
from view_generator import (
    TABLE_BY_NAME,
    TABLES,
    Draw,
    Step,
    View,
    batches,
    rows_of,
    storage_confs,
    subquery_views,
)

FLEET_SIZE = 2
SEARCHED_SEEDS = 300

BRANCHES = frozenset(
    {
        "EXISTS",
        "NOT EXISTS",
        "IN (subquery)",
        "NOT IN (subquery)",
        "IN over an aggregate",
        "scalar subquery in WHERE",
        "scalar subquery in the select list",
        "scalar subquery in HAVING",
        "scalar: COUNT(*)",
        "scalar: COUNT",
        "scalar: SUM",
        "scalar: MIN",
        "scalar: MAX",
        "scalar: AVG",
        "correlation: equality",
        "correlation: null-safe equality",
        "correlation: other comparison",
        "correlation: a condition on the outer row alone",
        "uncorrelated subquery",
        "LEFT JOIN",
        "RIGHT JOIN",
        "FULL JOIN",
        "LEFT SEMI JOIN",
        "LEFT ANTI JOIN",
        "outer join: extra ON condition",
        "outer join: chain",
        "outer join: aggregate above",
        "nested subquery",
        "subquery under OR",
        "EXISTS / IN in the select list",
    }
)


def branches_of(query: str) -> frozenset[str]:
    """The constructs of ``BRANCHES`` that ``query`` uses (read from its sqlglot tree)."""
    tree = sqlglot.parse_one(query, read="spark")
    found: set[str] = set()
    for node in tree.find_all(exp.Exists):
        found.add("NOT EXISTS" if isinstance(node.parent, exp.Not) else "EXISTS")
        found |= _position_branches(node)
    for node in tree.find_all(exp.In):
        query_ = node.args.get("query")
        if query_ is not None:
            found.add("NOT IN (subquery)" if isinstance(node.parent, exp.Not) else "IN (subquery)")
            found |= _position_branches(node)
            if query_.find(exp.Group):
                found.add("IN over an aggregate")
    for subquery in tree.find_all(exp.Subquery):
        if not isinstance(subquery.parent, (exp.In, exp.From, exp.Join)):
            found |= _scalar_branches(subquery)
    for select in tree.find_all(exp.Select):
        if select is not tree:
            found |= _correlation_branches(select)
            if select.parent_select is not tree and select.parent_select is not None:
                found.add("nested subquery")
    found |= _join_branches(tree)
    return frozenset(found)


def _position_branches(predicate: exp.Expr) -> set[str]:
    """Where an ``EXISTS`` / ``IN`` subquery stands: under OR, or in a select list."""
    found = set()
    if predicate.find_ancestor(exp.Or, exp.Select) is not predicate.parent_select:
        found.add("subquery under OR")
    if not predicate.find_ancestor(exp.Where, exp.Having):
        found.add("EXISTS / IN in the select list")
    return found


def _scalar_branches(subquery: exp.Subquery) -> set[str]:
    if subquery.find_ancestor(exp.Having):
        where = "HAVING"
    elif subquery.find_ancestor(exp.Where):
        where = "WHERE"
    else:
        where = "the select list"
    found = {f"scalar subquery in {where}"}
    call = subquery.this.expressions[0].find(exp.AggFunc)
    if call is not None:
        star = isinstance(call, exp.Count) and isinstance(call.this, exp.Star)
        found.add(f"scalar: {call.key.upper()}{'(*)' if star else ''}")
    return found


def _correlation_branches(select: exp.Select) -> set[str]:
    """How a subquery's WHERE correlates it with the enclosing query (a qualifier its FROM
    does not define is the enclosing query's)."""
    inner = {table.alias_or_name for table in select.find_all(exp.Table)}
    where = select.args.get("where")
    condition = where.this.unnest() if where is not None else None
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    found: set[str] = set()
    for conjunct in conjuncts:
        if conjunct is None:
            continue
        tables = {c.table for c in conjunct.find_all(exp.Column)}
        if not tables - inner:
            continue
        if not tables & inner:
            found.add("correlation: a condition on the outer row alone")
        elif isinstance(conjunct.unnest(), exp.EQ):
            found.add("correlation: equality")
        elif isinstance(conjunct.unnest(), exp.NullSafeEQ):
            found.add("correlation: null-safe equality")
        else:
            found.add("correlation: other comparison")
    return found or {"uncorrelated subquery"}


def _join_branches(tree: exp.Expr) -> set[str]:
    joins = list(tree.args.get("joins") or [])
    found: set[str] = set()
    outer = False
    for join in joins:
        side, kind = join.side or "", join.kind or ""
        if kind in ("SEMI", "ANTI"):
            found.add(f"LEFT {kind} JOIN")
        elif side:
            outer = True
            found.add(f"{side} JOIN")
            if isinstance(join.args["on"].unnest(), exp.And):
                found.add("outer join: extra ON condition")
    if outer and len(joins) > 1:
        found.add("outer join: chain")
    if outer and tree.args.get("group"):
        found.add("outer join: aggregate above")
    return found


# ---- the fleet every run checks -------------------------------------------------------------

EXAMPLE_VIEWS = (
    # semi- and anti-joins of one row set, correlated by an equality and by a comparison
    # (one with a subquery of its own), and NOT IN correlated null-safely and by the outer
    # row alone (NULLs on both sides)
    "SELECT o.a AS x, o.b AS y FROM r AS o WHERE EXISTS (SELECT 1 FROM s AS i"
    " WHERE i.b = o.b AND i.c <> 'z') AND NOT EXISTS (SELECT * FROM t AS j WHERE j.d < o.a"
    " AND NOT EXISTS (SELECT 1 FROM s AS k WHERE k.c = j.c))"
    " AND o.a NOT IN (SELECT i.b FROM s AS i WHERE i.b <=> o.b AND o.a > 0)",
    # uncorrelated NOT IN (a NULL in the subquery keeps no row, an empty one every row) and
    # IN over an aggregate, under DISTINCT
    "SELECT DISTINCT o.c AS x FROM s AS o WHERE o.b NOT IN (SELECT j.d FROM t AS j)"
    " AND o.b IN (SELECT MAX(i.a) FROM r AS i GROUP BY i.b)",
    # scalar subqueries in the select list: by a comparison, an equality, uncorrelated
    "SELECT o.a AS x, (SELECT COUNT(*) FROM r AS i WHERE i.b < o.b) AS n,"
    " (SELECT SUM(i.a) FROM r AS i WHERE i.b = o.b) AS total,"
    " (SELECT AVG(j.d) FROM t AS j) AS mean FROM r AS o",
    # scalar subqueries in WHERE (COUNT over no rows is 0, MIN/MAX NULL)
    "SELECT o.c AS x, o.b AS y FROM s AS o WHERE o.b >= (SELECT COUNT(i.a) FROM r AS i"
    " WHERE i.b = o.b) AND (SELECT MIN(j.c) FROM t AS j WHERE j.d = o.b) IS NULL"
    " AND coalesce(o.c, 'x') <> (SELECT MAX(j.c) FROM t AS j)",
    # a chain of outer joins, with ON conditions over one side and over both
    "SELECT o.a AS x, p.c AS y, q.d AS z FROM r AS o LEFT JOIN s AS p ON o.b = p.b"
    " AND p.c <> 'z' FULL OUTER JOIN t AS q ON p.c = q.c AND o.a < q.d",
    # an aggregate over a right outer join (COUNT of the padded column), with HAVING against
    # an uncorrelated scalar subquery
    "SELECT o.b AS k, COUNT(p.c) AS n, COUNT(*) AS m FROM s AS p RIGHT JOIN r AS o"
    " ON o.b = p.b GROUP BY o.b HAVING COUNT(*) * 2 >= (SELECT COUNT(*) FROM t AS j)",
    # predicates read as values (mark joins): NOT EXISTS under OR, IN correlated by a
    # comparison in the select list (FALSE without a match, as Spark reads it there)
    "SELECT o.a AS x, o.b IN (SELECT i.b FROM s AS i WHERE i.b < o.a) AS y FROM r AS o"
    " WHERE o.a = 0 OR NOT EXISTS (SELECT 1 FROM s AS i WHERE i.b = o.b)",
    # a parenthesized inner join as an outer join's right side (its tables keep their names)
    "SELECT o.a AS x, p.c AS y, q.d AS z FROM r AS o LEFT JOIN (s AS p JOIN t AS q"
    " ON p.c = q.c) ON o.b = p.b",
    # LEFT SEMI then LEFT ANTI JOIN
    "SELECT o.a AS x, o.b AS y FROM r AS o LEFT SEMI JOIN s AS p ON o.b = p.b"
    " LEFT ANTI JOIN t AS q ON o.a < q.d",
)
EXAMPLE_ROWS: dict[str, list[tuple[object, ...]]] = {
    "r": [(0, 1), (1, 1), (1, 1), (None, 2), (2, None), (3, 3)],
    "s": [(1, "x"), (1, "x"), (None, "y"), (2, None), (3, "z")],
    "t": [("x", 1), (None, 0), ("y", 3), ("x", 1)],
}
# One batch: s empties (every EXISTS over it fails, every NOT IN keeps its row, every row
# joined with it is padded), a NULL enters t (an uncorrelated NOT IN over t keeps no row),
# rows of r come, go and change keys.
EXAMPLE_WRITES = (
    "DELETE FROM s",
    "INSERT INTO t VALUES ('z', NULL), ('y', 2)",
    "DELETE FROM r WHERE a = 1",
    "UPDATE r SET b = a WHERE b = 3 OR b IS NULL",
    "INSERT INTO r VALUES (1, 2), (NULL, NULL)",
)


@functools.cache
def example_fleet() -> Fleet:
    setup = [table.ddl(EXAMPLE_ROWS[table.name]) for table in TABLES]
    steps = [Step(list(EXAMPLE_WRITES), False)]
    return Fleet(setup, [View(query) for query in EXAMPLE_VIEWS], steps)


@st.composite
def subquery_fleets(draw: Draw) -> Fleet:
    """``FLEET_SIZE`` random views of ``subquery_views`` over one set of tables and writes."""
    setup = [table.ddl(draw(rows_of(table, min_size=2, max_size=5))) for table in TABLES]
    views = [draw(subquery_views()) for _ in range(FLEET_SIZE)]
    steps = [Step(draw(batches()), False)]
    return Fleet(setup, views, steps, draw(storage_confs()))


def test_the_example_and_the_generator_take_every_branch() -> None:
    """No Spark: ``EXAMPLE_VIEWS`` take every branch of ``BRANCHES``, and the generator draws
    every one of them from some seed below ``SEARCHED_SEEDS`` (and nothing else that
    ``branches_of`` names)."""
    taken = frozenset().union(*(branches_of(query) for query in EXAMPLE_VIEWS))
    assert not BRANCHES - taken, f"the example never takes {sorted(BRANCHES - taken)}"
    drawn: set[str] = set()
    for number in range(SEARCHED_SEEDS):
        drawn |= branches_of(seeded_example(subquery_views(), number).query)
        if drawn >= BRANCHES:
            break
    assert drawn == BRANCHES, (sorted(BRANCHES - drawn), sorted(drawn - BRANCHES))
    assert {table.name for table in TABLES} == set(TABLE_BY_NAME) == set(EXAMPLE_ROWS)


@settings(max_examples=spark_examples(1), phases=NO_SHRINK)
@given(fleet=subquery_fleets())
@example(fleet=example_fleet())
def test_subquery_views_match_their_query_after_every_refresh(
    spark: SparkSession, db: str, fleet: Fleet
) -> None:
    check_fleet(spark, db, fleet, Tally())
