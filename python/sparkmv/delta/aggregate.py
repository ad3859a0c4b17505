"""Aggregation ``γ_{K; f_1 … f_m}(R)`` over Z-sets: group state, its change, and the rule.

Each group of ``R`` by the keys ``K`` has a *state* from which every aggregate's value
follows (Hanson §3.6; Blakeley §5.2's counters; the lecture notes' ``SUM … GROUP BY``):

- ``mv_count = Σ w``: the group's ``COUNT(*)``; a group exists while it is positive;
- ``COUNT(x)``: ``mv_n_i = Σ w·[x IS NOT NULL]``;
- ``SUM(x)``, ``AVG(x)``: ``mv_n_i`` and ``mv_s_i = Σ w·x`` (``SUM`` is NULL while
  ``mv_n_i = 0``; ``AVG = mv_s_i / mv_n_i`` with Spark's result type, a decimal one rounded
  once as Spark's ``Average`` rounds it, ``decimal_average_sql``);
- ``MIN(x)``, ``MAX(x)``: ``mv_x_i``, the extreme over the rows present;
- ``COUNT(DISTINCT x)``, ``SUM(DISTINCT x)``, ``AVG(DISTINCT x)``: ``mv_n_i``, the number of
  distinct non-null values, and ``mv_s_i``, their sum; beside the group, a *value counter*
  per distinct non-null value ``v`` of ``x``, ``c(v) = Σ w·[x = v]`` (Blakeley §5.1's
  multiplicity counter, one level down).

Counters and sums are *distributive*: ``state(R + ΔR) = state(R) + state(ΔR)`` (Hanson
§3.6's insert/delete update functions as one signed sum), so they are self-maintainable.
So are the value counters, and a distinct value enters or leaves the group exactly when its
counter crosses zero: with ``t(v) = [c_new(v) > 0] − [c_old(v) > 0]``,
``Δmv_n_i = Σ_v t(v)`` and ``Δmv_s_i = Σ_v v·t(v)``.
An extreme absorbs insertions (``least(old, min ΔR⁺)``) but a deletion of a value at or
beyond the old extreme leaves it unknown: only such groups are recomputed from the base
tables.

``SUM``/``AVG`` (``DISTINCT`` or not) are maintained for integral and decimal arguments only:
a floating-point sum depends on the order of its additions, so no incremental sum can equal a
fresh one.

Inside a query (an aggregate below a join, a UNION or a DISTINCT) the rule's change is the
changed groups' new rows minus their old rows, each group recomputed from ``R_new`` and
``R_old`` restricted to the keys in ``ΔR``:
``Δγ(R) = γ(R_new ⋉ K(ΔR)) − γ(R_old ⋉ K(ΔR))``. At the top of a view the storage keeps the
state instead (``plan/aggregate_view.py``), so unchanged groups are never read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv import frames
from sparkmv.analyze.relational import Aggregate, AggregateCall, NotMaintainableError
from sparkmv.config import ansi_mode
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, consolidated_from
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import quote_identifier as _q
from sparkmv.identifiers import sql_string
from sparkmv.storage.stored_columns import COUNT_COLUMN, GROUP_KEY_PREFIX
from sparkmv.zset import WEIGHT

SUMMABLE_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)
MAX_SUMMED_PRECISION = 27
"""``w·x`` of a DECIMAL(p, s) is exact while p + 11 ≤ 38 (``w`` as DECIMAL(10, 0)); beyond,
Spark keeps the scale of the product only while s ≤ ``MAX_WIDE_SUMMED_SCALE`` (it trims the
scale to no less than 6), and the product, like the sum, can then only overflow: with ANSI
mode an error, as for the query; without it a NULL, so such sums are kept only in ANSI mode."""
MAX_WIDE_SUMMED_SCALE = 6


def key_column(index: int) -> str:
    return f"{GROUP_KEY_PREFIX}{index}"


def count_column(index: int) -> str:
    return f"mv_n{index}"


def sum_column(index: int) -> str:
    return f"mv_s{index}"


def extreme_column(index: int) -> str:
    """MIN/MAX: the extreme."""
    return f"mv_x{index}"


def removed_extreme_column(index: int) -> str:
    """In a change only: the extreme among the deleted values (MIN/MAX)."""
    return f"mv_r{index}"


def value_column(index: int) -> str:
    """A value counter's value of the ``index``-th distinct argument (``distinct_arguments``)."""
    return f"mv_v{index}"


VALUE_COUNT_COLUMN = "mv_vn"
"""A value counter's count: ``Σ w`` of its group's rows with that value."""
DISTINCT_ARGUMENT_COLUMN = "mv_distinct"
"""0 on a group's row; ``j + 1`` on a value counter of the group's ``j``-th distinct argument."""


def counts_values(call: AggregateCall) -> bool:
    """Whether the call is maintained from value counters (a DISTINCT one whose value
    depends on the set of values; MIN/MAX(DISTINCT x) is MIN/MAX(x))."""
    return call.distinct and call.function not in ("min", "max")


def distinct_arguments(node: Aggregate) -> list[exp.Expr]:
    """The arguments of the calls that count values, each once (``COUNT(DISTINCT x)`` and
    ``SUM(DISTINCT x)`` share ``x``'s counters)."""
    found: dict[str, exp.Expr] = {}
    for call in node.calls:
        if counts_values(call) and call.argument is not None:
            found.setdefault(call.argument.sql(), call.argument)
    return list(found.values())


def distinct_argument_of(node: Aggregate, call: AggregateCall) -> int:
    assert call.argument is not None
    texts = [argument.sql() for argument in distinct_arguments(node)]
    return texts.index(call.argument.sql())


def counter_columns(node: Aggregate) -> list[str]:
    """The value counters' columns, after the keys (none without DISTINCT aggregates)."""
    arguments = distinct_arguments(node)
    if not arguments:
        return []
    values = [value_column(j) for j in range(len(arguments))]
    return [DISTINCT_ARGUMENT_COLUMN, *values, VALUE_COUNT_COLUMN]


def state_columns(node: Aggregate, *, change: bool = False) -> list[str]:
    """The state of a group, after its keys: ``mv_count`` then each call's columns (in a
    ``change``, each extreme followed by the deleted extreme)."""
    columns = [COUNT_COLUMN]
    for index, call in enumerate(node.calls):
        if call.function in ("min", "max"):
            columns.append(extreme_column(index))
            if change:
                columns.append(removed_extreme_column(index))
        elif call.argument is not None:
            columns.append(count_column(index))
            if call.function in ("sum", "avg"):
                columns.append(sum_column(index))
    return columns


def key_columns(node: Aggregate) -> list[str]:
    return [key_column(index) for index in range(len(node.keys))]


@dataclass(frozen=True)
class ResultTypes:
    """Spark's result type of each call of an aggregate, and of each kept sum."""

    calls: tuple[T.DataType, ...]
    sums: tuple[T.DataType | None, ...]
    values: tuple[T.DataType, ...]  # of each distinct argument (``distinct_arguments``)


def result_types(node: Aggregate, child: DataFrame) -> ResultTypes:
    """Spark's types of ``node``'s calls over ``child`` (its input's Z-set); analysis only,
    no job. Raises ``NotMaintainableError`` for a sum that could not be kept exact.

    One probe, analyzed once: a struct of the calls, of each ``SUM``/``AVG`` argument and its
    ``SUM``, and of each distinct argument (``first(x)`` has ``x``'s type)."""
    probe = child.agg(F.expr(_types_probe(node))).schema.fields[0].dataType
    ansi = ansi_mode(child.sparkSession) == "true"
    return _types_found(node, probe, ansi)


def result_types_in(node: Aggregate, engine: DeltaEngine) -> ResultTypes:
    """``result_types`` over ``node``'s input in ``engine``, probed once per engine (the
    types are those of every version and of the change) by one SQL query over the input as
    it is now."""
    key = ("result types", id(node))
    found = engine.derived.get(key)
    if not isinstance(found, ResultTypes):
        spark = engine.views.spark
        child = engine.value(node.child, Version.NEW).subquery("t")
        probe = frames.schema(frames.sql(spark, f"SELECT {_types_probe(node)} FROM {child}"))
        ansi = ansi_mode(spark) == "true"
        found = _types_found(node, probe.fields[0].dataType, ansi)
        engine.derived[key] = found
    return found


def _summed(node: Aggregate) -> list[int]:
    """The calls that keep a sum (their indexes)."""
    return [i for i, c in enumerate(node.calls) if c.argument is not None and _sums(c)]


def _types_probe(node: Aggregate) -> str:
    """The probe of ``result_types``: one ``named_struct`` over ``node``'s input (SQL)."""
    probes = [call.sql() for call in node.calls]
    for index in _summed(node):
        argument = node.calls[index].argument
        assert argument is not None
        probes += [f"first({sql_expression(argument)})", f"sum({sql_expression(argument)})"]
    probes += [f"first({sql_expression(a)})" for a in distinct_arguments(node)]
    fields = ", ".join(f"'p{i}', {probe}" for i, probe in enumerate(probes))
    return f"named_struct({fields})"


def _types_found(node: Aggregate, probe: T.DataType, ansi: bool) -> ResultTypes:
    """``ResultTypes`` from the type of ``_types_probe``."""
    assert isinstance(probe, T.StructType)
    found = [field.dataType for field in probe.fields]
    calls, found = found[: len(node.calls)], found[len(node.calls) :]
    sums: list[T.DataType | None] = [None] * len(node.calls)
    for index in _summed(node):
        _check_summable(node.calls[index], found[0], ansi)
        sums[index], found = found[1], found[2:]
    return ResultTypes(tuple(calls), tuple(sums), tuple(found))


def _sums(call: AggregateCall) -> bool:
    """Whether the call keeps a sum (``SUM`` and ``AVG``)."""
    return call.function in ("sum", "avg")


def _check_summable(call: AggregateCall, argument: T.DataType, ansi: bool) -> None:
    if not isinstance(argument, SUMMABLE_TYPES):
        raise NotMaintainableError(
            f"{call.function.upper()} over {argument.simpleString()} (only integral and"
            " decimal sums are maintained exactly)"
        )
    if (
        isinstance(argument, T.DecimalType)
        and argument.precision > MAX_SUMMED_PRECISION
        and (argument.scale > MAX_WIDE_SUMMED_SCALE or not ansi)
    ):
        raise NotMaintainableError(
            f"{call.function.upper()} over {argument.simpleString()} (decimal sums are"
            f" maintained up to precision {MAX_SUMMED_PRECISION}, or with a scale up to"
            f" {MAX_WIDE_SUMMED_SCALE} in ANSI mode)"
        )


def signed_sql(argument: str, weight: str, sum_type: T.DataType) -> str:
    """``w·x`` exactly, in ``x``'s sum type (Spark SQL over SQL operands)."""
    if isinstance(sum_type, T.DecimalType):
        return f"CAST(({argument}) * CAST({weight} AS DECIMAL(10,0)) AS {sum_type.simpleString()})"
    return f"CAST(({argument}) AS BIGINT) * {weight}"


def _present_distinct(function: str, argument: exp.Expr) -> str:
    """``function(DISTINCT x)`` over the rows present (weight > 0), by Spark's own function."""
    present = exp.GT(this=exp.column(WEIGHT, quoted=True), expression=exp.Literal.number(0))
    guarded = exp.Case(ifs=[exp.If(this=present, true=argument.copy())])
    return AggregateCall(function, guarded, distinct=True).sql()


def _keys_sql(node: Aggregate) -> list[str]:
    """The group keys, as Spark SQL over ``node``'s input."""
    return [f"({sql_expression(key)})" for key in node.keys]


_INT_MAX = (1 << 31) - 1


def _grouping_sql(expression: exp.Expr) -> str:
    """``expression`` as a GROUP BY item. Spark reads an INT literal there (the argument of
    ``AVG(DISTINCT 0)``) as a position in the select list (``spark.sql.groupByOrdinal``), but
    not the literal cast to INT, its own type."""
    node = expression
    while isinstance(node, exp.Paren):
        node = node.this
    literal = node.this if isinstance(node, exp.Neg) else node
    text = f"({sql_expression(expression)})"
    digits = str(literal.this) if isinstance(literal, exp.Literal) and not literal.is_string else ""
    if digits.isdigit() and int(digits) <= _INT_MAX + isinstance(node, exp.Neg):
        return f"CAST({text} AS INT)"
    return text


def _state_aggregates(node: Aggregate, types: ResultTypes, change: bool) -> list[str]:
    """``state_columns`` as aggregate expressions over ``node``'s input Z-set (SQL items)."""
    weight = WEIGHT_SQL
    aggregates = [f"CAST(coalesce(sum({weight}), 0) AS BIGINT) AS {_q(COUNT_COLUMN)}"]
    for index, call in enumerate(node.calls):
        if call.argument is None:
            continue
        argument = f"({sql_expression(call.argument)})"
        sum_type = types.sums[index]
        if call.function in ("min", "max"):
            pick = call.function
            present = f"{pick}(CASE WHEN {weight} > 0 THEN {argument} END)"
            aggregates.append(f"{present} AS {_q(extreme_column(index))}")
            if change:
                removed = f"{pick}(CASE WHEN {weight} < 0 THEN {argument} END)"
                aggregates.append(f"{removed} AS {_q(removed_extreme_column(index))}")
        elif counts_values(call):
            count = "NULL" if change else _present_distinct("count", call.argument)
            aggregates.append(f"CAST({count} AS BIGINT) AS {_q(count_column(index))}")
            if sum_type is not None:
                total = "NULL" if change else _present_distinct("sum", call.argument)
                aggregates.append(
                    f"CAST({total} AS {sum_type.simpleString()}) AS {_q(sum_column(index))}"
                )
        else:
            counted = f"coalesce(sum(CASE WHEN {argument} IS NOT NULL THEN {weight} ELSE 0 END), 0)"
            aggregates.append(f"CAST({counted} AS BIGINT) AS {_q(count_column(index))}")
            if sum_type is not None:
                summed = f"sum({signed_sql(argument, weight, sum_type)})"
                aggregates.append(
                    f"CAST({summed} AS {sum_type.simpleString()}) AS {_q(sum_column(index))}"
                )
    return aggregates


def _needs_rows(node: Aggregate, change: bool) -> bool:
    """Whether the state reads the rows present (not only sums of weights)."""
    return any(
        c.function in ("min", "max") or (counts_values(c) and not change) for c in node.calls
    )


def group_state_sql(
    node: Aggregate, source: str, types: ResultTypes, *, positive: bool, change: bool = False
) -> str:
    """The state of each group of ``source`` (a FROM item: ``node``'s input as a Z-set, its
    columns ``node.child.outputs`` and the weight), as a Spark SQL query: keys, then
    ``state_columns``. ``positive``: every weight is positive (an evaluation of the tables
    as they are now), so the rows present need no consolidation. ``change``: ``source`` is a
    change, and the state gets the deleted extremes (``removed_extreme_column``) too; the
    distinct counts and sums are then NULL (they follow from the value counters,
    ``value_counters_sql``, and those of the stored state)."""
    if not positive and _needs_rows(node, change):
        source = f"({consolidated_from(source, list(node.child.outputs))}) AS {_q('__rows')}"
    keys = _keys_sql(node)
    selected = [f"{k} AS {_q(key_column(i))}" for i, k in enumerate(keys)]
    selected += _state_aggregates(node, types, change)
    grouped = f" GROUP BY {', '.join(_grouping_sql(k) for k in node.keys)}" if keys else ""
    return f"SELECT {', '.join(selected)} FROM {source}{grouped}"


def value_counters_sql(node: Aggregate, source: str, *, change: bool = False) -> str:
    """The value counters of the groups of ``source`` (a FROM item: ``node``'s input as a
    Z-set), as Spark SQL: keys, then ``counter_columns`` — per distinct argument ``x_j`` and
    non-null value ``v``, ``c(v) = Σ w`` over the group's rows with ``x_j = v`` (a
    ``change``'s counters that sum to zero are left out). A value column of another argument
    is an untyped NULL: the union of the arguments' rows types it."""
    distinct = distinct_arguments(node)
    arguments = [f"({sql_expression(a)})" for a in distinct]
    keys = _keys_sql(node)
    grouped = [_grouping_sql(k) for k in node.keys]
    branches = []
    for j, value in enumerate(arguments):
        selected = [f"{k} AS {_q(key_column(i))}" for i, k in enumerate(keys)]
        selected.append(f"{j + 1} AS {_q(DISTINCT_ARGUMENT_COLUMN)}")
        selected += [
            f"{value if i == j else 'NULL'} AS {_q(value_column(i))}" for i in range(len(arguments))
        ]
        selected.append(f"CAST(sum({WEIGHT_SQL}) AS BIGINT) AS {_q(VALUE_COUNT_COLUMN)}")
        having = f" HAVING sum({WEIGHT_SQL}) <> 0" if change else ""
        branches.append(
            f"SELECT {', '.join(selected)} FROM {source} WHERE {value} IS NOT NULL"
            f" GROUP BY {', '.join([*grouped, _grouping_sql(distinct[j])])}{having}"
        )
    return " UNION ALL ".join(f"({branch})" for branch in branches)


def call_values_sql(node: Aggregate, types: ResultTypes) -> list[str]:
    """Each call's value from a group's state columns, named by the call's output (SQL
    items). A count's and an extreme's state column has the call's type already."""
    values = []
    for index, (call, output) in enumerate(zip(node.calls, node.call_outputs, strict=True)):
        if call.argument is None:
            value = _q(COUNT_COLUMN)
        elif call.function in ("min", "max"):
            value = _q(extreme_column(index))
        elif call.function == "count":
            value = _q(count_column(index))
        else:
            value = (
                f"CAST({_sum_or_avg(call, index, types)} AS {types.calls[index].simpleString()})"
            )
        values.append(f"{value} AS {_q(output)}")
    return values


def _sum_or_avg(call: AggregateCall, index: int, types: ResultTypes) -> str:
    """``SUM = s`` and ``AVG = s / n`` (Spark's ``Average``: a decimal sum divided by the count
    as ``decimal_average_sql`` does, else both as DOUBLE), NULL while no value is counted."""
    n, s = _q(count_column(index)), _q(sum_column(index))
    sum_type, result = types.sums[index], types.calls[index]
    if call.function == "sum":
        value = s
    elif isinstance(sum_type, T.DecimalType) and isinstance(result, T.DecimalType):
        value = decimal_average_sql(s, n, sum_type, result)
    else:
        value = f"CAST({s} AS DOUBLE) / CAST({n} AS DOUBLE)"
    return f"CASE WHEN {n} > 0 THEN {value} END"


def decimal_average_sql(s: str, n: str, sum_type: T.DecimalType, result: T.DecimalType) -> str:
    """Spark's ``Average`` of a decimal sum ``s`` (``sum_type``) over a count ``n`` (SQL
    operands), with the value Spark gives it: the quotient rounded to the ``MathContext`` of
    Spark's ``Decimal`` division, then half up to ``result``'s scale ``r``, once.

    A plain ``s / CAST(n AS DECIMAL(20, 0))`` rounds half up to the scale Spark's
    ``DecimalPrecision`` gives that division, ``max(38 − (p_s − s_s), 6)`` when its exact
    precision passes 38 (always, here), which is not ``r``: below it (``p_s − s_s > 38 − r``,
    a sum of DECIMAL(p > 24)) digits are lost, above it the value is rounded twice. So the
    sum is first declared ``DECIMAL(38 − r + s_s, s_s)`` (the same value), which makes that
    scale ``r`` when ``r ≥ 6``. A sum with more than ``38 − r`` integral digits does not fit
    that type, and no division of it rounds as Spark does: such a group fails the statement
    with ``MATERIALIZED_VIEW_AVERAGE_OUT_OF_RANGE`` instead of showing another value (a sum of a
    DECIMAL(32, 4) product would need 10^30). Below 6 the division's scale is never ``r``:
    the count is scaled by ``10^k``, ``k = 6 − r`` (the quotient rounded to 6 decimals is
    ``q`` rounded to ``r``, shifted), and the quotient shifted back, exactly."""
    r, k, scale = result.scale, max(6 - result.scale, 0), sum_type.scale
    if k:
        shift = f"CAST({10**k} AS DECIMAL({k + 1}, 0))"
        count = f"CAST(CAST({n} AS DECIMAL(20, 0)) * {shift} AS DECIMAL({20 + k}, 0))"
        return f"(CAST({s} AS DECIMAL(38, {scale})) / {count}) * {shift}"
    integral = 38 - r
    average = f"CAST({s} AS DECIMAL({integral + scale}, {scale})) / CAST({n} AS DECIMAL(20, 0))"
    if sum_type.precision - scale <= integral:
        return average
    bound = f"CAST(1{'0' * integral} AS {sum_type.simpleString()})"
    refused = sql_string(
        str(SparkMvError(ErrorClass.MATERIALIZED_VIEW_AVERAGE_OUT_OF_RANGE, digits=integral))
    )
    return f"CASE WHEN abs({s}) < {bound} THEN {average} ELSE raise_error({refused}) END"


def finalized_sql(node: Aggregate, state: str, types: ResultTypes, weight: int = 1) -> str:
    """``node``'s rows from its groups' state (the FROM item ``state``), each with ``weight``:
    the groups that exist (``COUNT(*) > 0``; a global aggregate's one row always)."""
    keys = [f"{_q(key_column(i))} AS {_q(o)}" for i, o in enumerate(node.key_outputs)]
    selected = [*keys, *call_values_sql(node, types), f"CAST({weight} AS BIGINT) AS {WEIGHT_SQL}"]
    exists = f" WHERE {_q(COUNT_COLUMN)} > 0" if node.keys else ""
    return f"SELECT {', '.join(selected)} FROM {state}{exists}"


def _state(node: Aggregate, source: str, types: ResultTypes, *, positive: bool) -> str:
    """``group_state_sql`` as a FROM item."""
    return f"({group_state_sql(node, source, types, positive=positive)}) AS {_q('s')}"


def evaluate(node: Aggregate, version: Version, engine: DeltaEngine) -> Relation:
    child = engine.value(node.child, version).subquery("r")
    types = result_types_in(node, engine)
    state = _state(node, child, types, positive=version is Version.NEW)
    return engine.query(finalized_sql(node, state, types))


def _restricted(node: Aggregate, zset: Relation, groups: Relation | None) -> str:
    """The rows of ``zset`` in the groups (key columns) of ``groups`` (None: every row), as
    a FROM item."""
    if groups is None:
        return zset.subquery("r")
    same = " AND ".join(
        f"({sql_expression(key)}) <=> {_q('k')}.{_q(key_column(i))}"
        for i, key in enumerate(node.keys)
    )
    rows = f"SELECT * FROM {zset.subquery('r')} LEFT SEMI JOIN {groups.subquery('k')} ON {same}"
    return f"({rows}) AS {_q('g')}"


def delta(node: Aggregate, engine: DeltaEngine) -> Relation:
    """``Δγ(R)``: the changed groups' new rows (weight +1) and old rows (weight −1), each
    term one query over the groups ``K(ΔR)``, computed once (a job) as both terms read them."""
    groups = _changed_groups(node, engine) if node.keys else None
    types = result_types_in(node, engine)
    terms = []
    for version, sign in ((Version.NEW, 1), (Version.OLD, -1)):
        rows = _restricted(node, engine.value(node.child, version), groups)
        state = _state(node, rows, types, positive=version is Version.NEW)
        terms.append(f"({finalized_sql(node, state, types, sign)})")
    return engine.query(" UNION ALL ".join(terms))


def _changed_groups(node: Aggregate, engine: DeltaEngine) -> Relation:
    """``K(ΔR)``: the keys of the groups the change touches, computed now."""
    keys = ", ".join(
        f"({sql_expression(key)}) AS {_q(key_column(i))}" for i, key in enumerate(node.keys)
    )
    found = engine.query(f"SELECT DISTINCT {keys} FROM {engine.change(node.child).subquery('d')}")
    return engine.materialized(found)


def describe(node: Aggregate, version: Version | None, engine: DeltaEngine) -> str:
    calls = ", ".join(call.label() for call in node.calls)
    if version is not None:
        return f"γ[{calls}]({engine.describe(node.child, version)})"
    changed = engine.describe(node.child, None)
    new = engine.describe(node.child, Version.NEW)
    old = engine.describe(node.child, Version.OLD)
    return f"γ[{calls}]({new} ⋉ K({changed})) − γ[{calls}]({old} ⋉ K({changed}))"


RULE = DeltaRule(Aggregate, evaluate, delta, describe)
