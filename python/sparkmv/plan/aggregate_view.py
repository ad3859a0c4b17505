"""An aggregate view, ``π(σ_HAVING(γ_{K; f…}(Q)))``, stored as one row per group with its
state (``delta/aggregate.py``), so that a refresh reads only the groups its change touches.

A stored row holds the view's visible columns ``c0 …`` (computed from the state, NULL when
hidden), ``mv_visible`` (the group exists and passes ``HAVING``; a global aggregate's row
always exists), the group keys ``mv_k…`` and the state columns. With ``DISTINCT``
aggregates, the group's value counters are rows of their own beside it, with the same keys
(so in the same bucket), ``mv_visible`` false and the counter columns
(``delta/aggregate.counter_columns``). The catalog view shows the visible rows only.
``HAVING`` is applied when writing, to the maintained state, so a group that fails it keeps
its counters and can pass again later (issue: aggregates).

A refresh merges each changed group's stored state with the state of the change
(``state(R + ΔR) = state(R) + state(ΔR)`` for counters and sums, Hanson §3.6), its value
counters likewise (``c_new = c_old + Δc``; a distinct count or sum changes by the values
whose counter crosses zero), and recomputes from ``Q_new`` only the groups whose extreme may
have been deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from sparkmv.analyze.relational import Aggregate, Filter, Node, Project
from sparkmv.apply.snapshot import VISIBLE_COLUMN, storage_columns
from sparkmv.delta import aggregate as agg
from sparkmv.delta.engine import DeltaEngine, Version, spark_expression
from sparkmv.zset import COUNT_COLUMN

KIND = agg.DISTINCT_ARGUMENT_COLUMN

OLD = "old_"  # prefix of a stored group's previous state and visible columns in a merge
CHANGE = "delta_"  # prefix of the change's state columns in a merge
RECOMPUTE = "__recompute"


@dataclass(frozen=True)
class AggregateView:
    aggregate: Aggregate
    having: exp.Expr | None
    project: Project
    _types: dict[DeltaEngine, agg.ResultTypes] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def keys(self) -> list[str]:
        return agg.key_columns(self.aggregate)

    @property
    def state(self) -> list[str]:
        return agg.state_columns(self.aggregate)

    @property
    def counters(self) -> list[str]:
        return agg.counter_columns(self.aggregate)

    def storage(self) -> list[str]:
        """The stored columns, in order."""
        visible = storage_columns(len(self.project.outputs))
        return [*visible, VISIBLE_COLUMN, *self.keys, *self.state, *self.counters]

    def kept(self) -> Column:
        """Whether a merged row stays stored: a group while its ``COUNT(*)`` is positive (a
        global aggregate's row always), a value counter while its count is."""
        group = F.col(COUNT_COLUMN) > 0 if self.aggregate.keys else F.lit(True)
        if not self.counters:
            return group
        return F.when(F.col(KIND) == 0, group).otherwise(F.col(agg.VALUE_COUNT_COLUMN) > 0)

    def types(self, engine: DeltaEngine) -> agg.ResultTypes:
        """The calls' result types (each probe is a Spark analysis: asked once per engine)."""
        if engine not in self._types:
            child = engine.evaluate(self.aggregate.child, Version.NEW)
            self._types[engine] = agg.result_types(self.aggregate, child)
        return self._types[engine]

    def stored_rows(self, engine: DeltaEngine) -> DataFrame:
        """Every group's stored row, from the input as it is now (a full refresh)."""
        types = self.types(engine)
        child = engine.evaluate(self.aggregate.child, Version.NEW)
        state = agg.group_state(self.aggregate, child, types, positive=True)
        rows = self.with_visible(state, types)
        if not self.counters:
            return rows
        return _with_counters(rows, agg.value_counters(self.aggregate, child))

    def state_change(self, engine: DeltaEngine) -> DataFrame:
        """The state of the input's change, per changed group (with deleted extremes), and
        the change of its value counters (rows of ``mv_distinct`` > 0)."""
        change = engine.delta(self.aggregate.child)
        types = self.types(engine)
        state = agg.group_state(self.aggregate, change, types, positive=False, change=True)
        if not self.counters:
            return state
        state = state.select(*state.columns, *self._no_counter(types))
        counters = agg.value_counters(self.aggregate, change, change=True)
        return state.unionByName(counters, allowMissingColumns=True)

    def _no_counter(self, types: agg.ResultTypes) -> list[Column]:
        """A group's row's counter columns: ``mv_distinct`` 0, the others NULL."""
        if not self.counters:
            return []
        values = [
            F.lit(None).cast(t).alias(agg.value_column(j)) for j, t in enumerate(types.values)
        ]
        return [
            F.lit(0).alias(KIND),
            *values,
            F.lit(None).cast("long").alias(agg.VALUE_COUNT_COLUMN),
        ]

    def with_visible(
        self, state: DataFrame, types: agg.ResultTypes, carry: tuple[str, ...] = ()
    ) -> DataFrame:
        """``state`` (keys and state columns) as stored rows: the visible columns first,
        then the storage's hidden columns, then the columns ``carry`` of ``state``."""
        node = self.aggregate
        keys = [F.col(k).alias(o) for k, o in zip(self.keys, node.key_outputs, strict=True)]
        rows = state.select(*state.columns, *keys, *agg.call_values(node, types))
        exists = F.col(COUNT_COLUMN) > 0 if node.keys else F.lit(True)
        if self.having is not None:
            exists = exists & F.coalesce(spark_expression(self.having), F.lit(False))
        rows = rows.withColumn(VISIBLE_COLUMN, exists)
        # CASE WHEN: a hidden group's expressions are not evaluated (they may fail, e.g. a
        # division by a zero count, exactly where the query's HAVING would not evaluate them).
        visible = [
            F.when(F.col(VISIBLE_COLUMN), spark_expression(e)).alias(c)
            for e, c in zip(
                self.project.expressions,
                storage_columns(len(self.project.outputs)),
                strict=True,
            )
        ]
        hidden = [VISIBLE_COLUMN, *self.keys, *self.state]
        return rows.select(
            *visible,
            *(F.col(c) for c in hidden),
            *self._no_counter(types),
            *(F.col(c) for c in carry),
        )

    def merged(
        self, stored: DataFrame, change: DataFrame, engine: DeltaEngine, extra: list[str]
    ) -> DataFrame:
        """New stored rows of the groups in ``stored`` (rows of the touched buckets) and
        ``change`` (``state_change``), with the previous visible columns (prefix ``old_``)
        for counting what the view shows differently; ``extra`` columns (the bucket) are
        group-wise constant and carried along; value counters (``mv_distinct`` > 0) are
        merged rows of their own."""
        types = self.types(engine)
        counters = None
        if self.counters:
            is_group = F.col(KIND) == 0
            counters = self._merge_counters(stored.where(~is_group), change.where(~is_group), extra)
            stored = stored.where(is_group)
            change = change.where(is_group).drop(*self.counters)
            change = change.unionByName(
                self._transitions(counters, extra, types), allowMissingColumns=True
            )
        groups = self._merge_states(stored, change, extra, types)
        kept = groups.where(~F.col(RECOMPUTE))
        recompute = groups.where(F.col(RECOMPUTE))
        redone = self._recomputed(recompute, engine, types)
        old_columns = [c for c in groups.columns if c.startswith(OLD)]
        carried = [*self.keys, *extra, *old_columns]
        state = kept.select(*carried, *self.state).unionByName(redone.select(*carried, *self.state))
        rows = self.with_visible(state, types, (*extra, *old_columns))
        return rows if counters is None else _with_counters(rows, counters)

    def _merge_counters(self, stored: DataFrame, change: DataFrame, extra: list[str]) -> DataFrame:
        """Each value counter of the touched groups: ``c_new = c_old + Δc``, with ``c_old``
        as ``old_mv_vn``."""
        count = agg.VALUE_COUNT_COLUMN
        key = [*self.keys, *extra, *self.counters[:-1]]  # ... mv_distinct, mv_v…
        zero = F.lit(0).cast("long")
        old = stored.select(*key, F.col(count).alias(OLD + count), zero.alias(CHANGE + count))
        new = change.select(*key, zero.alias(OLD + count), F.col(count).alias(CHANGE + count))
        sums = [F.sum(c).alias(c) for c in (OLD + count, CHANGE + count)]
        merged = old.unionByName(new).groupBy(*key).agg(*sums)
        return merged.select(
            *key, OLD + count, (F.col(OLD + count) + F.col(CHANGE + count)).alias(count)
        )

    def _transitions(
        self, counters: DataFrame, extra: list[str], types: agg.ResultTypes
    ) -> DataFrame:
        """Per group of ``counters`` (``_merge_counters``), the change of its distinct counts
        and sums: with ``t(v) = [c_new(v) > 0] − [c_old(v) > 0]``, ``Δn = Σ t(v)`` and
        ``Δs = Σ v·t(v)`` over the values of the call's argument."""
        count = agg.VALUE_COUNT_COLUMN
        present_now = F.when(F.col(count) > 0, 1).otherwise(0)
        present_before = F.when(F.col(OLD + count) > 0, 1).otherwise(0)
        crossing = (present_now - present_before).cast("long")
        changes = []
        for index, call in enumerate(self.aggregate.calls):
            if not agg.counts_values(call):
                continue
            j = agg.distinct_argument_of(self.aggregate, call)
            mine = F.col(KIND) == j + 1
            counted = F.sum(F.when(mine, crossing).otherwise(0)).cast("long")
            changes.append(counted.alias(agg.count_column(index)))
            sum_type = types.sums[index]
            if sum_type is not None:
                value = agg.signed(F.col(agg.value_column(j)), crossing, sum_type)
                summed = F.coalesce(F.sum(F.when(mine, value)), F.lit(0)).cast(sum_type)
                changes.append(summed.alias(agg.sum_column(index)))
        return counters.groupBy(*self.keys, *extra).agg(*changes)

    def _merge_states(
        self, stored: DataFrame, change: DataFrame, extra: list[str], types: agg.ResultTypes
    ) -> DataFrame:
        """One row per group: the previous state and visible columns (``old_…``, NULL for a
        new group), the new state of counters, sums and extremes, and whether the group must
        be recomputed."""
        previous = [*self.state, *storage_columns(len(self.project.outputs)), VISIBLE_COLUMN]
        change_columns = [c for c in change.columns if c not in self.keys and c not in extra]
        old_rows = stored.select(
            *self.keys,
            *extra,
            *(F.col(c).alias(OLD + c) for c in previous),
            *(
                F.lit(None).cast(change.schema[c].dataType).alias(CHANGE + c)
                for c in change_columns
            ),
        )
        new_rows = change.select(
            *self.keys,
            *extra,
            *(F.lit(None).cast(stored.schema[c].dataType).alias(OLD + c) for c in previous),
            *(F.col(c).alias(CHANGE + c) for c in change_columns),
        )
        values = [OLD + c for c in previous] + [CHANGE + c for c in change_columns]
        groups = old_rows.unionByName(new_rows).groupBy(*self.keys, *extra)
        # One stored row and at most one change row per group: first(…, ignorenulls) picks
        # each side's value.
        merged = groups.agg(*(F.first(c, ignorenulls=True).alias(c) for c in values))
        return merged.select(
            *self.keys, *extra, *(OLD + c for c in previous), *self._new_state(types)
        )

    def _new_state(self, types: agg.ResultTypes) -> list[Column]:
        """``state_old + state(Δ)`` per state column (for a distinct count or sum, ``Δ`` is
        its ``_transitions``), and the recompute flag (a changed group whose extreme may be
        deleted)."""
        zero = F.lit(0)

        def both(name: str) -> tuple[Column, Column]:
            return F.col(OLD + name), F.col(CHANGE + name)

        old_count, delta_count = both(COUNT_COLUMN)
        columns = [
            (F.coalesce(old_count, zero) + F.coalesce(delta_count, zero)).alias(COUNT_COLUMN)
        ]
        recompute: list[Column] = []
        for index, call in enumerate(self.aggregate.calls):
            if call.argument is None:
                continue
            if call.function in ("min", "max"):
                old, inserted = both(agg.extreme_column(index))
                removed = F.col(CHANGE + agg.removed_extreme_column(index))
                closer = F.least if call.function == "min" else F.greatest
                beyond = removed <= old if call.function == "min" else removed >= old
                recompute.append(removed.isNotNull() & (old.isNull() | beyond))
                columns.append(closer(old, inserted).alias(agg.extreme_column(index)))
            else:
                name = agg.count_column(index)
                old, change = both(name)
                columns.append((F.coalesce(old, zero) + F.coalesce(change, zero)).alias(name))
                if call.function in ("sum", "avg"):
                    name = agg.sum_column(index)
                    old, change = both(name)
                    total = F.coalesce(old, zero) + F.coalesce(change, zero)
                    sum_type = types.sums[index]
                    assert sum_type is not None  # SUM and AVG keep their sum
                    columns.append(total.cast(sum_type).alias(name))
        flag = reduce(lambda a, b: a | b, recompute, F.lit(False))
        return [*columns, F.coalesce(flag, F.lit(False)).alias(RECOMPUTE)]

    def _recomputed(
        self, groups: DataFrame, engine: DeltaEngine, types: agg.ResultTypes
    ) -> DataFrame:
        """``groups`` (keys and carried columns) with their state recomputed from the input
        as it is now; a group without rows any more gets a zero count."""
        node = self.aggregate
        child = engine.evaluate(node.child, Version.NEW)
        if node.keys:
            same = [
                spark_expression(key).eqNullSafe(F.col(k))
                for key, k in zip(node.keys, self.keys, strict=True)
            ]
            child = child.join(
                groups.select(*self.keys), reduce(lambda a, b: a & b, same), "left_semi"
            )
        state = agg.group_state(node, child, types, positive=True)
        renamed = state.select(*(F.col(c).alias("__r_" + c) for c in state.columns))
        condition = reduce(
            lambda a, b: a & b,
            [F.col(k).eqNullSafe(F.col("__r_" + k)) for k in self.keys],
            F.lit(True),
        )
        joined = groups.drop(*self.state).join(renamed, condition, "left")
        recomputed = [
            (
                F.coalesce(F.col("__r_" + c), F.lit(0)) if c == COUNT_COLUMN else F.col("__r_" + c)
            ).alias(c)
            for c in self.state
        ]
        return joined.select(*(c for c in groups.columns if c not in self.state), *recomputed)


def _with_counters(groups: DataFrame, counters: DataFrame) -> DataFrame:
    """The groups' stored rows, then the value counters' (not visible; the group's other
    columns NULL)."""
    hidden = counters.withColumn(VISIBLE_COLUMN, F.lit(False))
    return groups.unionByName(hidden, allowMissingColumns=True)


def aggregate_view(root: Node | None) -> AggregateView | None:
    """``root`` as an aggregate view, when its top is ``π(σ?(γ(…)))``."""
    if not isinstance(root, Project):
        return None
    below = root.child
    if isinstance(below, Filter) and isinstance(below.child, Aggregate):
        return AggregateView(below.child, below.predicate, root)
    return AggregateView(below, None, root) if isinstance(below, Aggregate) else None
