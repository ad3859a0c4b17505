"""Constructs outside incremental maintenance, found in the sqlglot tree (docs/sql-reference.md).

Each check returns the construct's name ("" when there is none) so that the refusal can
say exactly what stands in the way.
"""

from __future__ import annotations

from sqlglot import exp

UNSUPPORTED_CLAUSES = {
    "limit": "LIMIT / OFFSET",
    "offset": "LIMIT / OFFSET",
    "qualify": "QUALIFY",
    "windows": "WINDOW",
    "laterals": "LATERAL VIEW",
    "pivots": "PIVOT",
    "connect": "CONNECT BY",
    "sample": "TABLESAMPLE",
    "into": "SELECT INTO",
}

TIME_DEPENDENT = (
    exp.CurrentDate,
    exp.CurrentDatetime,
    exp.CurrentTime,
    exp.CurrentTimestamp,
    exp.CurrentTimestampLTZ,
    exp.CurrentUser,
)
NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.Randstr, exp.Uuid)
NONDETERMINISTIC_NAMES = frozenset(
    {
        "now",
        "localtimestamp",
        "curdate",
        "random",
        "uniform",
        "shuffle",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
        "session_user",
        "user",
    }
)
GENERATORS = (
    exp.Explode,
    exp.ExplodeOuter,
    exp.Posexplode,
    exp.PosexplodeOuter,
    exp.Inline,
    exp.Stack,
    exp.UDTF,
)


def unsupported_select_clause(select: exp.Select) -> str:
    """The first clause of ``select`` that incremental maintenance does not cover."""
    for arg, construct in UNSUPPORTED_CLAUSES.items():
        if select.args.get(arg):
            return construct
    return ""


def find_unsupported_expression(expression: exp.Expr) -> str:
    """The first construct inside a scalar expression that maintenance does not cover."""
    for node in expression.walk():
        construct = _construct(node)
        if construct:
            return construct
    return ""


def find_expression_subquery(tree: exp.Expr) -> str:
    """The construct "subquery in an expression" when ``tree`` has one (scalar, ``IN`` or
    ``EXISTS``), found without resolving names: sqlglot's resolution fails on some correlated
    ones."""
    for node in tree.find_all(exp.Subquery, exp.Exists):
        in_expression = node.parent is not None and not isinstance(node.parent, QUERY_POSITIONS)
        if isinstance(node, exp.Exists) or in_expression:
            return _construct(node)
    return ""


QUERY_POSITIONS = (exp.From, exp.Join, exp.SetOperation, exp.CTE, exp.Subquery, exp.Lateral)
"""Where a parenthesized query is a relation, not a value."""


def volatile_construct(tree: exp.Expr) -> str:
    """A function in ``tree`` whose value can change while the base tables do not (time,
    randomness, the session): "" when the query's result depends on its tables alone."""
    for node in tree.walk():
        if isinstance(node, (*TIME_DEPENDENT, *NONDETERMINISTIC)) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in NONDETERMINISTIC_NAMES
        ):
            return _construct(node)
    return ""


def _construct(node: exp.Expr) -> str:
    if isinstance(node, exp.Window):
        return "window function"
    if isinstance(node, exp.AggFunc):
        return f"aggregate function {_name(node)}"
    if isinstance(node, (exp.Subquery, exp.Exists, exp.Select)):
        return "subquery in an expression"
    if isinstance(node, GENERATORS):
        return f"generator function {_name(node)}"
    if isinstance(node, TIME_DEPENDENT):
        return f"non-deterministic function {_name(node)} (its value depends on when it runs)"
    if isinstance(node, NONDETERMINISTIC) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in NONDETERMINISTIC_NAMES
    ):
        return f"non-deterministic function {_name(node)}"
    return ""


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    if isinstance(node, exp.Func):
        return node.sql_name()
    return type(node).__name__.upper()
