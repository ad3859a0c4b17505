"""An aggregate view refreshed by the driver alone: its change read as Arrow, summed into
group state in Python and merged with the stored groups, with no Spark job.

A refresh Spark plans costs the planning of its statements and at least one job, about
0.3–0.5 s even for a one-row change; a write to a table with an ``ON COMMIT`` view pays it on
every statement. For the commonest aggregate view,

    SELECT k…, COUNT(*), COUNT(x), SUM(x), AVG(x) FROM R [WHERE C] GROUP BY k…

(plain columns as keys and arguments, a WHERE the driver evaluates as Spark does
(``driver_predicate``), no HAVING, no DISTINCT, integral or decimal sums) the whole refresh
is arithmetic on the changed groups (Hanson §3.6, as in ``delta/aggregate.py``):

    state(R + ΔR) = state(R) + state(σ_C(ΔR))
    state(ΔR)_g   = (Σ w, Σ w·[x IS NOT NULL], Σ w·x)   over ΔR's rows of group g

Each visible column is a key or a call's value: ``COUNT`` its counter, ``SUM`` the sum (NULL
while the count of values is 0), ``AVG`` of an integral argument ``double(s) / double(n)`` as
Spark's ``Average`` computes it. Python's integers and decimals are exact; a sum outside its
type's range (which Spark would refuse in ANSI mode, or wrap without it) is left to Spark
(``DriverMergeDeclinedError``). Group keys are of ``KEY_TYPES``, which Arrow and Python compare as
Spark does.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.relational import AggregateCall, Filter, Node, Project, Scan
from sparkmv.delta import aggregate as agg
from sparkmv.plan.aggregate_view import AggregateView
from sparkmv.plan.driver_predicate import Predicate, compile_predicate, predicate_columns
from sparkmv.stored_columns import BUCKET_COLUMN, VISIBLE_COLUMN
from sparkmv.zset import EXACT_TYPES, WEIGHT

KEY_TYPES = tuple(t for t in EXACT_TYPES if t not in (T.TimestampType, T.TimestampNTZType))
"""Group key types whose Python values (``to_pylist``) are equal exactly when Spark's are:
``EXACT_TYPES`` (no floating point) without timestamps, which Arrow may read at another
precision than Spark wrote."""

COUNTED_TYPES = (*KEY_TYPES, T.FloatType, T.DoubleType, T.TimestampType, T.TimestampNTZType)
"""Types a ``COUNT(x)`` argument may have here: only whether a value is NULL matters."""

Number = int | decimal.Decimal
"""A state value: a counter, or an integral or decimal sum."""

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1

_EXACT = decimal.Context(prec=200)
"""Decimal sums are exact below 200 digits (Spark's have at most 38)."""


class DriverMergeDeclinedError(Exception):
    """The driver cannot merge this change exactly (a sum out of its type's range, or a new
    group of a view stored in more than one bucket): Spark merges it instead."""


@dataclass(frozen=True)
class DriverCall:
    """One aggregate call of a ``DriverAggregate``: ``function`` over the base table's
    ``column`` (None: ``COUNT(*)``); ``sum_type`` of a ``SUM`` or ``AVG``."""

    function: str
    column: str | None
    sum_type: T.DataType | None


@dataclass(frozen=True)
class Condition:
    """A filter below the aggregate as the driver evaluates it (``driver_predicate``): TRUE,
    FALSE or NULL for a row of the base table's ``columns`` it reads."""

    holds: Predicate
    columns: tuple[str, ...]


@dataclass(frozen=True)
class DriverAggregate:
    """An aggregate view the driver can refresh (``driver_aggregate``).

    ``table``: its one base table; ``keys``: that table's columns the view groups by;
    ``calls``; ``shown``: per visible column, ``(True, i)`` for key ``i`` or ``(False, j)``
    for call ``j``; ``view``: the view, whose ``storage()`` names the stored columns;
    ``conditions``: the filters a change row must pass (all TRUE) to count."""

    table: str
    keys: tuple[str, ...]
    calls: tuple[DriverCall, ...]
    shown: tuple[tuple[bool, int], ...]
    view: AggregateView
    conditions: tuple[Condition, ...] = ()

    @cached_property
    def positions(self) -> tuple[int, ...]:
        """Per call, the index in the state of its counter of values (its sum follows it):
        ``agg.state_columns`` order, ``mv_count`` first; 0 for ``COUNT(*)``, whose value is
        ``mv_count`` itself."""
        found, position = [], 1
        for call in self.calls:
            found.append(0 if call.column is None else position)
            if call.column is not None:
                position += 2 if call.sum_type is not None else 1
        return tuple(found)

    @property
    def columns(self) -> list[str]:
        """The base table's columns the change is read for, each once."""
        named = [*self.keys, *(call.column for call in self.calls if call.column is not None)]
        named += [column for condition in self.conditions for column in condition.columns]
        return list(dict.fromkeys(named))

    def passing(self, change: pa.Table) -> tuple[pa.Table, int]:
        """The rows of the Z-set ``change`` (``columns`` and the weight) every condition
        holds for (TRUE), and how many did not pass: ``σ_C(ΔR)``, what the aggregate
        reads."""
        if not self.conditions:
            return change, 0
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
        the rows that pass the conditions, ``passing``), in ``agg.state_columns`` order."""
        columns = {name: change.column(name).to_pylist() for name in self.columns}
        keys = [columns[name] for name in self.keys]
        arguments = [None if c.column is None else columns[c.column] for c in self.calls]
        weights = change.column(WEIGHT).to_pylist()
        groups: dict[tuple[object, ...], list[Number]] = {}
        width = len(self.view.state)
        summed = [
            (values, position, call.sum_type is not None)
            for call, values, position in zip(self.calls, arguments, self.positions, strict=True)
            if values is not None
        ]
        with decimal.localcontext(_EXACT):
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
        self, change: pa.Table, stored: pa.Table, buckets: int
    ) -> tuple[pa.Table, dict[str, int]]:
        """Every stored row (``stored``: the view's rows with their bucket), the groups of
        ``change`` (as ``state_change`` reads it: passed) merged in: the rows to store and the
        ``plan.merge.METRICS``. Raises ``DriverMergeDeclinedError``."""
        delta = self.state_change(change)
        view = self.view
        key_columns = view.keys
        touched = _touched_rows(stored, key_columns, list(delta))
        previous = stored.take(touched).to_pylist() if touched else []
        metrics = {"inserted": 0, "deleted": 0, "rewritten": 0, "negative": 0}
        rows = []
        for old in previous:
            key = tuple(old[k] for k in key_columns)
            state = [0 if old[c] is None else old[c] for c in view.state]  # SUM of no values
            row = self._row(key, state, delta.pop(key), old[BUCKET_COLUMN], metrics, old)
            if row is not None:
                rows.append(row)
        if delta and buckets > 1:
            raise DriverMergeDeclinedError("new groups need Spark's hash for their bucket")
        for key, change_state in delta.items():
            row = self._row(key, [0] * len(change_state), change_state, 0, metrics, None)
            if row is not None:
                rows.append(row)
        kept = stored.filter(_complement(touched, stored.num_rows))
        schema = stored.schema
        merged = pa.concat_tables([kept, pa.Table.from_pylist(rows, schema=schema)])
        metrics["rewritten"] = merged.num_rows
        return merged, metrics

    def _row(
        self,
        key: tuple[object, ...],
        old_state: list[Number],
        change_state: list[Number],
        bucket: object,
        metrics: dict[str, int],
        old: dict[str, object] | None,
    ) -> dict[str, object] | None:
        """A group's new stored row (None when it is no longer stored), counted in
        ``metrics``."""
        view = self.view
        with decimal.localcontext(_EXACT):
            state = [a + b for a, b in zip(old_state, change_state, strict=True)]
        for value, kind in zip(state, self.state_kinds, strict=True):
            _check_range(value, kind)
        counters = [v for v, kind in zip(state, self.state_kinds, strict=True) if kind is None]
        if any(value < 0 for value in counters):
            metrics["negative"] += 1
        exists = state[0] > 0 if view.aggregate.keys else True
        values = self._values(key, state) if exists else [None] * len(self.shown)
        was_shown = old is not None and bool(old[VISIBLE_COLUMN])
        same = (
            exists
            and old is not None
            and was_shown
            and all(old[c] == v for c, v in zip(view.visible, values, strict=True))
        )
        if exists and not same:
            metrics["inserted"] += 1
        if was_shown and not same:
            metrics["deleted"] += 1
        if not exists:  # a group without rows (a global aggregate's row always exists)
            return None
        row: dict[str, object] = dict(zip(view.visible, values, strict=True))
        row[VISIBLE_COLUMN] = exists
        row.update(zip(view.keys, key, strict=True))
        row.update(zip(view.state, state, strict=True))
        row[BUCKET_COLUMN] = bucket
        return row

    @cached_property
    def state_kinds(self) -> tuple[T.DataType | None, ...]:
        """Per state column: None for a counter, else the sum's type."""
        kinds: list[T.DataType | None] = [None]
        for call in self.calls:
            if call.column is not None:
                kinds.append(None)
                if call.sum_type is not None:
                    kinds.append(call.sum_type)
        return tuple(kinds)

    def _values(self, key: tuple[object, ...], state: list[Number]) -> list[object]:
        """The visible columns of an existing group."""
        values: list[object] = []
        for is_key, index in self.shown:
            values.append(key[index] if is_key else self._call_value(index, state))
        return values

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


def driver_aggregate(
    view: AggregateView, types: agg.ResultTypes, schemas: dict[str, T.StructType]
) -> DriverAggregate | None:
    """``view`` as a ``DriverAggregate``, when it has that shape (module docstring) over a
    base table of ``schemas``; None otherwise."""
    node = view.aggregate
    if view.having is not None:
        return None
    scan, columns, conditions = _scanned(node.child, schemas)
    if scan is None or scan.table not in schemas:
        return None
    table_types = {f.name: f.dataType for f in schemas[scan.table].fields}
    keys = [_column_of(key, columns) for key in node.keys]
    if any(k is None or not _is_key_type(table_types.get(k)) for k in keys):
        return None
    calls = []
    for index, call in enumerate(node.calls):
        found = _driver_call(call, index, columns, table_types, types)
        if found is None:
            return None
        calls.append(found)
    shown = _shown(view)
    if shown is None:
        return None
    return DriverAggregate(
        scan.table,
        tuple(k for k in keys if k is not None),
        tuple(calls),
        shown,
        view,
        tuple(conditions),
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
        return scan, below, [*predicates, Condition(compiled, columns)]
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


def _is_key_type(data_type: T.DataType | None) -> bool:
    if isinstance(data_type, T.StringType):  # a collation other than binary groups otherwise
        return getattr(data_type, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(data_type, KEY_TYPES)


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
        return DriverCall("count", None, None)
    column = _column_of(call.argument, columns)
    argument = table_types.get(column) if column is not None else None
    if column is None or argument is None:
        return None
    if call.function == "count":
        return DriverCall("count", column, None) if isinstance(argument, COUNTED_TYPES) else None
    sum_type = types.sums[index]
    integral = isinstance(sum_type, T.LongType) and isinstance(argument, agg.SUMMABLE_TYPES)
    decimal_sum = isinstance(sum_type, T.DecimalType) and isinstance(argument, T.DecimalType)
    if call.function == "avg" and not integral:
        return None  # a decimal average's rounding is Spark's division's
    if not (integral or decimal_sum) or types.calls[index] != (
        T.DoubleType() if call.function == "avg" else sum_type
    ):
        return None
    return DriverCall(call.function, column, sum_type)


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
    """Raise ``DriverMergeDeclinedError`` when a state value is outside its column's type."""
    if kind is None or isinstance(kind, T.LongType):
        if not _LONG_MIN <= int(value) <= _LONG_MAX:
            raise DriverMergeDeclinedError("a counter or sum outside BIGINT")
    elif isinstance(kind, T.DecimalType) and not abs(decimal.Decimal(value)) < _decimal_bound(kind):
        raise DriverMergeDeclinedError(f"a sum outside {kind.simpleString()}")


def _decimal_bound(kind: T.DecimalType) -> decimal.Decimal:
    """The smallest magnitude ``kind`` cannot hold."""
    return decimal.Decimal(10).scaleb(kind.precision - kind.scale - 1)


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
