"""An aggregate view refreshed by the driver alone: its change read as Arrow, summed into
group state in Python and merged with the stored groups, with no Spark job.

A refresh Spark plans costs the planning of its statements and at least one job, about
0.3–0.5 s even for a one-row change; a write to a table with an ``ON COMMIT`` view pays it on
every statement. For the commonest aggregate view,

    SELECT f(k…, COUNT(*), COUNT(x), SUM(x), AVG(x))… FROM R [WHERE C] GROUP BY k… [HAVING H]

(plain columns as keys; arguments the driver computes as Spark does (``driver_expression``:
columns, constants, ``+ - *`` of numbers), a WHERE it evaluates as Spark does
(``driver_predicate``); no DISTINCT; integral or decimal sums) the whole refresh is
arithmetic on the changed groups (Hanson §3.6, as in ``delta/aggregate.py``). ``R`` may also
be an inner join the driver evaluates (``plan/driver_join.py``), whose change ``ΔR`` the plan
computes, when it can, from the changes and the unchanged tables' files:

    state(R + ΔR) = state(R) + state(σ_C(ΔR))
    state(ΔR)_g   = (Σ w, Σ w·[x IS NOT NULL], Σ w·x)   over ΔR's rows of group g

When each visible column is a key or a call, the driver computes it: ``COUNT`` its counter,
``SUM`` the sum (NULL while the count of values is 0), ``AVG`` of an integral argument
``double(s) / double(n)`` as Spark's ``Average`` computes it. Anything more (a decimal
``AVG``, whose rounding is Spark's division's; a HAVING; a visible expression ``f`` over keys
and calls) Spark computes, from the changed groups' keys and state, with the very SQL of its
own refresh (``AggregateView.with_visible_sql``) over an inline table of literals, which it
folds while planning (no job). A new group goes to the bucket Spark's write would give it
(``buckets.bucket_of``: Spark's ``xxhash64`` of its keys). Python's integers
and decimals are exact; a sum outside its type's range (which Spark would refuse in ANSI mode,
or wrap without it) is left to Spark (``DriverMergeDeclinedError``). Group keys are of
``KEY_TYPES``, which Arrow and Python compare as Spark does.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.relational import AggregateCall, Filter, Node, Project, Scan
from sparkmv.buckets import bucket_of
from sparkmv.delta import aggregate as agg
from sparkmv.parse.statements import quote_identifier as q
from sparkmv.plan.aggregate_view import AggregateView
from sparkmv.plan.driver_expression import (
    EXACT,
    DriverMergeDeclinedError,
    Number,
    Typed,
    decimal_shape,
    fits,
    is_number,
)
from sparkmv.plan.driver_join import KEY_TYPES, DriverJoin, compile_join_input, key_type
from sparkmv.plan.driver_predicate import (
    ColumnarPredicate,
    Predicate,
    columnar_predicate,
    compile_predicate,
    compile_value,
    predicate_columns,
)
from sparkmv.stored_columns import BUCKET_COLUMN, VISIBLE_COLUMN
from sparkmv.zset import WEIGHT

COUNTED_TYPES = (*KEY_TYPES, T.FloatType, T.DoubleType, T.TimestampType, T.TimestampNTZType)
"""Types a ``COUNT(x)`` argument may have here: only whether a value is NULL matters."""

SPARK_VALUED_MAX_GROUPS = 1000
"""At most this many changed groups have their values computed by Spark from an inline table
of their states (``DriverAggregate.merged``), whose SQL text Spark parses: more are left to
Spark's refresh."""


@dataclass(frozen=True)
class DriverCall:
    """One aggregate call of a ``DriverAggregate``: ``function`` over ``argument`` (None:
    ``COUNT(*)``), which reads the base table's ``columns``; ``column`` when the argument is
    just that column; ``sum_type`` of a ``SUM`` or ``AVG``."""

    function: str
    argument: Typed | None
    columns: tuple[str, ...]
    column: str | None
    sum_type: T.DataType | None

    @property
    def spark_valued(self) -> bool:
        """Whether Spark computes the call's value from its state: a decimal division."""
        return self.function == "avg" and isinstance(self.sum_type, T.DecimalType)


@dataclass(frozen=True)
class Condition:
    """A filter below the aggregate as the driver evaluates it (``driver_predicate``): TRUE,
    FALSE or NULL for a row of the base table's ``columns`` it reads (``holds``), or for
    every row of a table at once (``columnar``, when it compiles so)."""

    holds: Predicate
    columns: tuple[str, ...]
    columnar: ColumnarPredicate | None = None


@dataclass(frozen=True)
class DriverAggregate:
    """An aggregate view the driver can refresh (``driver_aggregate``).

    ``table``: its one base table, or None when its input is a join (``join``, whose
    columns the names below are); ``keys``: that table's columns the view groups by;
    ``key_types``: their types; ``calls``; ``shown``: per visible column, ``(True, i)`` for
    key ``i`` or ``(False, j)`` for call ``j`` (None: some visible column computes more, which
    Spark computes, ``spark_valued``); ``view``: the view, whose ``storage()`` names the
    stored columns; ``types``: Spark's types of its calls; ``conditions``: the filters a
    change row must pass (all TRUE) to count."""

    table: str | None
    keys: tuple[str, ...]
    key_types: tuple[T.DataType, ...]
    calls: tuple[DriverCall, ...]
    shown: tuple[tuple[bool, int], ...] | None
    view: AggregateView
    types: agg.ResultTypes
    conditions: tuple[Condition, ...] = ()
    join: DriverJoin | None = None

    @cached_property
    def positions(self) -> tuple[int, ...]:
        """Per call, the index in the state of its counter of values (its sum follows it):
        ``agg.state_columns`` order, ``mv_count`` first; 0 for ``COUNT(*)``, whose value is
        ``mv_count`` itself."""
        found, position = [], 1
        for call in self.calls:
            found.append(0 if call.argument is None else position)
            if call.argument is not None:
                position += 2 if call.sum_type is not None else 1
        return tuple(found)

    @property
    def columns(self) -> list[str]:
        """The base table's columns the change is read for, each once."""
        named = [*self.keys, *(column for call in self.calls for column in call.columns)]
        named += [column for condition in self.conditions for column in condition.columns]
        return list(dict.fromkeys(named))

    @cached_property
    def spark_valued(self) -> bool:
        """Whether Spark computes the visible columns from the groups' state (``merged``):
        a decimal average, a HAVING, or a visible column that is neither a key nor a call."""
        return (
            self.shown is None
            or self.view.having is not None
            or any(call.spark_valued for call in self.calls)
        )

    def passing(self, change: pa.Table) -> tuple[pa.Table, int]:
        """The rows of the Z-set ``change`` (``columns`` and the weight) every condition
        holds for (TRUE), and how many did not pass: ``σ_C(ΔR)``, what the aggregate
        reads."""
        if not self.conditions:
            return change, 0
        if all(condition.columnar is not None for condition in self.conditions):
            mask = pa.scalar(True)
            for condition in self.conditions:
                assert condition.columnar is not None
                mask = pc.and_kleene(mask, condition.columnar(change))
            if isinstance(mask, pa.Scalar):  # no condition reads a column
                mask = pa.array([mask.as_py()] * change.num_rows, pa.bool_())
            kept = change.filter(pc.fill_null(mask, False))
            return kept, change.num_rows - kept.num_rows
        read = {c for condition in self.conditions for c in condition.columns}
        values = {name: change.column(name).to_pylist() for name in read}
        passed = [
            all(
                condition.holds({c: values[c][row] for c in condition.columns}) is True
                for condition in self.conditions
            )
            for row in range(change.num_rows)
        ]
        return change.filter(pa.array(passed, type=pa.bool_())), passed.count(False)

    def state_change(self, change: pa.Table) -> dict[tuple[object, ...], list[Number]]:
        """``state(ΔR)`` per group key of the Z-set ``change`` (``columns`` and the weight;
        the rows that pass the conditions, ``passing``), in ``agg.state_columns`` order.
        Raises ``DriverMergeDeclinedError`` when an argument is not computed exactly."""
        lists: dict[str, list[object]] = {}

        def listed(name: str) -> list[object]:
            if name not in lists:
                lists[name] = change.column(name).to_pylist()
            return lists[name]

        keys = [listed(name) for name in self.keys]
        weights = change.column(WEIGHT).to_pylist()
        groups: dict[tuple[object, ...], list[Number]] = {}
        width = len(self.view.state)
        summed = [
            (
                _argument_values(call, change, listed),
                position,
                call.sum_type is not None,
            )
            for call, position in zip(self.calls, self.positions, strict=True)
            if call.argument is not None
        ]
        with decimal.localcontext(EXACT):
            for row, weight in enumerate(weights):
                key = tuple(values[row] for values in keys)
                state = groups.get(key)
                if state is None:
                    state = groups[key] = [0] * width
                state[0] += weight
                for values, position, sums in summed:
                    value = values[row]
                    if value is not None:
                        state[position] += weight
                        if sums:
                            state[position + 1] += weight * value
        return groups

    def merged(
        self,
        change: pa.Table,
        stored: pa.Table,
        buckets: int,
        spark: SparkSession | None = None,
    ) -> tuple[pa.Table, dict[str, int]]:
        """Every stored row (``stored``: the view's rows with their bucket), the groups of
        ``change`` (as ``state_change`` reads it: passed) merged in: the rows to store and the
        ``plan.merge.METRICS``. ``spark`` computes the values of ``spark_valued`` calls.
        Raises ``DriverMergeDeclinedError``."""
        delta = self.state_change(change)
        view = self.view
        key_columns = view.keys
        touched = _touched_rows(stored, key_columns, list(delta))
        previous = stored.take(touched).to_pylist() if touched else []
        metrics = {"inserted": 0, "deleted": 0, "rewritten": 0, "negative": 0}
        groups: list[tuple[tuple[object, ...], list[Number], object, dict[str, object] | None]]
        groups = []
        for old in previous:
            key = tuple(old[k] for k in key_columns)
            state = [0 if old[c] is None else old[c] for c in view.state]  # SUM of no values
            groups.append(
                (key, self._new_state(state, delta.pop(key), metrics), old[BUCKET_COLUMN], old)
            )
        for key, change_state in delta.items():
            new_state = self._new_state([0] * len(change_state), change_state, metrics)
            groups.append((key, new_state, self._bucket(key, buckets), None))
        existing = [(key, state) for key, state, _, _ in groups if self._exists(state)]
        visible = iter(self._visible_values(existing, spark))
        rows = []
        for key, state, bucket, old in groups:
            shown, values = next(visible) if self._exists(state) else (False, None)
            row = self._row(key, state, shown, values, bucket, metrics, old)
            if row is not None:
                rows.append(row)
        kept = stored.filter(_complement(touched, stored.num_rows))
        schema = stored.schema
        merged = pa.concat_tables([kept, pa.Table.from_pylist(rows, schema=schema)])
        metrics["rewritten"] = merged.num_rows
        return merged, metrics

    def _bucket(self, key: tuple[object, ...], buckets: int) -> int:
        """The bucket of a new group: its key's hash (``buckets``), as Spark's write computes
        it from the stored key columns (all of ``KEY_TYPES``, which it hashes)."""
        return bucket_of(key, self.key_types, buckets) if buckets > 1 else 0

    def _new_state(
        self, old_state: list[Number], change_state: list[Number], metrics: dict[str, int]
    ) -> list[Number]:
        """A group's state after the change, range-checked; a negative counter counted."""
        with decimal.localcontext(EXACT):
            state = [a + b for a, b in zip(old_state, change_state, strict=True)]
        for value, kind in zip(state, self.state_kinds, strict=True):
            _check_range(value, kind)
        counters = [v for v, kind in zip(state, self.state_kinds, strict=True) if kind is None]
        if any(value < 0 for value in counters):
            metrics["negative"] += 1
        return state

    def _exists(self, state: list[Number]) -> bool:
        """A group exists while it has rows (a global aggregate's row always)."""
        return state[0] > 0 if self.view.aggregate.keys else True

    def _row(
        self,
        key: tuple[object, ...],
        state: list[Number],
        shown: bool,
        values: list[object] | None,
        bucket: object,
        metrics: dict[str, int],
        old: dict[str, object] | None,
    ) -> dict[str, object] | None:
        """A group's new stored row (None when it no longer exists: ``values`` None; ``shown``:
        whether the view shows it, its HAVING holds), counted in ``metrics``."""
        view = self.view
        was_shown = old is not None and bool(old[VISIBLE_COLUMN])
        same = (
            shown
            and was_shown
            and values is not None
            and old is not None
            and all(old[c] == v for c, v in zip(view.visible, values, strict=True))
        )
        if shown and not same:
            metrics["inserted"] += 1
        if was_shown and not same:
            metrics["deleted"] += 1
        if values is None:
            return None
        row: dict[str, object] = dict(zip(view.visible, values, strict=True))
        row[VISIBLE_COLUMN] = shown
        row.update(zip(view.keys, key, strict=True))
        row.update(zip(view.state, state, strict=True))
        row[BUCKET_COLUMN] = bucket
        return row

    @cached_property
    def state_kinds(self) -> tuple[T.DataType | None, ...]:
        """Per state column: None for a counter, else the sum's type."""
        kinds: list[T.DataType | None] = [None]
        for call in self.calls:
            if call.argument is not None:
                kinds.append(None)
                if call.sum_type is not None:
                    kinds.append(call.sum_type)
        return tuple(kinds)

    def _visible_values(
        self, groups: list[tuple[tuple[object, ...], list[Number]]], spark: SparkSession | None
    ) -> list[tuple[bool, list[object]]]:
        """Whether the view shows each existing group (its key and state), and its visible
        columns."""
        if not groups:
            return []
        if self.spark_valued:
            if spark is None or len(groups) > SPARK_VALUED_MAX_GROUPS:
                raise DriverMergeDeclinedError("Spark computes this view's visible columns")
            return self._spark_visible_values(groups, spark)
        assert self.shown is not None
        shown = self.shown
        found = []
        for key, state in groups:
            calls = [self._call_value(j, state) for j in range(len(self.calls))]
            found.append((True, [key[i] if is_key else calls[i] for is_key, i in shown]))
        return found

    def _call_value(self, index: int, state: list[Number]) -> object:
        """Call ``index``'s value (``agg.call_values_sql``): a count, ``SUM`` (NULL while no
        value is counted), ``AVG`` of an integral sum as ``double(s) / double(n)``."""
        call, position = self.calls[index], self.positions[index]
        counted = state[position]
        if call.function == "count":
            return counted
        if counted <= 0:
            return None
        total = state[position + 1]
        return total if call.function == "sum" else float(total) / float(counted)

    def _spark_visible_values(
        self, groups: list[tuple[tuple[object, ...], list[Number]]], spark: SparkSession
    ) -> list[tuple[bool, list[object]]]:
        """``_visible_values`` computed by Spark as its refresh computes them
        (``AggregateView.with_visible_sql``: the calls' values, the HAVING, the visible
        expressions) over an inline table of the groups' keys and states: a local relation
        it folds while planning, so no job runs."""
        view = self.view
        kinds = [*self.key_types, *self.state_kinds]
        rows = ", ".join(
            "("
            + ", ".join(
                _literal_sql(value, kind) for value, kind in zip((*key, *state), kinds, strict=True)
            )
            + ")"
            for key, state in groups
        )
        names = ", ".join(q(name) for name in (*view.keys, *view.state))
        table = f"(SELECT * FROM VALUES {rows} AS {q('v')}({names})) AS {q('s')}"
        found = spark.sql(view.with_visible_sql(table, self.types)).collect()
        return [
            (bool(row[VISIBLE_COLUMN]), [row[column] for column in view.visible]) for row in found
        ]


def driver_aggregate(
    view: AggregateView, types: agg.ResultTypes, schemas: dict[str, T.StructType]
) -> DriverAggregate | None:
    """``view`` as a ``DriverAggregate``, when it has that shape (module docstring) over a
    base table of ``schemas``; None otherwise."""
    node = view.aggregate
    scan, columns, conditions = _scanned(node.child, schemas)
    join = None
    if scan is not None and scan.table in schemas:
        table_types = {f.name: f.dataType for f in schemas[scan.table].fields}
    else:
        join = compile_join_input(node.child, schemas)
        if join is None:
            return None
        columns = {name: name for name in node.child.outputs}
        table_types = dict(join.types)
    keys = [_column_of(key, columns) for key in node.keys]
    if any(k is None or not key_type(table_types.get(k)) for k in keys):
        return None
    calls = []
    for index, call in enumerate(node.calls):
        found = _driver_call(call, index, columns, table_types, types)
        if found is None:
            return None
        calls.append(found)
    return DriverAggregate(
        None if join is not None or scan is None else scan.table,
        tuple(k for k in keys if k is not None),
        tuple(table_types[k] for k in keys if k is not None),
        tuple(calls),
        _shown(view),
        view,
        types,
        tuple(conditions),
        join,
    )


def _scanned(
    node: Node, schemas: Mapping[str, T.StructType]
) -> tuple[Scan | None, dict[str, str], list[Condition]]:
    """The scan below ``node`` (itself, or below projections of plain columns and filters
    the driver evaluates), the base table's column of each of ``node``'s outputs, and the
    filters' predicates (``driver_predicate``); no scan when there is none such."""
    if isinstance(node, Scan):
        return node, dict(zip(node.outputs, node.columns, strict=True)), []
    if isinstance(node, Filter):
        scan, below, predicates = _scanned(node.child, schemas)
        if scan is None or scan.table not in schemas:
            return None, {}, []
        types = {f.name: f.dataType for f in schemas[scan.table].fields}
        compiled = compile_predicate(node.predicate, below, types)
        if compiled is None:
            return None, {}, []
        columns = tuple(dict.fromkeys(predicate_columns(node.predicate, below)))
        columnar = columnar_predicate(node.predicate, below, types)
        return scan, below, [*predicates, Condition(compiled, columns, columnar)]
    if isinstance(node, Project):
        scan, below, predicates = _scanned(node.child, schemas)
        mapped = {}
        for expression, output in zip(node.expressions, node.outputs, strict=True):
            column = _column_of(expression, below)
            if column is None:
                return None, {}, []
            mapped[output] = column
        return scan, mapped, predicates
    return None, {}, []


def _column_of(expression: exp.Expr, columns: dict[str, str]) -> str | None:
    """The base table's column ``expression`` is, when it is a plain column."""
    if isinstance(expression, exp.Column) and not expression.table:
        return columns.get(expression.name)
    return None


def _driver_call(
    call: AggregateCall,
    index: int,
    columns: dict[str, str],
    table_types: dict[str, T.DataType],
    types: agg.ResultTypes,
) -> DriverCall | None:
    if call.distinct or call.function not in ("count", "sum", "avg"):
        return None
    if call.argument is None:
        return DriverCall("count", None, (), None, None)
    argument = compile_value(call.argument, columns, table_types)
    if argument is None:
        return None
    column = _column_of(call.argument, columns)
    read = tuple(dict.fromkeys(predicate_columns(call.argument, columns)))
    if call.function == "count":
        counted = isinstance(argument.data_type, COUNTED_TYPES) or is_number(argument.data_type)
        return DriverCall("count", argument, read, column, None) if counted else None
    sum_type = types.sums[index]
    if not is_number(argument.data_type) or sum_type != _sum_type(argument):
        return None  # not the type Spark's analysis found: left to Spark
    expected = types.calls[index]
    if call.function == "avg" and isinstance(sum_type, T.LongType):
        if expected != T.DoubleType():
            return None
    elif call.function == "sum" and expected != sum_type:
        return None
    return DriverCall(call.function, argument, read, column, sum_type)


def _sum_type(argument: Typed) -> T.DataType:
    """Spark's type of a ``SUM`` of the number ``argument``: BIGINT, or DECIMAL(p + 10, s)
    (at most 38 digits)."""
    if not isinstance(argument.data_type, T.DecimalType):
        return T.LongType()
    precision, scale = decimal_shape(argument)
    return T.DecimalType(min(precision + 10, 38), scale)


def _argument_values(
    call: DriverCall, change: pa.Table, listed: Callable[[str], list[object]]
) -> list[object]:
    """``call``'s argument over the rows of ``change`` (``listed``: a column's values):
    over the whole table at once when it compiles so, else row by row."""
    if call.column is not None:
        return listed(call.column)
    argument = call.argument
    assert argument is not None
    if argument.constant:
        return [argument.value()] * change.num_rows
    if argument.columnar is not None:
        values: list[object] = argument.columnar(change).to_pylist()
        return values
    evaluate, read = argument.evaluate, {name: listed(name) for name in call.columns}
    return [
        evaluate({name: values[row] for name, values in read.items()})
        for row in range(change.num_rows)
    ]


def _literal_sql(value: object, kind: T.DataType | None) -> str:
    """A key or state value as a Spark SQL literal of its column's type (``kind``; None: a
    counter, BIGINT)."""
    if kind is None:
        kind = T.LongType()
    if value is None:
        return f"CAST(NULL AS {kind.simpleString()})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return f"CAST(X'{value.hex()}' AS {kind.simpleString()})"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"CAST('{value:f}' AS {kind.simpleString()})"
    assert isinstance(value, int)
    return f"CAST({value} AS {kind.simpleString()})"


def _shown(view: AggregateView) -> tuple[tuple[bool, int], ...] | None:
    """Per visible column, the key or call it shows (None: some column computes more)."""
    node = view.aggregate
    keys = {name: i for i, name in enumerate(node.key_outputs)}
    calls = {name: j for j, name in enumerate(node.call_outputs)}
    shown = []
    for expression in view.project.expressions:
        if not isinstance(expression, exp.Column) or expression.table:
            return None
        if expression.name in keys:
            shown.append((True, keys[expression.name]))
        elif expression.name in calls:
            shown.append((False, calls[expression.name]))
        else:
            return None
    return tuple(shown)


def _check_range(value: Number, kind: T.DataType | None) -> None:
    """Raise ``DriverMergeDeclinedError`` when a state value is outside its column's type
    (``kind``; None: a counter, BIGINT)."""
    data_type = T.LongType() if kind is None else kind
    if not fits(value, data_type):
        raise DriverMergeDeclinedError(f"a state value outside {data_type.simpleString()}")


def _touched_rows(
    stored: pa.Table, key_columns: list[str], keys: list[tuple[object, ...]]
) -> list[int]:
    """The indexes of the stored rows whose group key is one of ``keys`` (NULL equal to
    NULL, as Spark groups): narrowed by Arrow column by column, then matched exactly."""
    if not keys or not stored.num_rows:
        return []
    if not key_columns:
        return list(range(stored.num_rows))  # a global aggregate's one row
    candidates = None
    for position, name in enumerate(key_columns):
        column = stored.column(name)
        wanted = pa.array(list({key[position] for key in keys}), type=column.type)
        found = pc.is_in(column, value_set=wanted, skip_nulls=False)
        candidates = found if candidates is None else pc.and_(candidates, found)
    indexes = pc.indices_nonzero(candidates).to_pylist()
    if not indexes:
        return []
    chosen = stored.select(key_columns).take(indexes).to_pylist()
    wanted_keys = set(keys)
    return [
        index
        for index, row in zip(indexes, chosen, strict=True)
        if tuple(row[name] for name in key_columns) in wanted_keys
    ]


def _complement(indexes: list[int], size: int) -> pa.Array:
    """A boolean mask of ``size`` rows, false at ``indexes``."""
    mask = [True] * size
    for index in indexes:
        mask[index] = False
    return pa.array(mask, type=pa.bool_())
