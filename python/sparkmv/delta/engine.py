"""``DeltaEngine``: evaluates the view IR over Z-sets, as of before or after the change, and
derives its change (docs/architecture.md).

Every relation is a Z-set (``Relation``: Spark SQL over the refresh's inputs, or a
DataFrame): its columns plus the weight ``WEIGHT``. A base table now is its rows with weight
1; as it was before the change it is ``R_old = R_new − ΔR``, i.e. ``R_new`` with ``+1``
united with ``ΔR`` negated — never a stored copy (issue: old states come from the current
table and the log). Z-sets need not be consolidated for the rules to be exact: selection,
projection and union are linear and joins bilinear in the weights (DBSP; Blakeley §5's
multiplicity counters), so the weights add up correctly.

The operator rules live one per module and are looked up in the ordered ``RULES`` registry
(``sparkmv.delta.rules``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from pyspark.sql import DataFrame
from sqlglot import exp

from sparkmv.analyze.ir import (
    Node,
    Recursive,
    RecursiveRef,
    Scan,
    scanned_tables,
    shared_above_negation,
    shared_nodes,
    walk,
)
from sparkmv.delta.relation import Relation, TempViews, net_change
from sparkmv.identifiers import quote_identifier
from sparkmv.zset import WEIGHT, column, materialized

KeyedColumns = tuple[str, tuple[str, ...]]
"""A base table and some of its columns."""
KeyProof = Callable[[KeyedColumns, KeyedColumns], bool]
"""Whether, at every key of the second table's change (on its columns), the first table's rows
(equal on its columns) are none before the change or none after it. A refresh passes the
proofs from metadata, never from decoded rows: ``plan/key_proofs.py`` (footer statistics);
others (a captured statement's predicate, declared keys) would plug in here."""


class Version(Enum):
    OLD = "old"  # the base tables before the change: R_new − ΔR
    NEW = "new"  # the base tables now


class LazyRows:
    """A base table's rows, read (made a DataFrame: a py4j call that lists its files) the
    first time a rule reads them, then the same DataFrame every time. A refresh whose rules
    never read the table as it is now (an aggregate's change, over a change that only
    inserts) never reads it."""

    def __init__(self, read: Callable[[], DataFrame]) -> None:
        self._read = read
        self._frame: DataFrame | None = None

    @property
    def frame(self) -> DataFrame:
        if self._frame is None:
            self._frame = self._read()
        return self._frame


@dataclass(frozen=True)
class BaseState:
    """A base table as one refresh sees it: its rows now, and its net change ΔR (a Z-set
    over the same columns, consolidated unless ``as_logged``) when it changed since the
    last refresh, with the change's rows as logged (before consolidation)."""

    rows: DataFrame | LazyRows | str  # or the qualified name of the catalog table, read when run
    change: DataFrame | None = None
    logged: DataFrame | None = None
    read: set[str] | None = None  # the columns the change keeps (``relation.net_change``)
    as_logged: bool = False  # ΔR need not be consolidated (``relation.net_change``)
    bytes: int = 0  # of its files, as listed (0: unknown); ranks a join's inputs by size

    def netted(self, logged: DataFrame | None = None) -> BaseState:
        """This state with its net change made from its logged rows (or from ``logged``,
        which then become its logged rows): ``relation.net_change``."""
        rows = self.logged if logged is None else logged
        assert rows is not None, "a base table without logged changes has no net change"
        return replace(self, logged=rows, change=net_change(rows, self.read, self.as_logged))


@dataclass
class Fixpoints:
    """The stored state of a view's recursive CTEs (``delta/recursive.py``), shared by the
    engines of one refresh: ``stored``, each fixpoint as the view's snapshot holds it (a
    consolidated Z-set in storage columns ``c0``, ``c1``, … and the weight), by the
    ``Recursive`` node's key; ``computed``, those this refresh computed, to store with its
    snapshot. ``analysis``: the engine only analyzes (types), so a fixpoint is its anchor's
    columns, no rows, and no iteration runs."""

    stored: dict[str, DataFrame] = field(default_factory=dict)
    computed: dict[str, DataFrame] = field(default_factory=dict)
    analysis: bool = False
    # Where each stored fixpoint is (its files), and the change ΔR of each one this refresh
    # computed, which the new snapshot may store beside links to those files.
    paths: dict[str, str] = field(default_factory=dict)
    changes: dict[str, DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class DeltaRule:
    """The rules of one operator: its value over Z-sets, its change, and the change's
    algebra as text (for EXPLAIN)."""

    operator: type
    evaluate: Callable[[Any, Version, DeltaEngine], Relation]
    delta: Callable[[Any, DeltaEngine], Relation]
    describe: Callable[[Any, Version | None, DeltaEngine], str]  # None: the delta


class DeltaEngine:
    """The rules over one refresh's base tables; ``screens``: per scan, the irrelevance
    filter its change passes before any rule above it sees it (``sparkmv.filter``).

    Used as a context manager: leaving it drops the temporary views its relations read
    (``relation.TempViews``); the DataFrames built meanwhile stay usable."""

    def __init__(
        self,
        tables: Mapping[str, BaseState],
        rules: tuple[DeltaRule, ...],
        views: TempViews,
        screens: Mapping[Scan, exp.Expr] | None = None,
        values: dict[tuple[int, Version], tuple[Node, Relation]] | None = None,
        fixpoints: Fixpoints | None = None,
        bindings: Mapping[int, Relation] | None = None,
        derived: dict[tuple[str, int], object] | None = None,
        proofs: KeyProof | None = None,
    ) -> None:
        self.tables = tables
        self.proofs = proofs
        self.fixpoints = Fixpoints() if fixpoints is None else fixpoints
        # Per ``RecursiveRef`` (by id): the Z-set it stands for in this engine (``bound``).
        self.bindings: Mapping[int, Relation] = bindings or {}
        self._rules = rules
        self.views = views
        self.screens: Mapping[Scan, exp.Expr] = screens or {}
        # Every ``evaluate`` result, by node identity (the node is kept, so its id stays
        # unique): the n terms of a join's change read the same n inputs.
        self._values = {} if values is None else values
        # Every ``change``, likewise: a subtree shared by several parents (an anti-join's
        # left input, an outer join's inner join) is derived once, its Spark jobs (DISTINCT's
        # and GROUP BY's counters) run once. Its own: changes depend on the screens.
        self._changes: dict[int, tuple[Node, Relation]] = {}
        self._analyzed: set[int] = set()  # nodes under a change asked for (``_shared``)
        self._shared: set[int] = set()  # nodes whose change is computed apart
        self._labels: dict[int, str] | None = None  # shared subtrees' names in ``describe``
        self._definitions: dict[tuple[int, Version | None], str] = {}
        self.memo: dict[tuple[str, int], Relation] = {}  # a rule's own results, by node
        # What a rule learned by analysis (e.g. an aggregate's result types), by node: the
        # same in every version, so shared with the engines made from this one.
        self.derived: dict[tuple[str, int], object] = {} if derived is None else derived

    def __enter__(self) -> DeltaEngine:
        return self

    def __exit__(self, *_: object) -> None:
        self.views.drop()

    def screened(self, screens: Mapping[Scan, exp.Expr]) -> DeltaEngine:
        """This engine with the scans' changes screened by ``screens`` (values are not
        screened: the two engines share them, and their temporary views)."""
        return DeltaEngine(
            self.tables,
            self._rules,
            self.views,
            screens,
            self._values,
            self.fixpoints,
            derived=self.derived,
            proofs=self.proofs,
        )

    def with_tables(self, tables: Mapping[str, BaseState]) -> DeltaEngine:
        """This engine over ``tables`` (the same rows, their changes read otherwise, e.g.
        observed): values as of NEW, which read rows only, are kept — but a recursive CTE's
        (and its readers'), which an incremental refresh computes from the stored fixpoint
        and the change."""
        values = {
            key: known
            for key, known in self._values.items()
            if key[1] is Version.NEW
            and not any(isinstance(node, (Recursive, RecursiveRef)) for node in walk(known[0]))
        }
        return DeltaEngine(
            tables,
            self._rules,
            self.views,
            self.screens,
            values,
            self.fixpoints,
            derived=self.derived,
            proofs=self.proofs,
        )

    def bound(self, bindings: Mapping[int, Relation], below: Node) -> DeltaEngine:
        """This engine with ``RecursiveRef``s bound to Z-sets (``bindings``, by id): an
        engine of its own for the nodes ``below`` (a recursive CTE's step), whose values and
        changes depend on the binding; the values of the nodes outside ``below`` are
        shared."""
        inside = {id(node) for node in walk(below)}
        values = {key: known for key, known in self._values.items() if key[0] not in inside}
        return DeltaEngine(
            self.tables,
            self._rules,
            self.views,
            self.screens,
            values,
            self.fixpoints,
            {**self.bindings, **bindings},
            self.derived,
            self.proofs,
        )

    def analyzing(self) -> DeltaEngine:
        """This engine for analysis only (column types): no fixpoint is iterated
        (``Fixpoints.analysis``); nothing is shared with this engine's values."""
        return DeltaEngine(
            self.tables, self._rules, self.views, self.screens, None, Fixpoints(analysis=True)
        )

    def relation(self, frame: DataFrame) -> Relation:
        """A DataFrame rule's result as a relation."""
        return Relation(self.views, frame=frame)

    def query(self, sql: str) -> Relation:
        """A SQL rule's result as a relation."""
        return Relation(self.views, sql=sql)

    def materialized(self, relation: Relation) -> Relation:
        """``relation`` computed now, by a job of its own (``zset.materialized``): for a
        Z-set read more than once, whose plan would otherwise be repeated below each read."""
        return self.relation(materialized(relation.frame))

    def view_of(self, rows: DataFrame | LazyRows | str) -> str:
        """The name to read ``rows`` (a base table's rows or change) by in SQL: a temporary
        view of a DataFrame (read now if lazy), or a catalog table's quoted name."""
        if isinstance(rows, str):
            return ".".join(quote_identifier(part) for part in rows.split("."))
        return self.views.name_of(rows.frame if isinstance(rows, LazyRows) else rows)

    def rule(self, node: Node) -> DeltaRule:
        for rule in self._rules:
            if isinstance(node, rule.operator):
                return rule
        raise TypeError(f"no delta rule for {type(node).__name__}")

    def changed(self, node: Node) -> bool:
        """Whether any base table under ``node`` changed."""
        return any(self.tables[table].change is not None for table in scanned_tables(node))

    def scanned_bytes(self, node: Node) -> int:
        """The bytes of the base tables ``node`` scans, once per scan (0 where unknown)."""
        return sum(self.tables[s.table].bytes for s in walk(node) if isinstance(s, Scan))

    def value(self, node: Node, version: Version) -> Relation:
        """``node``'s value as a Z-set, over the base tables as of ``version``."""
        if version is Version.OLD and not self.changed(node):
            version = Version.NEW  # unchanged: old and new are the same rows
        known = self._values.get((id(node), version))
        if known is None:
            known = (node, self.rule(node).evaluate(node, version, self))
            self._values[(id(node), version)] = known
        return known[1]

    def rows_only_changed(self, rows: KeyedColumns, keys: KeyedColumns) -> bool:
        """Whether the rows of ``rows``' table that ``keys``' change reaches are all its own
        change's (``KeyProof``); False without proofs."""
        return self.proofs is not None and self.proofs(rows, keys)

    def changed_rows(self, node: Node, table: str, version: Version) -> Relation:
        """``node``'s value over ``table``'s rows as of ``version`` restricted to the keys
        ``rows_only_changed`` proved: the rows its net change inserted (NEW, ``ΔR⁺``) or
        deleted (OLD, ``ΔR⁻``), each as often as its weight says. A join's input changes are
        consolidated, or kept as logged only when they insert and nothing cancels
        (``relation.net_change``). ``node`` is linear in ``table`` (filters and projections
        over its one scan), so it distributes over that restriction."""
        memo = (f"changed rows {version.value}", id(node))
        known = self.memo.get(memo)
        if known is not None:
            return known
        state = self.tables[table]
        assert state.change is not None, f"{table} did not change"
        change = state.change
        scan = next(s for s in walk(node) if isinstance(s, Scan))
        columns = ", ".join(quote_identifier(c) for c in scan.columns)
        weight = f"CAST({quote_identifier(WEIGHT)} AS BIGINT)"
        if version is Version.OLD:
            weight = f"-{weight}"
        copies = f"explode(sequence(CAST(1 AS BIGINT), {weight}))"
        rows = self.query(
            f"SELECT {columns} FROM {self.view_of(change)} "
            f"LATERAL VIEW {copies} repeated AS repetition WHERE {weight} > 0"
        )
        tables = {**self.tables, table: BaseState(rows.frame)}
        known = DeltaEngine(tables, self._rules, self.views, derived=self.derived).value(
            node, Version.NEW
        )
        self.memo[memo] = known
        return known

    def change(self, node: Node) -> Relation:
        """``Δnode = node(NEW) − node(OLD)`` as a Z-set (empty when no table under ``node``
        changed: a view's base tables include those of a CTE it never reads)."""
        known = self._changes.get(id(node))
        if known is None:
            if id(node) not in self._analyzed:
                self._find_shared(node)
            change = self._derived_change(node)
            if id(node) in self._shared:
                change = self.materialized(change)
            known = (node, change)
            self._changes[id(node)] = known
        return known[1]

    def _find_shared(self, root: Node) -> None:
        """Note the nodes under ``root`` whose change is computed apart, by a job of its own
        (``ir.shared_above_negation``)."""
        self._analyzed.update(id(node) for node in walk(root))
        self._shared.update(id(node) for node in shared_above_negation(root))

    def _derived_change(self, node: Node) -> Relation:
        if not self.changed(node):
            empty = self.value(node, Version.NEW).subquery("e")
            return self.query(f"SELECT * FROM {empty} LIMIT 0")
        return self.rule(node).delta(node, self)

    def evaluate(self, node: Node, version: Version) -> DataFrame:
        """``value`` as a DataFrame."""
        return self.value(node, version).frame

    def delta(self, node: Node) -> DataFrame:
        """``change`` as a DataFrame."""
        return self.change(node).frame

    def describe(self, node: Node, version: Version | None = None) -> str:
        """The delta (``version`` None) or the value of ``node``, in the rules' algebra. A
        subtree several parents read (not a scan) is named ``X<n>`` (``ΔX<n>``, ``X<n>_old``)
        and described once, in ``definitions``."""
        if version is Version.OLD and not self.changed(node):
            version = Version.NEW
        if self._labels is None and not isinstance(node, Scan):  # the first term described
            shared = [n for n in shared_nodes(node) if not isinstance(n, Scan)]
            self._labels = {id(n): f"X{index}" for index, n in enumerate(shared, 1)}
        label = (self._labels or {}).get(id(node))
        if label is None:
            return self.rule(node).describe(node, version, self)
        key = (id(node), version)
        if key not in self._definitions:
            self._definitions[key] = self.rule(node).describe(node, version, self)
        return _labelled(label, version)

    def definitions(self) -> list[str]:
        """``name = term`` of each shared subtree ``describe`` named, in the order they were
        described (each after the ones it reads)."""
        labels = self._labels or {}
        return [
            f"{_labelled(labels[id_], version)} = {text}"
            for (id_, version), text in self._definitions.items()
        ]


def _labelled(label: str, version: Version | None) -> str:
    if version is None:
        return f"Δ{label}"
    return f"{label}_old" if version is Version.OLD else label


def sql_expression(expression: exp.Expr) -> str:
    """An IR expression (columns already renamed to internal names) as Spark SQL."""
    return expression.sql(dialect="spark")


def with_outputs(zset: DataFrame, sources: tuple[str, ...], outputs: tuple[str, ...]) -> DataFrame:
    """``zset``'s columns ``sources`` renamed to ``outputs`` (positionally), with the weight."""
    renamed = [column(s).alias(o) for s, o in zip(sources, outputs, strict=True)]
    return zset.select(*renamed, column(WEIGHT))
