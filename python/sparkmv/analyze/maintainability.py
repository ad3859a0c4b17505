"""Can a view's query be maintained incrementally? (docs/sql-reference.md)

The query is qualified by sqlglot against the base tables' schemas and turned into the
relational IR (``relational.py``); a construct outside the maintainable class makes the
answer "no" with the construct named. Spark's analyzed plan is checked as well, so that
whatever sqlglot cannot see (a non-deterministic user function, an aggregate function it
does not know) still keeps the view on full refresh. The planner uses the answer to pick
FULL under AUTO and to refuse INCREMENTAL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify

from sparkmv.analyze.constructs import find_expression_subquery
from sparkmv.analyze.query import ParsedQuery
from sparkmv.analyze.relational import (
    AGGREGATE_FUNCTIONS,
    Aggregate,
    Distinct,
    Node,
    NotMaintainableError,
    RelationalBuilder,
    Window,
    walk,
)
from sparkmv.analyze.windows import tie_sensitive_construct
from sparkmv.identifiers import SESSION_CATALOG, TableName

# Spark's names of the aggregate functions the rules maintain (``AGGREGATE_FUNCTIONS``).
MAINTAINED_AGGREGATES = frozenset(AGGREGATE_FUNCTIONS.values())

# Spark plan nodes that stand for constructs outside the maintainable class.
SPARK_PLAN_CONSTRUCTS = {
    "Aggregate": "GROUP BY or an aggregate function (aggregate views)",
    "Window": "window function",
    "Generate": "generator function",
    "Sample": "TABLESAMPLE",
    "GlobalLimit": "LIMIT / OFFSET",
    "LocalLimit": "LIMIT / OFFSET",
    "Offset": "LIMIT / OFFSET",
    "Tail": "LIMIT / OFFSET",
    "Expand": "GROUPING SETS / ROLLUP / CUBE",
}


@dataclass(frozen=True)
class Maintainability:
    incremental: bool
    reason: str
    root: Node | None = None  # the view's relational IR, when incremental

    @property
    def counted(self) -> bool:
        """Whether the storage keeps a multiplicity counter per row (a DISTINCT view)."""
        return isinstance(self.root, Distinct)

    @property
    def stored(self) -> Node:
        """The node whose rows the storage holds: under a top DISTINCT, its input (counted)."""
        if self.root is None:
            raise ValueError("the view is not maintained incrementally")
        return self.root.child if isinstance(self.root, Distinct) else self.root


def not_maintainable(construct: str) -> Maintainability:
    return Maintainability(
        False, f"the query uses {construct}, which incremental maintenance does not cover"
    )


def analyze_maintainability(
    query: ParsedQuery,
    database: str,
    data: DataFrame | None,
    columns: Mapping[str, tuple[str, ...]],
    check_plan: bool = True,
) -> Maintainability:
    """Whether ``query`` (whose unqualified names resolve in ``database``, analyzed by Spark
    as ``data``, over base tables with these ``columns``) can be maintained incrementally,
    with its IR. ``check_plan`` False skips the walk of Spark's analyzed plan (``data`` may
    then be None), for a query whose plan passed it over the same base-table schemas (its
    plan is the same)."""
    if query.tree is None:
        return Maintainability(
            False, "sqlglot cannot parse the query, so its deltas cannot be derived"
        )
    try:
        root, _ = RelationalBuilder(dict(columns)).build(qualified(query.tree, database, columns))
    except NotMaintainableError as error:
        return not_maintainable(str(error))
    except (SqlglotError, AssertionError) as error:  # qualify asserts on some shapes
        first_line = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        construct = find_expression_subquery(query.tree)
        if construct:  # what the user can act on, besides sqlglot's complaint
            return not_maintainable(f"a {construct} that sqlglot cannot resolve ({first_line})")
        return Maintainability(False, f"sqlglot cannot resolve the query ({first_line})")
    tie_sensitive = tie_sensitive_construct(root)
    if tie_sensitive:
        return Maintainability(False, tie_sensitive)
    grouped = any(isinstance(node, Aggregate) for node in walk(root))
    windowed = any(isinstance(node, Window) for node in walk(root))
    construct = ""
    if check_plan:  # sqlglot's blind spots
        assert data is not None, "checking Spark's plan needs the analyzed query"
        construct = spark_plan_construct(data, grouped, windowed)
    if construct:
        return not_maintainable(construct)
    return Maintainability(True, "the query is incrementally maintainable", root)


def qualified(tree: exp.Expr, database: str, columns: Mapping[str, tuple[str, ...]]) -> exp.Expr:
    """A copy of ``tree`` with every column qualified by its table and every select item
    aliased (sqlglot's ``qualify``), over base tables with these ``columns``. A top-level
    ORDER BY without LIMIT or OFFSET is dropped: it does not change the view's rows as a
    multiset, and sqlglot cannot qualify an ordinal one over a subquery item."""
    tree = tree.copy()
    if not tree.args.get("limit") and not tree.args.get("offset"):
        tree.set("order", None)
    parsed = {key: TableName.parse_qualified(key) for key in columns}
    if not any(table.catalog for table in parsed.values()):
        by_database: dict[str, dict[str, dict[str, str]]] = {}
        for key, names in columns.items():
            db, _, name = key.partition(".")
            by_database.setdefault(db, {})[name] = dict.fromkeys(names, "STRING")
        return qualify(tree, schema=dict(by_database.items()), db=database, dialect="spark")
    # A base table of another catalog: sqlglot wants every table at the same depth, so the
    # session's are named through its catalog too (``table_key`` drops that name again).
    by_catalog: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for key, table in parsed.items():
        catalog = by_catalog.setdefault(table.catalog or SESSION_CATALOG, {})
        catalog.setdefault(table.database or database, {})[table.name] = dict.fromkeys(
            columns[key], "STRING"
        )
    schema: dict[str, object] = dict(by_catalog.items())
    return qualify(tree, schema=schema, db=database, catalog=SESSION_CATALOG, dialect="spark")


def spark_plan_construct(data: DataFrame, grouped: bool, windowed: bool = False) -> str:
    """A construct of Spark's analyzed plan of ``data`` outside the maintainable class;
    ``grouped``: the IR has aggregates, so Spark's ``Aggregate`` nodes are expected, with
    only the aggregate functions the rules maintain; ``windowed``: the IR has windows, so
    Spark's ``Window`` nodes are expected (their functions are those of the IR's windows,
    which ``analyze/windows`` admitted)."""
    plan: Any = data._jdf.queryExecution().analyzed()
    if not plan.deterministic():
        return "a non-deterministic expression"
    pending = [plan]
    while pending:
        node = pending.pop()
        name = str(node.nodeName())
        if name == "Aggregate" and grouped:
            construct = _aggregate_functions_construct(node)
        elif name == "Window" and windowed:
            construct = ""
        else:
            construct = SPARK_PLAN_CONSTRUCTS.get(name, "")
        if construct:
            return construct
        below = node.children()
        pending.extend(below.apply(index) for index in range(below.size()))
    return ""


def _aggregate_functions_construct(aggregate: Any) -> str:
    """An aggregate function of Spark's ``Aggregate`` node that the rules do not maintain
    (a user-defined one that sqlglot took for a scalar function, say)."""
    pending = [
        aggregate.aggregateExpressions().apply(i)
        for i in range(aggregate.aggregateExpressions().size())
    ]
    while pending:
        expression = pending.pop()
        if str(expression.getClass().getSimpleName()) == "AggregateExpression":
            function = str(expression.aggregateFunction().prettyName()).lower()
            if function not in MAINTAINED_AGGREGATES:
                return f"aggregate function {function.upper()}"
            if expression.filter().isDefined():
                return "an aggregate function with FILTER (WHERE ...)"
        below = expression.children()
        pending.extend(below.apply(index) for index in range(below.size()))
    return ""
