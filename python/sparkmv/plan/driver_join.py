"""A join's change computed by the driver over Arrow, for an aggregate view the driver
refreshes (``plan/driver_aggregate.py``).

Spark's refresh of a join view costs the planning of its statement, its broadcasts and its
job, about a second at TPC-H SF 1 however few rows the change holds. For an inner join whose
inputs are filters and projections over one base table each, and a change small enough to
read at the driver, the driver computes the join rule's terms itself (``delta/join.py``):

    Δ(R_1 ⋈ … ⋈ R_n) = Σ_i  R_1,new ⋈ … ⋈ R_i−1,new ⋈ ΔR_i ⋈ R_i+1,old ⋈ … ⋈ R_n,old

each term a chain of hash joins (pyarrow's) on the equi-conjuncts ``a = b`` its step can
evaluate, the other conjuncts filtering its result, the weights multiplied. A selection over
the join and nested joins are one join under all their conditions, with the conjuncts that
every branch of a disjunction repeats taken out of it (``_factored``). A term reads an
input other than its change in one of two ways, and declines otherwise
(``DriverJoinDeclinedError``: Spark refreshes the view):

- an input over an unchanged table: its files decoded by the driver (``decoded_files``, so
  once per process), at most ``MAX_TABLE_BYTES``;
- an input over a changed table ``R_j`` that the term reaches only through its own change
  (``plan/join_keys.py`` proves it: at every key ``k`` of the term's change, ``n_old(k) = 0``
  or ``n_new(k) = 0``). Its logged rows sum to ``Σw(k) = n_new(k) − n_old(k)`` at ``k``, so
  ``Σw(k) > 0`` means ``n_old(k) = 0`` and ``Σw(k) < 0`` means ``n_new(k) = 0`` (and ``0``,
  both): ``R_j,new[k] = ΔR_j[k]`` where ``Σw(k) > 0``, ``R_j,old[k] = −ΔR_j[k]`` where
  ``Σw(k) < 0``, and both are empty elsewhere. These are Z-sets of logged rows, linear, so
  nothing is netted.

Every change is the logged rows as a Z-set (not netted: the rule is linear in each ``ΔR_i``).
Filters and projections are evaluated as Spark evaluates them or not at all
(``driver_predicate``, ``driver_expression``: columnar forms only), and a join compares keys
of equal types that compare exactly (``KEY_TYPES``), NULL matching nothing, as Spark's
equality does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv.analyze.ir import Filter, Join, Node, Project, Scan
from sparkmv.capture.tracking import BaseTable
from sparkmv.decoded_files import arrow_schema, decoded, local_paths, read_in_parallel
from sparkmv.delta.engine import KeyedColumns
from sparkmv.delta.join import conjunct_inputs, conjuncts_of, equated, join_order
from sparkmv.delta.selection import selected_join
from sparkmv.plan.driver_expression import (
    DriverMergeDeclinedError,
    Typed,
    compile_expression,
)
from sparkmv.plan.driver_predicate import ColumnarPredicate, columnar_predicate
from sparkmv.zset import EXACT_TYPES, WEIGHT

MAX_TABLE_BYTES = 64 * 1024 * 1024
"""The most bytes of an unchanged table's files the driver decodes for a term."""
MAX_JOINED_ROWS = 1_000_000
"""The most rows a term's joins may produce at the driver (a join of a change with a key
that many rows share); more are left to Spark."""
KEY_TYPES = tuple(t for t in EXACT_TYPES if t not in (T.TimestampType, T.TimestampNTZType))
"""Key types whose Arrow and Python values (``to_pylist``) are equal exactly when Spark's
are: ``EXACT_TYPES`` (no floating point) without timestamps, which Arrow may read at another
precision than Spark wrote."""
_JOINED_WEIGHT = f"{WEIGHT}_joined"


class DriverJoinDeclinedError(DriverMergeDeclinedError):
    """The driver does not compute this join's change (module docstring): Spark does."""


@dataclass(frozen=True)
class Compiled:
    """An aggregate's join input as the driver evaluates it: the Spark type of every column
    of its nodes, and the columnar forms of its filters, projections and join conditions (by
    node identity)."""

    types: Mapping[str, T.DataType]
    predicates: Mapping[int, ColumnarPredicate]
    expressions: Mapping[int, tuple[Typed, ...]]
    conjuncts: Mapping[int, tuple[Conjunct, ...]]


@dataclass(frozen=True)
class Conjunct:
    """A conjunct of a join's condition: its columnar form, and whether it is ``a = b`` of
    columns of one type that compares exactly (a hash join's key where ``a`` and ``b`` are
    on either side of a step)."""

    predicate: ColumnarPredicate
    equi: bool


def compile_join_input(node: Node, schemas: Mapping[str, T.StructType]) -> DriverJoin | None:
    """``node`` (the input of an aggregate) as a ``DriverJoin``, when it is an inner join of
    inputs the driver evaluates (module docstring); None otherwise."""
    node = _flattened(node)
    if not isinstance(_through(node), Join):
        return None
    types: dict[str, T.DataType] = {}
    predicates: dict[int, ColumnarPredicate] = {}
    expressions: dict[int, tuple[Typed, ...]] = {}
    conjuncts: dict[int, tuple[Conjunct, ...]] = {}

    def visit(current: Node) -> bool:
        if isinstance(current, Scan):
            fields = {f.name: f for f in schemas[current.table].fields}
            found = [fields.get(column) for column in current.columns]
            if any(f is None or _padded(f) for f in found):
                return False
            types.update((o, f.dataType) for o, f in zip(current.outputs, found, strict=True) if f)
            return True
        if isinstance(current, Filter):
            if not visit(current.child):
                return False
            compiled = columnar_predicate(current.predicate, _identity(types), types)
            if compiled is None:
                return False
            predicates[id(current)] = compiled
            return True
        if isinstance(current, Project) and current.native is None:
            if not visit(current.child):
                return False
            typed = [compile_expression(e, _identity(types), types) for e in current.expressions]
            if any(t is None or not t.vectorized for t in typed):
                return False
            expressions[id(current)] = tuple(t for t in typed if t is not None)
            types.update((o, t.data_type) for o, t in zip(current.outputs, typed, strict=True) if t)
            return True
        if isinstance(current, Join):
            if not all(visit(child) for child in current.inputs):
                return False
            listed = []
            for conjunct, _ in conjunct_inputs(current):
                predicate = columnar_predicate(conjunct, _identity(types), types)
                if predicate is None:
                    return False
                listed.append(Conjunct(predicate, _equi(conjunct, types)))
            conjuncts[id(current)] = tuple(listed)
            return True
        return False

    if any(s.table not in schemas for s in _scans(node)) or not visit(node):
        return None
    return DriverJoin(node, Compiled(types, predicates, expressions, conjuncts))


def _flattened(node: Node) -> Node:
    """``node`` with each selection over a join, and each join an input of a join, made one
    join under all their conditions: ``σ_p(R ⋈_c S) = R ⋈_{c ∧ p} S`` and
    ``(R ⋈_c S) ⋈_d T = R ⋈_{c ∧ d} S ⋈ T`` (an inner join's outputs are its inputs')."""
    if isinstance(node, Filter):
        child = _flattened(node.child)
        if isinstance(child, Join):
            return _flattened(selected_join(Filter(child, node.predicate), child))
        return Filter(child, node.predicate)
    if isinstance(node, Project):
        return Project(_flattened(node.child), node.expressions, node.outputs, node.native)
    if isinstance(node, Join):
        inputs: list[Node] = []
        conditions = [node.condition] if node.condition is not None else []
        for child in map(_flattened, node.inputs):
            if isinstance(child, Join):
                inputs.extend(child.inputs)
                conditions += [child.condition] if child.condition is not None else []
            else:
                inputs.append(child)
        factored = [c for condition in conditions for c in _factored(conjuncts_of(condition))]
        return Join(tuple(inputs), exp.and_(*factored) if factored else None)
    return node


def _factored(conjuncts: list[exp.Expr]) -> list[exp.Expr]:
    """``conjuncts`` with the conjuncts common to every branch of a disjunction taken out of
    it: ``(A ∧ B_1) ∨ … ∨ (A ∧ B_n) = A ∧ (B_1 ∨ … ∨ B_n)`` (distributivity, which holds in
    SQL's three-valued logic too), so that a join condition repeated in each branch (TPC-H
    Q19's ``p_partkey = l_partkey``) is a join key. A branch left with nothing makes the
    disjunction ``A`` alone (absorption)."""
    found: list[exp.Expr] = []
    for conjunct in conjuncts:
        branches = [conjuncts_of(b) for b in _disjuncts(conjunct)]
        common = [c for c in branches[0] if all(c in branch for branch in branches[1:])]
        if len(branches) < 2 or not common:
            found.append(conjunct)
            continue
        found += common
        rests = [[c for c in branch if c not in common] for branch in branches]
        if all(rests):
            found.append(exp.or_(*(exp.and_(*rest) for rest in rests)))
    return found


def _disjuncts(condition: exp.Expr) -> list[exp.Expr]:
    """The disjuncts of ``condition`` (nested ORs and parentheses flattened)."""
    if isinstance(condition, exp.Paren):
        return _disjuncts(condition.this)
    if isinstance(condition, exp.Or):
        return _disjuncts(condition.this) + _disjuncts(condition.expression)
    return [condition]


@dataclass
class DriverTables:
    """The base tables as one refresh reads them at the driver: the ``changed`` ones'
    logged rows since the versions the view consumed (``consumed``), for the columns the
    view reads (``reads``), the unchanged ones' files, and ``proofs`` (``plan/join_keys.py``)
    of the inputs a term reads from their own change."""

    spark: SparkSession
    bases: Mapping[str, BaseTable]
    consumed: Mapping[str, int]
    reads: Mapping[str, Sequence[str]]
    proofs: Callable[[KeyedColumns, KeyedColumns], bool]
    max_change_bytes: int
    _changes: dict[str, pa.Table] = field(default_factory=dict)
    _rows: dict[str, pa.Table] = field(default_factory=dict)

    def changed(self, table: str) -> bool:
        return table in self.consumed

    def change(self, table: str) -> pa.Table:
        """``table``'s logged rows as a Z-set: its read columns and the weight."""
        if table not in self._changes:
            base = self.bases[table]
            source = base.source
            found = None
            if source is not None and base.materialized_view is None:
                found = source.local_row_changes(
                    self.consumed[table],
                    base.version,
                    list(self.reads[table]),
                    self.max_change_bytes,
                )
            if found is None:
                raise DriverJoinDeclinedError(f"the change of {table} is not read by the driver")
            self._changes[table] = found
        return self._changes[table]

    def rows(self, table: str) -> pa.Table:
        """The unchanged ``table``'s rows, each of weight 1: its files decoded (their read
        columns), as Spark reads them."""
        if table not in self._rows:
            self._rows[table] = self._decoded(table)
        return self._rows[table]

    def _decoded(self, table: str) -> pa.Table:
        base = self.bases[table]
        files = base.files
        if base.log is None or files is None or base.materialized_view is not None:
            raise DriverJoinDeclinedError(f"{table} is not read by the driver")
        if any(file.partition for file in files.files):
            raise DriverJoinDeclinedError(f"{table} is partitioned")
        if sum(file.size for file in files.files) > MAX_TABLE_BYTES:
            raise DriverJoinDeclinedError(f"{table} is too large to read at the driver")
        local = local_paths(self.spark, (file.path for file in files.files))
        if local is None:
            raise DriverJoinDeclinedError(f"{table}'s files are not local")
        fields = {f.name: f for f in base.log.schema.fields}
        schema = arrow_schema([fields[c] for c in self.reads[table]])
        try:
            parts = read_in_parallel(local, lambda path: decoded(path, schema))
        except (pa.ArrowException, OSError, KeyError):  # not as Spark reads it
            raise DriverJoinDeclinedError(f"{table}'s files are not as Spark reads them") from None
        rows = pa.concat_tables([schema.empty_table(), *parts])
        return rows.append_column(WEIGHT, pa.repeat(pa.scalar(1, pa.int64()), rows.num_rows))


@dataclass(frozen=True)
class DriverJoin:
    """An aggregate's input the driver evaluates (``compile_join_input``): ``node``, an
    inner join (under filters and projections) of filters and projections over scans."""

    node: Node
    compiled: Compiled

    @property
    def types(self) -> Mapping[str, T.DataType]:
        """The Spark type of each column of the whole input and its parts."""
        return self.compiled.types

    @cached_property
    def tables(self) -> frozenset[str]:
        return frozenset(scan.table for scan in _scans(self.node))

    def change(self, tables: DriverTables) -> pa.Table:
        """``Δnode`` over ``tables``: its outputs and the weight. Raises
        ``DriverMergeDeclinedError`` where the driver does not compute it as Spark would."""
        try:
            return _Evaluation(self.compiled, tables).change(self.node)
        except pa.ArrowException as error:  # an overflow Spark would raise, a type Acero lacks
            raise DriverJoinDeclinedError(f"Arrow: {error}") from None


@dataclass
class _Evaluation:
    compiled: Compiled
    tables: DriverTables

    def changed(self, node: Node) -> bool:
        return any(self.tables.changed(scan.table) for scan in _scans(node))

    def change(self, node: Node) -> pa.Table:
        """``Δnode``: the logged rows of its tables through its operators (a filter's and a
        projection's change is theirs of their input's: ``Δσ(X) = σ(ΔX)``,
        ``Δπ(X) = π(ΔX)``; a join's is its terms)."""
        if isinstance(node, Join):
            return self._join_change(node)
        if isinstance(node, (Filter, Project)):
            return self._operated(node, self.change(node.child))
        return self._linear(node, lambda scan: self.tables.change(scan.table))

    def value(self, node: Node) -> pa.Table:
        """An unchanged ``node``'s rows (the same at OLD and NEW)."""
        return self._linear(node, lambda scan: self.tables.rows(scan.table))

    def _linear(self, node: Node, read: Callable[[Scan], pa.Table]) -> pa.Table:
        """``node`` over the rows ``read`` gives its scans (a change, or the tables' rows):
        every operator here but a join is linear, and a join's change is its terms."""
        if isinstance(node, Scan):
            rows = read(node)  # the columns the view reads, of all the table's
            read_outputs = [
                (output, column)
                for output, column in zip(node.outputs, node.columns, strict=True)
                if column in rows.column_names
            ]
            return pa.table(
                [*(rows.column(c) for _, c in read_outputs), rows.column(WEIGHT)],
                names=[*(o for o, _ in read_outputs), WEIGHT],
            )
        if isinstance(node, (Filter, Project)):
            return self._operated(node, self._linear(node.child, read))
        if isinstance(node, Join):
            if self.changed(node):
                raise DriverJoinDeclinedError("a changed join read as of a version")
            inputs = [self._linear(child, read) for child in node.inputs]
            return self._joined(node, inputs, 0)
        raise DriverJoinDeclinedError(f"{type(node).__name__} is not evaluated by the driver")

    def _operated(self, node: Filter | Project, rows: pa.Table) -> pa.Table:
        """``node``'s filter or projection of its input's ``rows`` (weights kept)."""
        if isinstance(node, Filter):
            return _filtered(rows, [self.compiled.predicates[id(node)]])
        typed = self.compiled.expressions[id(node)]
        columns = [_column_over(t, rows) for t in typed]
        return pa.table([*columns, rows.column(WEIGHT)], names=[*node.outputs, WEIGHT])

    def _join_change(self, node: Join) -> pa.Table:
        """The sum of the terms (module docstring), input ``j`` of the term of ``ΔR_i`` as
        of NEW for ``j < i`` and OLD for ``j > i``."""
        terms = []
        for index, child in enumerate(node.inputs):
            if not self.changed(child):
                continue
            inputs = [
                self.change(child)
                if other == index
                else self._term_input(node, other, index, new=other < index)
                for other in range(len(node.inputs))
            ]
            terms.append(self._joined(node, inputs, index))
        schema = pa.schema([f.with_nullable(True) for f in terms[0].schema])
        return pa.concat_tables([term.cast(schema) for term in terms])

    def _term_input(self, node: Join, index: int, changed: int, new: bool) -> pa.Table:
        """Input ``index`` in the term of input ``changed``'s change, as of NEW or OLD."""
        child = node.inputs[index]
        if not self.changed(child):
            return self.value(child)
        keyed = equated(node, changed, index)
        if keyed is None or not self.tables.proofs(*keyed):
            raise DriverJoinDeclinedError("a changed input a term reads in full")
        rows = _at_keys_of_sign(self.tables.change(keyed[0][0]), keyed[0][1], positive=new)
        return self._linear(child, lambda scan: rows)

    def _joined(self, node: Join, inputs: list[pa.Table], start: int) -> pa.Table:
        """The Z-set join of ``inputs`` under ``node``'s condition, from input ``start``
        along ``join_order``: weights multiply."""
        order, attached = join_order(node, start)
        listed = conjunct_inputs(node)
        compiled = {
            id(c): found
            for (c, _), found in zip(listed, self.compiled.conjuncts[id(node)], strict=True)
        }
        joined = _filtered(inputs[start], [compiled[id(c)].predicate for c in attached[0]])
        for index, conjuncts in zip(order[1:], attached[1:], strict=True):
            right = inputs[index]
            pairs, residual = [], []
            for conjunct in conjuncts:
                found = compiled[id(conjunct)]
                pair = _sides(conjunct, found, joined.column_names, right.column_names)
                if pair is not None:
                    pairs.append(pair)
                else:
                    residual.append(found.predicate)
            if not pairs:
                raise DriverJoinDeclinedError("a join step without an equi-conjunct")
            joined = _filtered(_hash_join(joined, right, pairs), residual)
            if joined.num_rows > MAX_JOINED_ROWS:
                raise DriverJoinDeclinedError("a term joins too many rows for the driver")
        return joined.select([*(o for o in node.outputs if o in joined.column_names), WEIGHT])


def _hash_join(left: pa.Table, right: pa.Table, pairs: list[tuple[str, str]]) -> pa.Table:
    """``left ⋈ right`` on the column pairs (NULL matching nothing), weights multiplied."""
    right = right.rename_columns([_JOINED_WEIGHT if n == WEIGHT else n for n in right.column_names])
    left_keys, right_keys = [a for a, _ in pairs], [b for _, b in pairs]
    if left.num_rows < right.num_rows:  # Acero hashes its right input: the smaller one
        left, right, left_keys, right_keys = right, left, right_keys, left_keys
    joined = left.join(
        right, keys=left_keys, right_keys=right_keys, join_type="inner", coalesce_keys=False
    )
    weight = pc.multiply_checked(joined.column(WEIGHT), joined.column(_JOINED_WEIGHT))
    joined = joined.drop_columns([WEIGHT, _JOINED_WEIGHT])
    return joined.append_column(WEIGHT, weight)


def _at_keys_of_sign(change: pa.Table, columns: tuple[str, ...], positive: bool) -> pa.Table:
    """The rows of the Z-set ``change`` at the keys (``columns``) whose weights sum above 0
    (``positive``), or those below 0 with their weights negated: ``R_new`` / ``R_old`` at
    those keys (module docstring)."""
    names = list(columns)
    sums = change.select([*names, WEIGHT]).group_by(names).aggregate([(WEIGHT, "sum")])
    total = sums.column(f"{WEIGHT}_sum")
    kept = sums.filter(pc.greater(total, 0) if positive else pc.less(total, 0)).select(names)
    rows = change.join(kept, keys=names, join_type="left semi")
    if positive:
        return rows
    return rows.set_column(
        rows.schema.get_field_index(WEIGHT), WEIGHT, pc.negate_checked(rows.column(WEIGHT))
    )


def _filtered(rows: pa.Table, predicates: Sequence[ColumnarPredicate]) -> pa.Table:
    """The rows every predicate holds for (TRUE)."""
    for predicate in predicates:
        mask = predicate(rows)
        if isinstance(mask, pa.Scalar):
            if mask.as_py() is not True:
                rows = rows.slice(0, 0)
            continue
        rows = rows.filter(pc.fill_null(mask, False))
    return rows


def _column_over(typed: Typed, rows: pa.Table) -> pa.Array | pa.ChunkedArray:
    value = typed.over(rows)
    if isinstance(value, pa.Scalar):
        return pa.repeat(value, rows.num_rows)
    return value


def _equi(conjunct: exp.Expr, types: Mapping[str, T.DataType]) -> bool:
    """Whether ``conjunct`` is ``a = b`` of two columns of one type that compares exactly."""
    if type(conjunct) is not exp.EQ:
        return False
    left, right = conjunct.this, conjunct.expression
    if not all(isinstance(side, exp.Column) and not side.table for side in (left, right)):
        return False
    first, second = types.get(left.name), types.get(right.name)
    return first is not None and first == second and key_type(first)


def _sides(
    conjunct: exp.Expr, compiled: Conjunct, left: Sequence[str], right: Sequence[str]
) -> tuple[str, str] | None:
    """An equi-conjunct's columns as (left's, right's), or None when it is none or both of
    its columns are on one side (then it is a filter)."""
    if not compiled.equi:
        return None
    a, b = conjunct.this.name, conjunct.expression.name
    if a in left and b in right:
        return a, b
    if b in left and a in right:
        return b, a
    return None


def key_type(data_type: T.DataType | None) -> bool:
    """Whether values of ``data_type`` compare (and hash: ``buckets.py``) at the driver as in
    Spark: ``KEY_TYPES``, a string only of the binary collation (another compares and hashes
    its collation key)."""
    if isinstance(data_type, T.StringType):
        return getattr(data_type, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(data_type, KEY_TYPES)


def _padded(column: T.StructField) -> bool:
    """A CHAR or VARCHAR column, which Spark pads or checks as it reads it."""
    return "__CHAR_VARCHAR_TYPE_STRING" in (column.metadata or {})


def _identity(types: Mapping[str, T.DataType]) -> dict[str, str]:
    return {name: name for name in types}


def _through(node: Node) -> Node:
    """The first node below ``node``'s filters and projections."""
    while isinstance(node, (Filter, Project)):
        node = node.child
    return node


def _scans(node: Node) -> list[Scan]:
    if isinstance(node, Scan):
        return [node]
    if isinstance(node, (Filter, Project)):
        return _scans(node.child)
    if isinstance(node, Join):
        return [scan for child in node.inputs for scan in _scans(child)]
    return []
