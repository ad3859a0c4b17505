"""Window functions: which ones the delta rule maintains, and when their values are exact.

``delta/window.py`` recomputes the partitions a change touches, as they were and as they are,
and subtracts the old rows from the stored ones: ``W(X_old ⋉ P)`` must reproduce exactly the
rows stored for those partitions. A function whose value in a row depends only on the
partition's multiset of rows does:

- ``RANK``, ``DENSE_RANK``, ``PERCENT_RANK``, ``CUME_DIST``: tied rows (peers) get the same
  value;
- ``COUNT``, ``SUM``, ``AVG``, ``MIN``, ``MAX`` over a ``RANGE`` frame (the default with
  ``ORDER BY``: peers are in each other's frame), over no ``ORDER BY``, or over the whole
  partition (``ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING``). ``SUM`` and ``AVG``
  of floating-point values are refused by the rule (the sum depends on the order of its
  additions), as the aggregate rules do.

The others are *tie-sensitive*: ``ROW_NUMBER``, ``NTILE``, ``LAG``, ``LEAD``, ``FIRST_VALUE``,
``LAST_VALUE``, ``NTH_VALUE`` and any aggregate over a bounded ``ROWS`` frame give tied rows
values that depend on the order Spark happens to read them in. They are exact when tied rows
are indistinguishable in the view: when the call's PARTITION BY and ORDER BY, as plain
columns, cover every column of the window's input that reaches the view
(``ir.passed_columns``: its rows and the conditions above it), two tied rows are equal in every
column that matters, so any tie-breaking gives the same multiset of view rows. Otherwise the
view is not maintainable (``tie_sensitive_construct``), and the reason names the function
and the fix. (The rule also refuses covering columns whose equal values can differ: floating
point, ``-0.0 = 0.0``, and strings under a collation that is not binary.)
"""

from __future__ import annotations

from sqlglot import exp

from sparkmv.analyze.ir import (
    AGGREGATE_FUNCTIONS,
    Node,
    Project,
    Scan,
    Window,
    passed_columns,
    walk,
)

TIE_FREE_RANKINGS: tuple[type[exp.Expr], ...] = (
    exp.Rank,
    exp.DenseRank,
    exp.PercentRank,
    exp.CumeDist,
)
TIE_SENSITIVE_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    exp.RowNumber,
    exp.Ntile,
    exp.Lag,
    exp.Lead,
    exp.FirstValue,
    exp.LastValue,
    exp.NthValue,
)
AGGREGATES: tuple[type[exp.Expr], ...] = tuple(AGGREGATE_FUNCTIONS)
SUMMING: tuple[type[exp.Expr], ...] = (exp.Sum, exp.Avg)
"""Aggregates whose window value is a sum: refused over floating-point arguments."""


def function_of(call: exp.Window) -> exp.Expr:
    """The function of a window call, without ``IGNORE NULLS`` / ``RESPECT NULLS``."""
    function: exp.Expr = call.this
    while isinstance(function, (exp.IgnoreNulls, exp.RespectNulls)):
        function = function.this
    return function


def function_name(call: exp.Window) -> str:
    """The function's SQL name, for messages (``ROW_NUMBER``, ``SUM``)."""
    return function_of(call).sql(dialect="spark").partition("(")[0].upper()


def unsupported_window_call(call: exp.Window) -> str:
    """The construct of ``call`` the rule does not maintain ("" when it does)."""
    function = function_of(call)
    if not isinstance(function, (*TIE_FREE_RANKINGS, *TIE_SENSITIVE_FUNCTIONS, *AGGREGATES)):
        return f"window function {function_name(call)}"
    if isinstance(function, AGGREGATES) and isinstance(function.this, exp.Distinct):
        return f"window function {function_name(call)}(DISTINCT ...)"
    if call.args.get("alias") or call.args.get("first"):
        return "a named window"
    return ""


def tie_sensitive(call: exp.Window) -> bool:
    """Whether tied rows can get different values of ``call`` (the module's docstring)."""
    function = function_of(call)
    if isinstance(function, TIE_SENSITIVE_FUNCTIONS):
        return True
    if isinstance(function, AGGREGATES):
        return _bounded_rows_frame(call)
    return False


def _bounded_rows_frame(call: exp.Window) -> bool:
    """A ``ROWS`` frame other than the whole partition."""
    spec = call.args.get("spec")
    if not isinstance(spec, exp.WindowSpec) or str(spec.args.get("kind", "")).upper() != "ROWS":
        return False
    start = (str(spec.args.get("start", "")), str(spec.args.get("start_side", "")))
    end = (str(spec.args.get("end", "")), str(spec.args.get("end_side", "")))
    whole = ("UNBOUNDED", "PRECEDING"), ("UNBOUNDED", "FOLLOWING")
    return (tuple(p.upper() for p in start), tuple(p.upper() for p in end)) != whole


def ordering_columns(call: exp.Window) -> list[str]:
    """The plain columns (internal names) of ``call``'s PARTITION BY and ORDER BY: what ties
    rows for it."""
    order = call.args.get("order")
    keys = [*(call.args.get("partition_by") or []), *(order.expressions if order else [])]
    keys = [key.this if isinstance(key, exp.Ordered) else key for key in keys]
    return [key.name for key in keys if isinstance(key, exp.Column)]


def tie_sensitive_construct(root: Node) -> str:
    """A reason why a window of ``root`` is not exact (a tie-sensitive call over an order
    that ties rows differing in columns that reach the view), "" when every one is."""
    names = _source_names(root)
    for node in walk(root):
        if not isinstance(node, Window):
            continue
        # what the nodes below read (a WHERE's column) does not tell tied rows apart
        below = frozenset(id(n) for n in walk(node.child))
        reaching = passed_columns(root, below) & set(node.child.outputs)
        for call in node.calls:
            loose = sorted(reaching - set(ordering_columns(call)))
            if tie_sensitive(call) and loose:
                columns = ", ".join(names.get(c, "a computed column") for c in loose)
                return (
                    f"the query uses {function_name(call)} over an order that can tie rows"
                    f" differing in columns the view reads ({columns}), so its values depend"
                    " on how Spark breaks the ties; order by columns that make the order"
                    " total (PARTITION BY and ORDER BY together covering every column of"
                    " the window's input the view reads), or use RANK / DENSE_RANK"
                )
    return ""


def _source_names(root: Node) -> dict[str, str]:
    """Internal names of scanned columns → ``alias.column``, for messages (through the plain
    columns of projections: a derived table's select list)."""
    names = {
        output: f"{scan.alias}.{column}"
        for scan in walk(root)
        if isinstance(scan, Scan)
        for column, output in zip(scan.columns, scan.outputs, strict=True)
    }
    projections = [node for node in walk(root) if isinstance(node, Project)]
    for _ in projections:  # a chain of k projections needs k passes
        for node in projections:
            for expression, output in zip(node.expressions, node.outputs, strict=True):
                if isinstance(expression, exp.Column) and expression.name in names:
                    names.setdefault(output, names[expression.name])
    return names
