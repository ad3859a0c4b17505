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

Every DataFrame here is one Spark SQL query (``DeltaEngine.query``) over the refresh's
relations and temporary views: built column by column through the DataFrame API, each
column, alias and select is a py4j round trip and a new analysis of the plan (a merge cost
about 1,700 round trips, now a handful).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp

from sparkmv import frames
from sparkmv.analyze.relational import Aggregate, Filter, Node, Project, Scan
from sparkmv.config import ansi_mode
from sparkmv.delta import aggregate as agg
from sparkmv.delta.engine import DeltaEngine, Version, sql_expression
from sparkmv.identifiers import quote_identifier as q
from sparkmv.plan.merge import Merge
from sparkmv.storage.stored_columns import (
    BUCKET_COLUMN,
    COUNT_COLUMN,
    VISIBLE_COLUMN,
    storage_columns,
)

KIND = agg.DISTINCT_ARGUMENT_COLUMN

OLD = "old_"  # prefix of a stored group's previous state and visible columns in a merge
CHANGE = "delta_"  # prefix of the change's state columns in a merge
RECOMPUTE = "__recompute"


_RESULT_TYPES: dict[tuple[tuple[str, ...], str, str], agg.ResultTypes] = {}
"""``agg.result_types`` by the calls (SQL), their input's schema (JSON) and ANSI mode: all
they depend on (ANSI mode decides which sums can be kept exact). Probing them is a Spark
analysis of about twenty py4j round trips; the key costs a few, and is the same at every
refresh of a view whose base tables keep their schemas."""
_MAX_RESULT_TYPES = 256


@dataclass(frozen=True)
class CompiledTypes:
    """What an aggregate view's refresh asks Spark's analyzer for and that only the view's
    query, its base tables' schemas and ANSI mode decide (its ``schemas_key``): the calls'
    result types, and the schema of its stored rows."""

    result_types: agg.ResultTypes
    stored_schema: T.StructType


_COMPILED: dict[str, CompiledTypes] = {}
"""``CompiledTypes`` by the view's ``schemas_key``: a refresh of a view whose key was seen
in this process (or stored with the view, ``remember_compiled_types``) analyzes neither its
input nor its stored rows to learn their types (two analyses of queries over the base
tables, and their file listings)."""


def compiled_types(key: str) -> CompiledTypes | None:
    """The types compiled under ``key`` in this process (or remembered from a view's
    metadata, ``remember_compiled_types``); None when none are."""
    return _COMPILED.get(key) if key else None


def compiled_types_json(key: str) -> str:
    """The types compiled under ``key`` as JSON, with the key ("" when none are)."""
    compiled = _COMPILED.get(key) if key else None
    if compiled is None:
        return ""
    types = compiled.result_types
    return json.dumps(
        {
            "key": key,
            "calls": [t.json() for t in types.calls],
            "sums": [None if t is None else t.json() for t in types.sums],
            "values": [t.json() for t in types.values],
            "stored": compiled.stored_schema.json(),
        }
    )


def remember_compiled_types(key: str, text: str) -> None:
    """Cache the types of ``text`` (``compiled_types_json``, as stored with a view) when
    they were compiled under ``key``: the view's query and base schemas are as they were."""
    if not key or not text or key in _COMPILED:
        return
    stored = json.loads(text)
    if stored.get("key") != key:
        return
    parse = T._parse_datatype_json_string
    types = agg.ResultTypes(
        tuple(parse(t) for t in stored["calls"]),
        tuple(None if t is None else parse(t) for t in stored["sums"]),
        tuple(parse(t) for t in stored["values"]),
    )
    schema = parse(stored["stored"])
    assert isinstance(schema, T.StructType)
    _remember(key, CompiledTypes(types, schema))


def _remember(key: str, compiled: CompiledTypes) -> None:
    if len(_COMPILED) >= _MAX_RESULT_TYPES:
        _COMPILED.clear()
    _COMPILED[key] = compiled


def _items(names: list[str], prefix: str = "") -> list[str]:
    """A select list's items: the (quoted) columns ``names``, qualified by ``prefix``."""
    return [prefix + q(name) for name in names]


def _nulls(names: list[str]) -> list[str]:
    """Untyped NULLs named ``names`` (a UNION ALL types them from its other branches)."""
    return [f"NULL AS {q(name)}" for name in names]


def _select(items: list[str]) -> str:
    return ", ".join(items)


def _all(conditions: list[str]) -> str:
    """The conjunction of ``conditions`` (TRUE when there are none)."""
    return " AND ".join(conditions) if conditions else "TRUE"


@dataclass(frozen=True)
class AggregateView:
    aggregate: Aggregate
    having: exp.Expr | None
    project: Project
    compiled_key: str = ""  # the view's ``schemas_key`` ("": its types are not cached)
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

    @property
    def visible(self) -> list[str]:
        """The visible columns ``c0 …``."""
        return storage_columns(len(self.project.outputs))

    def storage(self) -> list[str]:
        """The stored columns, in order."""
        return [*self.visible, VISIBLE_COLUMN, *self.keys, *self.state, *self.counters]

    def kept_sql(self) -> str:
        """Whether a merged row stays stored: a group while its ``COUNT(*)`` is positive (a
        global aggregate's row always), a value counter while its count is (Spark SQL)."""
        group = f"{q(COUNT_COLUMN)} > 0" if self.aggregate.keys else "TRUE"
        if not self.counters:
            return group
        count = q(agg.VALUE_COUNT_COLUMN)
        return f"CASE WHEN {q(KIND)} = 0 THEN {group} ELSE {count} > 0 END"

    def types(self, engine: DeltaEngine) -> agg.ResultTypes:
        """The calls' result types (each probe is a Spark analysis: asked once per engine,
        and once per input schema, ``_RESULT_TYPES``)."""
        compiled = _COMPILED.get(self.compiled_key) if self.compiled_key else None
        if compiled is not None:
            return compiled.result_types
        if engine not in self._types:
            child = _frame(engine, engine.value(self.aggregate.child, Version.NEW).sql)
            ansi = ansi_mode(engine.views.spark)
            calls = tuple(call.sql() for call in self.aggregate.calls)
            key = (calls, frames.schema(child).json(), ansi)
            found = _RESULT_TYPES.get(key)
            if found is None:
                found = agg.result_types(self.aggregate, child)
                if len(_RESULT_TYPES) >= _MAX_RESULT_TYPES:
                    _RESULT_TYPES.clear()
                _RESULT_TYPES[key] = found
            self._types[engine] = found
        return self._types[engine]

    def stored_rows(self, engine: DeltaEngine) -> DataFrame:
        """Every group's stored row, from the input as it is now (a full refresh); its
        types are compiled under ``compiled_key`` (``CompiledTypes``), so that the next
        refresh, in this process or from the view's metadata, need not analyze them."""
        types = self.types(engine)
        child = engine.value(self.aggregate.child, Version.NEW).subquery("r")
        state = agg.group_state_sql(self.aggregate, child, types, positive=True)
        rows = self.with_visible_sql(f"({state}) AS {q('s')}", types)
        if self.counters:
            counters = f"({agg.value_counters_sql(self.aggregate, child)}) AS {q('v')}"
            rows = f"{rows} UNION ALL {self._counter_rows(counters)}"
        frame = _frame(engine, rows)
        if self.compiled_key and self.compiled_key not in _COMPILED:
            _remember(self.compiled_key, CompiledTypes(types, frame.schema))  # analysis only
        return frame

    def state_change(self, engine: DeltaEngine) -> DataFrame:
        """The state of the input's change, per changed group (with deleted extremes), and
        the change of its value counters (rows of ``mv_distinct`` > 0)."""
        node = self.aggregate
        change = engine.change(node.child).subquery("d")
        types = self.types(engine)
        state = agg.group_state_sql(node, change, types, positive=False, change=True)
        if not self.counters:
            return _frame(engine, state)
        columns = agg.state_columns(node, change=True)
        counters = agg.value_counters_sql(node, change, change=True)
        groups = f"SELECT *, {_select(self._no_counter())} FROM ({state}) AS {q('s')}"
        values = [*_items(self.keys), *_nulls(columns), *_items(self.counters)]
        counted = f"SELECT {_select(values)} FROM ({counters}) AS {q('v')}"
        return _frame(engine, f"{groups} UNION ALL {counted}")

    def _no_counter(self) -> list[str]:
        """A group's row's counter columns: ``mv_distinct`` 0, the others NULL (SQL items;
        the values' NULLs are typed by the counters' rows they are united with)."""
        if not self.counters:
            return []
        values = [agg.value_column(j) for j in range(len(self.counters) - 2)]
        return [
            f"0 AS {q(KIND)}",
            *_nulls(values),
            f"CAST(NULL AS BIGINT) AS {q(agg.VALUE_COUNT_COLUMN)}",
        ]

    def _counter_rows(self, counters: str, carry: list[str] | None = None) -> str:
        """The value counters of the FROM item ``counters`` as stored rows: not visible, the
        group's other columns NULL, then ``carry`` (items)."""
        items = [
            *_nulls(self.visible),
            f"FALSE AS {q(VISIBLE_COLUMN)}",
            *_items(self.keys),
            *_nulls(self.state),
            *_items(self.counters),
            *(carry or []),
        ]
        return f"SELECT {_select(items)} FROM {counters}"

    def with_visible_sql(
        self, state: str, types: agg.ResultTypes, carry: tuple[str, ...] = ()
    ) -> str:
        """The FROM item ``state`` (keys and state columns) as stored rows: the visible
        columns first, then the storage's hidden columns, then the columns ``carry`` of
        ``state`` (a Spark SQL query)."""
        node = self.aggregate
        keys = [f"{q(k)} AS {q(o)}" for k, o in zip(self.keys, node.key_outputs, strict=True)]
        values = _select(["*", *keys, *agg.call_values_sql(node, types)])
        exists = f"{q(COUNT_COLUMN)} > 0" if node.keys else "TRUE"
        if self.having is not None:
            exists = f"{exists} AND coalesce(({sql_expression(self.having)}), FALSE)"
        # CASE WHEN: a hidden group's expressions are not evaluated (they may fail, e.g. a
        # division by a zero count, exactly where the query's HAVING would not evaluate them).
        visible = [
            f"CASE WHEN {q(VISIBLE_COLUMN)} THEN ({sql_expression(e)}) END AS {q(c)}"
            for e, c in zip(self.project.expressions, self.visible, strict=True)
        ]
        hidden = _items([VISIBLE_COLUMN, *self.keys, *self.state])
        items = [*visible, *hidden, *self._no_counter(), *_items(list(carry))]
        return (
            f"SELECT {_select(items)} FROM (SELECT *, ({exists}) AS {q(VISIBLE_COLUMN)}"
            f" FROM (SELECT {values} FROM {state}) AS {q('a')}) AS {q('b')}"
        )

    def merged(
        self, stored: DataFrame, change: DataFrame, engine: DeltaEngine, extra: list[str]
    ) -> DataFrame:
        """New stored rows of the groups in ``stored`` (rows of the touched buckets) and
        ``change`` (``state_change``), with the previous visible columns (prefix ``old_``)
        for counting what the view shows differently; ``extra`` columns (the bucket) are
        group-wise constant and carried along; value counters (``mv_distinct`` > 0) are
        merged rows of their own. One Spark SQL query (``merged_sql``)."""
        sql = self.merged_sql(engine.view_of(stored), engine.view_of(change), engine, extra)
        return _frame(engine, sql)

    def merged_sql(self, stored: str, change: str, engine: DeltaEngine, extra: list[str]) -> str:
        """``merged`` as Spark SQL over the (quoted) relations ``stored`` and ``change``.

        Its steps are nested subqueries, each read once; only the value counters, read by
        two steps, and the states of an extreme's recompute, read by three, are CTEs
        (``_Steps``)."""
        types = self.types(engine)
        steps = _Steps()
        group_rows = ""
        old_columns = [OLD + c for c in self._previous()]
        counters = transitions = None
        if self.counters:
            counters = steps.cte("counters", self._merge_counters(stored, change, extra))
            transitions = steps.subquery("transitions", self._transitions(counters, extra, types))
            group_rows = f" WHERE {q(KIND)} = 0"
        groups = self._merge_states(stored, change, extra, types, group_rows, transitions)
        states = self._new_state(steps.subquery("groups", groups), extra, types)
        state = self._recomputed(states, engine, extra, types, steps)
        carry = (*extra, *old_columns)
        rows = self.with_visible_sql(steps.subquery("state", state), types, carry)
        if counters is not None:
            count = agg.VALUE_COUNT_COLUMN
            old = [*_items(extra), *_nulls(old_columns), q(OLD + count)]
            counter_rows = self._counter_rows(counters, old)
            groups = f"SELECT *, CAST(NULL AS BIGINT) AS {q(OLD + count)} FROM ({rows}) AS {q('g')}"
            rows = f"{groups} UNION ALL {counter_rows}"
        return steps.query(rows)

    def _merge_counters(self, stored: str, change: str, extra: list[str]) -> str:
        """Each value counter of the touched groups: ``c_new = c_old + Δc``, with ``c_old``
        as ``old_mv_vn``."""
        count = agg.VALUE_COUNT_COLUMN
        key = _select(_items([*self.keys, *extra, *self.counters[:-1]]))  # …, mv_distinct, mv_v…
        old, delta = q(OLD + count), q(CHANGE + count)
        zero = "CAST(0 AS BIGINT)"
        sides = (
            f"SELECT {key}, {q(count)} AS {old}, {zero} AS {delta} FROM {stored}"
            f" WHERE {q(KIND)} <> 0 UNION ALL"
            f" SELECT {key}, {zero} AS {old}, {q(count)} AS {delta} FROM {change}"
            f" WHERE {q(KIND)} <> 0"
        )
        return (
            f"SELECT {key}, sum({old}) AS {old}, sum({old}) + sum({delta}) AS {q(count)}"
            f" FROM ({sides}) AS {q('c')} GROUP BY {key}"
        )

    def _transitions(self, counters: str, extra: list[str], types: agg.ResultTypes) -> str:
        """Per group of the FROM item ``counters`` (``_merge_counters``), the change of its
        distinct counts and sums: with ``t(v) = [c_new(v) > 0] − [c_old(v) > 0]``,
        ``Δn = Σ t(v)`` and ``Δs = Σ v·t(v)`` over the values of the call's argument."""
        count = agg.VALUE_COUNT_COLUMN
        present_now = f"CASE WHEN {q(count)} > 0 THEN 1 ELSE 0 END"
        present_before = f"CASE WHEN {q(OLD + count)} > 0 THEN 1 ELSE 0 END"
        crossing = f"CAST(({present_now}) - ({present_before}) AS BIGINT)"
        changes = []
        for index, call in enumerate(self.aggregate.calls):
            if not agg.counts_values(call):
                continue
            j = agg.distinct_argument_of(self.aggregate, call)
            mine = f"{q(KIND)} = {j + 1}"
            counted = f"CAST(sum(CASE WHEN {mine} THEN {crossing} ELSE 0 END) AS BIGINT)"
            changes.append(f"{counted} AS {q(agg.count_column(index))}")
            sum_type = types.sums[index]
            if sum_type is not None:
                value = agg.signed_sql(q(agg.value_column(j)), f"({crossing})", sum_type)
                summed = f"coalesce(sum(CASE WHEN {mine} THEN {value} END), 0)"
                changes.append(
                    f"CAST({summed} AS {sum_type.simpleString()}) AS {q(agg.sum_column(index))}"
                )
        group = _select(_items([*self.keys, *extra]))
        return f"SELECT {group}, {_select(changes)} FROM {counters} GROUP BY {group}"

    def _merge_states(
        self,
        stored: str,
        change: str,
        extra: list[str],
        types: agg.ResultTypes,
        where: str,
        transitions: str | None,
    ) -> str:
        """One row per group (its rows in ``stored`` and ``change`` selected by ``where``,
        and with value counters its rows of the FROM item ``transitions``): the previous
        state and visible columns (``old_…``, NULL for a new group) and the change's state
        columns (``delta_…``)."""
        previous = self._previous()
        change_columns = agg.state_columns(self.aggregate, change=True)
        group = _items([*self.keys, *extra])
        old_rows = [
            *group,
            *(f"{q(c)} AS {q(OLD + c)}" for c in previous),
            *_nulls([CHANGE + c for c in change_columns]),
        ]
        new_rows = [
            *group,
            *_nulls([OLD + c for c in previous]),
            *(f"{q(c)} AS {q(CHANGE + c)}" for c in change_columns),
        ]
        sides = [
            f"SELECT {_select(old_rows)} FROM {stored}{where}",
            f"SELECT {_select(new_rows)} FROM {change}{where}",
        ]
        if transitions is not None:
            distinct = self._distinct_state()
            counted = [
                *group,
                *_nulls([OLD + c for c in previous]),
                *(
                    f"{q(c)} AS {q(CHANGE + c)}" if c in distinct else f"NULL AS {q(CHANGE + c)}"
                    for c in change_columns
                ),
            ]
            sides.append(f"SELECT {_select(counted)} FROM {transitions}")
        values = [OLD + c for c in previous] + [CHANGE + c for c in change_columns]
        # One stored row and at most one change row per group (and its transitions, whose
        # columns the change row leaves NULL): first(…, ignorenulls) picks each side's value.
        firsts = [f"first({q(c)}, TRUE) AS {q(c)}" for c in values]
        union = " UNION ALL ".join(sides)
        return (
            f"SELECT {_select([*group, *firsts])} FROM ({union}) AS {q('u')}"
            f" GROUP BY {_select(group)}"
        )

    def _distinct_state(self) -> set[str]:
        """The state columns of the calls maintained from value counters."""
        columns = set()
        for index, call in enumerate(self.aggregate.calls):
            if agg.counts_values(call):
                columns.add(agg.count_column(index))
                columns.add(agg.sum_column(index))
        return columns

    def _new_state(self, groups: str, extra: list[str], types: agg.ResultTypes) -> str:
        """``state_old + state(Δ)`` per state column (for a distinct count or sum, ``Δ`` is
        its ``_transitions``), and the recompute flag (a changed group whose extreme may be
        deleted), per group of the FROM item ``groups`` (``_merge_states``)."""

        def both(name: str) -> tuple[str, str]:
            return q(OLD + name), q(CHANGE + name)

        def total(name: str) -> str:
            old, change = both(name)
            return f"coalesce({old}, 0) + coalesce({change}, 0)"

        columns = [f"{total(COUNT_COLUMN)} AS {q(COUNT_COLUMN)}"]
        recompute: list[str] = []
        for index, call in enumerate(self.aggregate.calls):
            if call.argument is None:
                continue
            if call.function in ("min", "max"):
                old, inserted = both(agg.extreme_column(index))
                removed = q(CHANGE + agg.removed_extreme_column(index))
                closer = "least" if call.function == "min" else "greatest"
                beyond = f"{removed} <= {old}" if call.function == "min" else f"{removed} >= {old}"
                recompute.append(f"({removed} IS NOT NULL AND ({old} IS NULL OR {beyond}))")
                extreme = q(agg.extreme_column(index))
                columns.append(f"{closer}({old}, {inserted}) AS {extreme}")
            else:
                name = agg.count_column(index)
                columns.append(f"{total(name)} AS {q(name)}")
                if call.function in ("sum", "avg"):
                    name = agg.sum_column(index)
                    sum_type = types.sums[index]
                    assert sum_type is not None  # SUM and AVG keep their sum
                    columns.append(f"CAST({total(name)} AS {sum_type.simpleString()}) AS {q(name)}")
        flag = " OR ".join(["FALSE", *recompute])
        previous = [OLD + c for c in self._previous()]
        items = [
            *_items([*self.keys, *extra, *previous]),
            *columns,
            f"coalesce({flag}, FALSE) AS {q(RECOMPUTE)}",
        ]
        return f"SELECT {_select(items)} FROM {groups}"

    def _recomputed(
        self,
        states: str,
        engine: DeltaEngine,
        extra: list[str],
        types: agg.ResultTypes,
        steps: _Steps,
    ) -> str:
        """The groups of the query ``states`` (``_new_state``: keys, carried columns, state
        and the flag) with the flagged ones' state recomputed from the input as it is now (a
        group without rows any more gets a zero count); adds the CTEs it reads to
        ``steps``."""
        node = self.aggregate
        carried_names = [*self.keys, *extra, *(OLD + c for c in self._previous())]
        kept_columns = _select([*_items(carried_names), *_items(self.state)])
        if not any(call.function in ("min", "max") for call in node.calls):
            # no extreme: no group is ever recomputed
            return f"SELECT {kept_columns} FROM {steps.subquery('states', states)}"
        read = steps.cte("states", states)
        child = engine.value(node.child, Version.NEW).subquery("r")
        if node.keys:
            redo = f"(SELECT {_select(_items(self.keys))} FROM {read} WHERE {q(RECOMPUTE)})"
            same = [
                f"({sql_expression(key)}) <=> {q('g')}.{q(k)}"
                for key, k in zip(node.keys, self.keys, strict=True)
            ]
            child = f"{child} LEFT SEMI JOIN {redo} AS {q('g')} ON {_all(same)}"
            child = f"(SELECT {q('r')}.* FROM {child}) AS {q('rows')}"
        recomputed = agg.group_state_sql(node, child, types, positive=True)
        condition = _all([f"{q('s')}.{q(k)} <=> {q('n')}.{q(k)}" for k in self.keys])
        columns = [
            (f"coalesce({q('n')}.{q(c)}, 0)" if c == COUNT_COLUMN else f"{q('n')}.{q(c)}")
            + f" AS {q(c)}"
            for c in self.state
        ]
        carried_s = _items(carried_names, f"{q('s')}.")
        redone = (
            f"SELECT {_select([*carried_s, *columns])} FROM {read} AS {q('s')}"
            f" LEFT JOIN ({recomputed}) AS {q('n')} ON {condition}"
            f" WHERE {q('s')}.{q(RECOMPUTE)}"
        )
        return f"SELECT {kept_columns} FROM {read} WHERE NOT {q(RECOMPUTE)} UNION ALL {redone}"

    def _previous(self) -> list[str]:
        """The columns a merge carries from a group's stored row (prefixed ``old_``)."""
        return [*self.state, *self.visible, VISIBLE_COLUMN]


class _Steps:
    """The steps of one query: each a subquery where it is read (``subquery``), or, where it
    is read in several places, a CTE (``cte``). Spark analyzes the plan again for every
    DataFrame built on it (the merge's repartition, observation, selection and write), and
    each analysis inlines every reference to a CTE, renewing the relations under it
    (``InlineCTE`` and ``DeduplicateRelations`` in ``CheckAnalysis``); a subquery costs none
    of that."""

    def __init__(self) -> None:
        self._ctes: dict[str, str] = {}

    def subquery(self, name: str, sql: str) -> str:
        """The FROM item of the step ``name``, read in one place: its query, as ``name``."""
        return f"({sql}) AS {q(name)}"

    def cte(self, name: str, sql: str) -> str:
        """The FROM item of the step ``name``, read in several places: a CTE's name."""
        self._ctes[name] = sql
        return q(name)

    def query(self, rows: str) -> str:
        """``rows`` with the CTEs its steps read, in the order they were added (each after
        the ones it reads)."""
        if not self._ctes:
            return rows
        ctes = ", ".join(f"{q(name)} AS ({sql})" for name, sql in self._ctes.items())
        return f"WITH {ctes} {rows}"


def _frame(engine: DeltaEngine, sql: str) -> DataFrame:
    """The DataFrame of a query over ``engine``'s relations (``DeltaEngine.query(sql).frame``,
    in one py4j round trip)."""
    return frames.sql(engine.views.spark, sql)


def aggregate_view(root: Node | None) -> AggregateView | None:
    """``root`` as an aggregate view, when its top is ``π(σ?(γ(…)))``."""
    if not isinstance(root, Project):
        return None
    below = root.child
    if isinstance(below, Filter) and isinstance(below.child, Aggregate):
        return AggregateView(below.child, below.predicate, root)
    return AggregateView(below, None, root) if isinstance(below, Aggregate) else None


def sums_its_change(root: Node | None) -> bool:
    """Whether ``root`` is an aggregate view over one table whose calls are all ``COUNT``,
    ``SUM`` or ``AVG`` without DISTINCT, below only filters and projections: then
    ``Δstate = γ(σπ(ΔR))`` sums each change row's weight times its values, and is the same
    over any representation of ``ΔR`` as a Z-set. Its change need not be consolidated
    (``relation.net_change``): rows that consolidation would cancel add zero to their
    group, and a group left with ``COUNT(*)`` 0 is dropped as always."""
    view = aggregate_view(root)
    if view is None or any(
        call.distinct or call.function not in ("count", "sum", "avg")
        for call in view.aggregate.calls
    ):
        return False
    below: Node = view.aggregate.child
    while isinstance(below, (Filter, Project)):
        below = below.child
    return isinstance(below, Scan)


def group_merge(view: AggregateView, engine: DeltaEngine) -> Merge:
    """The merge of an aggregate view's storage: the touched buckets' groups get their new
    state and visible columns (``AggregateView.merged``); a group whose ``COUNT(*)``
    reaches zero is dropped (a global aggregate's one row stays). What is kept and the
    metrics are SQL text, so that a merge costs a few py4j round trips instead of one per
    column and operator."""
    schema = _stored_schema(view, engine)
    stored_row = _items([*view.storage(), BUCKET_COLUMN])
    kept = view.kept_sql()

    def merged(stored: DataFrame, change: DataFrame) -> DataFrame:
        return view.merged(stored, change, engine, [BUCKET_COLUMN])

    def kept_rows(merged: DataFrame) -> DataFrame:
        return frames.select(merged, stored_row, kept)

    return Merge(view.keys, schema, merged, _group_metrics(view), kept_rows)


def _stored_schema(view: AggregateView, engine: DeltaEngine) -> T.StructType:
    """The schema of ``view``'s stored rows: compiled (``CompiledTypes``), or analyzed and
    then compiled under the view's key."""
    compiled = _COMPILED.get(view.compiled_key) if view.compiled_key else None
    if compiled is not None:
        return compiled.stored_schema
    schema = view.stored_rows(engine).schema  # analysis only
    if view.compiled_key:
        _remember(view.compiled_key, CompiledTypes(view.types(engine), schema))
    return schema


def _group_metrics(view: AggregateView) -> tuple[str, ...]:
    """Visible rows inserted and deleted (a group whose visible values change counts as
    one of each), rows rewritten (groups and value counters), rows with a negative
    counter."""
    was, now = f"coalesce({q(OLD + VISIBLE_COLUMN)}, FALSE)", q(VISIBLE_COLUMN)
    same = " AND ".join(["TRUE", *(f"{q(c)} <=> {q(OLD + c)}" for c in view.visible)])
    unchanged = f"({was} AND {now} AND {same})"
    counters = [COUNT_COLUMN] + [
        agg.count_column(i)
        for i, call in enumerate(view.aggregate.calls)
        if agg.count_column(i) in view.state
    ]
    if view.counters:
        counters.append(agg.VALUE_COUNT_COLUMN)
    negative = " OR ".join(f"{q(c)} < 0" for c in counters)

    def count(condition: str) -> str:
        return f"sum(CASE WHEN {condition} THEN 1 ELSE 0 END)"

    return (
        count(f"{now} AND NOT {unchanged}"),
        count(f"{was} AND NOT {unchanged}"),
        count(f"({view.kept_sql()})"),
        count(f"({negative})"),
    )
