"""Window functions ``W_{K; f_1 … f_m}(X)`` over Z-sets: recompute the partitions a change
touches (``ir.Window``; which functions, and when they are exact: ``analyze/windows``).

value:  ``W(X_v)``: Spark's window over the bag the Z-set ``X_v`` stands for (a row of weight
        ``n`` is ``n`` copies: ``zset.as_bag``), every result row of weight 1. As of OLD,
        ``X_old = X_new − ΔX`` is consolidated first, so that a retracted row cancels its
        twin before the window sees either.

delta:  a window function's value in a row depends only on the rows of its partition. With
        ``P = δ(π_K ΔX)`` the partitions (values of the shared partition keys ``K``) the
        change touches,

            ``ΔW(X) = W(X_new ⋉ P) − W(X_old ⋉ P)``

        (Blakeley's recomputation of the affected groups, as ``delta/aggregate`` recomputes
        the MIN/MAX groups whose extreme was deleted): the rows of an untouched partition
        are the same in ``W(X_new)`` and ``W(X_old)`` and cancel, so they are never read. The
        semi-join is null-safe (``<=>``: NULL keys make a partition), and Spark pushes it
        into the reads of ``X``. Without PARTITION BY (``K`` empty) every change touches the
        one partition: ``ΔW(X) = W(X_new) − W(X_old)``, the whole window recomputed.

The subtraction is exact only if ``W(X_old ⋉ P)`` reproduces the stored rows of those
partitions exactly: tie-sensitive functions are admitted only over orders that tie
indistinguishable rows (``analyze/windows``), and ``evaluate`` refuses what types reveal:
``SUM``/``AVG`` of floating-point values (their sums depend on the order of additions, as
in ``delta/aggregate``) and tie-sensitive calls ordered by values that compare equal while
differing (floating point's ``-0.0 = 0.0``, strings under a collation other than binary).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.ir import NotMaintainableError, Window
from sparkmv.analyze.windows import (
    SUMMING,
    function_name,
    function_of,
    ordering_columns,
    tie_sensitive,
)
from sparkmv.delta.aggregate import SUMMABLE_TYPES
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, consolidated_from
from sparkmv.identifiers import quote_identifier as _q

COPY_COLUMN = "__sparkmv_copy"
"""The exploded copy of a row (``_bag_sql``); dropped right away."""


def partition_key(index: int) -> str:
    """A touched partition's ``index``-th key, in ``P``."""
    return f"__sparkmv_window_key{index}"


def evaluate(node: Window, version: Version, engine: DeltaEngine) -> Relation:
    child = engine.value(node.child, version)
    _check_types(node, child.frame)
    return engine.query(_windowed_sql(node, child, positive=version is Version.NEW, sign=1))


def delta(node: Window, engine: DeltaEngine) -> Relation:
    touched = _touched_partitions(node, engine)
    terms = []
    for version, sign in ((Version.NEW, 1), (Version.OLD, -1)):
        rows = engine.value(node.child, version)
        if touched is not None:
            rows = engine.query(_restricted_sql(node, rows, touched))
        terms.append(_windowed_sql(node, rows, positive=version is Version.NEW, sign=sign))
    return engine.query(" UNION ALL ".join(f"({term})" for term in terms))


def _touched_partitions(node: Window, engine: DeltaEngine) -> Relation | None:
    """``P = δ(π_K ΔX)``, computed once (both terms read it; it is small); None without
    shared partition keys."""
    if not node.partition:
        return None
    keys = ", ".join(
        f"{sql_expression(key)} AS {_q(partition_key(i))}" for i, key in enumerate(node.partition)
    )
    change = engine.change(node.child)
    return engine.materialized(engine.query(f"SELECT DISTINCT {keys} FROM {change.subquery('d')}"))


def _restricted_sql(node: Window, rows: Relation, touched: Relation) -> str:
    """``rows ⋉ P``: the rows of ``rows`` in a touched partition (NULL-safe)."""
    same = " AND ".join(
        f"({sql_expression(key)}) <=> {_q('p')}.{_q(partition_key(i))}"
        for i, key in enumerate(node.partition)
    )
    return f"SELECT * FROM {rows.subquery('x')} LEFT SEMI JOIN {touched.subquery('p')} ON {same}"


def _windowed_sql(node: Window, rows: Relation, *, positive: bool, sign: int) -> str:
    """``W(rows)`` with every row of weight ``sign``. ``positive``: every weight of ``rows``
    is positive (a value over the tables as they are now), so it needs no consolidation."""
    columns = list(node.child.outputs)
    source = rows.subquery("r")
    if not positive:
        source = f"({consolidated_from(source, columns)}) AS {_q('c')}"
    calls = ", ".join(
        f"{sql_expression(call)} AS {_q(output)}"
        for call, output in zip(node.calls, node.call_outputs, strict=True)
    )
    passed = "".join(f"{_q(c)}, " for c in columns)
    return (
        f"SELECT {passed}{calls}, CAST({sign} AS BIGINT) AS {WEIGHT_SQL}"
        f" FROM ({_bag_sql(source, columns)}) AS {_q('b')}"
    )


def _bag_sql(source: str, columns: list[str]) -> str:
    """The Z-set ``source`` (a FROM item, positive weights) as a bag: each row ``weight``
    times (``zset.as_bag`` in SQL), without the weight."""
    names = ", ".join(_q(c) for c in columns)
    copies = f"explode(array_repeat(TRUE, CAST({WEIGHT_SQL} AS INT)))"
    return f"SELECT {names} FROM {source} LATERAL VIEW {copies} {_q('e')} AS {_q(COPY_COLUMN)}"


def _check_types(node: Window, child: DataFrame) -> None:
    """Refuse what the types of ``node``'s input show to be inexact (the module's
    docstring); analysis only, no job, and none at all without SUM/AVG or a tie-sensitive
    call."""
    summed = [call for call in node.calls if isinstance(function_of(call), SUMMING)]
    ordered = [call for call in node.calls if tie_sensitive(call)]
    if not summed and not ordered:
        return
    probes = [function_of(call).this for call in summed]
    probes += [exp.column(name, quoted=True) for call in ordered for name in ordering_columns(call)]
    if not probes:
        return
    fields = child.selectExpr(*(sql_expression(probe) for probe in probes)).schema.fields
    for call, field in zip(summed, fields, strict=False):
        if not isinstance(field.dataType, SUMMABLE_TYPES):
            raise NotMaintainableError(
                f"{function_name(call)} over {field.dataType.simpleString()} in a window"
                " (only integral and decimal sums are maintained exactly)"
            )
    for field in fields[len(summed) :]:
        if _equal_while_different(field.dataType):
            raise NotMaintainableError(
                f"a tie-sensitive window function ordered by a {field.dataType.simpleString()}"
                " column (equal values can differ: -0.0 and 0.0, or strings under a"
                " collation), so tied rows can differ"
            )


def _equal_while_different(data_type: T.DataType) -> bool:
    """Whether two values of ``data_type`` can compare equal (tie) and still differ."""
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return True
    if isinstance(data_type, T.StringType):
        return getattr(data_type, "collation", "UTF8_BINARY") != "UTF8_BINARY"
    return False


def describe(node: Window, version: Version | None, engine: DeltaEngine) -> str:
    calls = ", ".join(function_name(call).lower() for call in node.calls)
    if version is not None:
        return f"W[{calls}]({engine.describe(node.child, version)})"
    new = engine.describe(node.child, Version.NEW)
    old = engine.describe(node.child, Version.OLD)
    if not node.partition:
        return f"W[{calls}]({new}) − W[{calls}]({old}) (no PARTITION BY: the whole window)"
    touched = f"P({engine.describe(node.child, None)})"
    return f"W[{calls}]({new} ⋉ {touched}) − W[{calls}]({old} ⋉ {touched})"


RULE = DeltaRule(Window, evaluate, delta, describe)
