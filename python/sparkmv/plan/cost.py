"""What a refresh of each mode is estimated to cost, and which is cheaper (Hanson 1986 §4).

Hanson compares the maintenance strategies by what they read: deferred (incremental)
maintenance costs in proportion to the changes since the last refresh, recomputation (full)
in proportion to the base relations. The model, in milliseconds, over sizes that listings and
the change logs' manifests give without a Spark job (bytes of parquet files):

    incremental = FIXED_MS + INCREMENTAL_MS_PER_CHANGE_BYTE · change bytes
                           + FULL_MS_PER_BASE_BYTE · joined bytes
                           + STEP_MS · (steps apart + scale · extra joins)
    full        = FIXED_MS + FULL_MS_PER_BASE_BYTE · base bytes + FULL_MS_PER_VIEW_ROW · view rows

Either mode runs a few Spark jobs (about 0.1 s each here) and one metastore commit: the same
fixed part. Per byte, an incremental refresh costs ten times what a full one does (its change
is read, joined with the other inputs, consolidated and merged into the buckets it touches,
where a full refresh only scans), so with no history a change of about a tenth of the base
tables' bytes breaks even; the view's rows, which a full refresh rewrites, move that point
further in favour of incremental.

A join's change is not read alone (Hanson §4 counts the joins of each changed relation with
the others): the term of each changed input ``ΔR_i ⋈ R_j …`` scans every other input it
joins, changed or not (``delta/join.py``), as a full refresh scans it. Those *joined bytes*
(``joined_bytes``) cost what a full refresh's scan costs per byte, so a join view whose every
input changed (TPC-H's ``orders`` and ``lineitem`` both) reads about its base tables whatever
the change, and breaks even only where the full refresh's own joins and write cost more.

Every join the terms run beyond the query's own joins (``extra_joins``: with two changed
inputs ``ΔR ⋈ S + R ⋈ ΔS`` runs two where the query runs one) broadcasts its smaller side, a
Spark job of its own: a step, like a change computed apart, but counted in proportion to
``scale = base / (base + HISTORY_BASE_BYTES)``, as the history is (below), since over small
tables both modes cost their fixed part and a tie goes to incremental. Some changes are
computed apart, each by a Spark job of its own before the last one (``steps_apart``): a
DISTINCT's or a grouped aggregate's below the view's root (their counters and groups, before
and after the change), a window's touched partitions, and a subtree that several parents of a
decorrelated subquery or outer join read. A view of such steps pays
``STEP_MS`` each, where a full refresh runs the query as one plan: TPC-H Q16 (``NOT IN``,
``COUNT(DISTINCT)`` over a join) runs 19 jobs incrementally against 11 in full.

The model is corrected by the view's measured history (``catalog.metadata.ModeHistory``): a
mode's estimate is multiplied by ``(mean_ms / mean_model_ms) ** weight`` — how its refreshes
compared with the model — where ``weight = base / (base + HISTORY_BASE_BYTES)`` times the
history's ``confidence``. A small view's refreshes cost their fixed part whatever the mode,
well under seconds, and timing them says little about either mode at scale: its history
barely counts and the defaults decide. A large view's history decides, once it holds a few
refreshes: a process's first refresh also pays the JVM's warm-up (code generation, class
loading), several times a warm refresh, and one such refresh must not decide. A mode's
history also fades while the other mode runs (AUTO chose the other because of it): else one
slow measurement would keep AUTO off a mode for good, with nothing to ever correct it; faded,
the mode is tried again and measured anew.

AUTO takes the cheaper estimate. Within ``TIE_MS`` of each other the two are closer than
the estimates can tell apart, and the tie goes to the mode that reads less: incremental,
unless its terms scan about as much as a full refresh would (``reads_about_the_base``: a join
whose every input changed), in which case the full refresh does it in fewer, simpler jobs —
once the base tables are large enough (``HISTORY_BASE_BYTES``) for their scans to count;
below that both modes cost their fixed part and incremental wins the tie. A wrong
choice costs time, never correctness: either mode computes the view's query, and a full
refresh of a maintainable view writes the bucketed layout incremental refreshes patch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession

from sparkmv import fs
from sparkmv.analyze.ir import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Node,
    Project,
    Scan,
    Window,
    scanned_tables,
    shared_above_negation,
    walk,
)
from sparkmv.capture.change_log import ChangeLog
from sparkmv.capture.tracking import BaseTable
from sparkmv.catalog.metadata import ModeHistory, MvMetadata
from sparkmv.catalog.modes import RefreshMode
from sparkmv.config import REFRESH_COST_BASED_CONF, conf_flag
from sparkmv.delta.engine import KeyProof
from sparkmv.delta.join import changed_core, equated, sub_join, terms_scans
from sparkmv.delta.selection import selected_join

FIXED_MS = 300.0
"""Either mode's fixed part: its Spark jobs (about 0.1 s each here) and its commit."""
INCREMENTAL_MS_PER_CHANGE_BYTE = 1e-4
"""An incremental refresh per byte of logged change (10 s per GB)."""
FULL_MS_PER_BASE_BYTE = 1e-5
"""A full refresh per byte of the base tables it scans (100 MB/s: 10 s per GB)."""
FULL_MS_PER_VIEW_ROW = 1e-3
"""A full refresh per row of the view it rewrites (a million rows a second)."""
HISTORY_BASE_BYTES = FIXED_MS / FULL_MS_PER_BASE_BYTE
"""Base-table bytes (30 MB) at which the measured history counts half: there a full refresh's
scan costs as much as its fixed part."""
STEP_MS = 100.0
"""A change computed apart, or a join beyond the query's own: a Spark job of its own
(``steps_apart``, ``extra_joins``)."""
TIE_MS = 100.0
"""Estimates this close are a tie (``CostEstimate.cheaper``)."""
BASE_SHARE_READ_IN_FULL = 0.5
"""An incremental refresh whose terms scan this share of the base tables' bytes or more reads
about what a full refresh reads (``CostEstimate.reads_about_the_base``)."""
CONFIDENT_REFRESHES = 3
"""Measured refreshes of a mode after which its history counts fully (fewer count in
proportion: one refresh, a third)."""
STALE_HALF_LIFE = 4
"""Refreshes of the other mode after which a mode's history counts half as much."""


@dataclass(frozen=True)
class ModeCost:
    """One mode's estimated duration: the model's (``model_ms``: what the refresh's measured
    duration is recorded against) and corrected by the view's history (``estimated_ms``)."""

    model_ms: float
    estimated_ms: float


@dataclass(frozen=True)
class CostEstimate:
    """Both modes' estimates for one refresh (``incremental`` None: it cannot be incremental),
    from its inputs: the bytes logged since the view's last refresh, the base tables' bytes,
    the view's rows, and the weight its measured history has."""

    base_bytes: int
    view_rows: int
    history_weight: float
    full: ModeCost
    change_bytes: int = 0
    incremental: ModeCost | None = None
    joined_bytes: int = 0

    def cheaper(self) -> RefreshMode:
        """FULL when its estimate is below the incremental one by ``TIE_MS`` or more, or
        within ``TIE_MS`` of it while the incremental terms scan about the base tables."""
        if self.incremental is None:
            return RefreshMode.FULL
        if self.full.estimated_ms + TIE_MS <= self.incremental.estimated_ms:
            return RefreshMode.FULL
        tie = self.incremental.estimated_ms < self.full.estimated_ms + TIE_MS and (
            self.full.estimated_ms < self.incremental.estimated_ms + TIE_MS
        )
        if tie and self.reads_about_the_base():
            return RefreshMode.FULL
        return RefreshMode.INCREMENTAL

    def reads_about_the_base(self) -> bool:
        """Whether the incremental refresh scans about as much as a full one: its joined
        bytes are ``BASE_SHARE_READ_IN_FULL`` of base tables of at least
        ``HISTORY_BASE_BYTES`` (smaller ones cost their fixed part either way)."""
        return (
            self.base_bytes >= HISTORY_BASE_BYTES
            and self.joined_bytes >= BASE_SHARE_READ_IN_FULL * self.base_bytes
        )

    def model_ms(self, mode: RefreshMode) -> float:
        """The model's estimate of ``mode`` (0 when it was not estimated)."""
        cost = self.full if mode is RefreshMode.FULL else self.incremental
        return cost.model_ms if cost is not None else 0.0

    def choice(self) -> str:
        """The cheaper mode and both estimates, e.g. ``incremental: estimated 0.3 s vs full
        4.1 s`` (the reason of a cost-based plan)."""
        assert self.incremental is not None
        chosen, other = ("full", "incremental")
        chosen_cost, other_cost = self.full, self.incremental
        if self.cheaper() is RefreshMode.INCREMENTAL:
            chosen, other = other, chosen
            chosen_cost, other_cost = other_cost, chosen_cost
        return (
            f"{chosen}: estimated {seconds(chosen_cost.estimated_ms)} vs {other} "
            f"{seconds(other_cost.estimated_ms)}"
        )

    def summary(self) -> str:
        """The estimates with their inputs, for EXPLAIN and DESCRIBE."""
        full = (
            f"full {seconds(self.full.estimated_ms)} ({size(self.base_bytes)} of base tables, "
            f"{self.view_rows} view rows)"
        )
        weight = f"history weight {self.history_weight:.0%}"
        if self.incremental is None:
            return f"{full}; {weight}"
        joined = f", {size(self.joined_bytes)} joined" if self.joined_bytes else ""
        incremental = (
            f"incremental {seconds(self.incremental.estimated_ms)} "
            f"({size(self.change_bytes)} of changes{joined})"
        )
        return f"{incremental}, {full}; {weight}"


def estimate_cost(
    view: MvMetadata,
    base_bytes: int,
    change_bytes: int | None = None,
    joined_bytes: int = 0,
    steps: int = 0,
    joins: int = 0,
) -> CostEstimate:
    """The estimates of a refresh of ``view`` over ``base_bytes`` of base tables, with
    ``change_bytes`` logged since its last refresh (None: it cannot be incremental),
    ``joined_bytes`` of inputs its change is joined with (``joined_bytes``), ``steps``
    changes computed apart (``steps_apart``) and ``joins`` beyond the query's own
    (``extra_joins``). The joins count in proportion to the base tables' scale, as the
    history does: over small tables both modes cost their fixed part, and the tie goes to
    incremental."""
    scale = base_bytes / (base_bytes + HISTORY_BASE_BYTES)
    stats = view.stats
    history = stats.cost_history
    full_ms = FIXED_MS + FULL_MS_PER_BASE_BYTE * base_bytes + FULL_MS_PER_VIEW_ROW * view.row_count
    full = _corrected(full_ms, history.get(RefreshMode.FULL), scale, stats.refreshes)
    if change_bytes is None:
        return CostEstimate(base_bytes, view.row_count, scale, full)
    incremental_ms = (
        FIXED_MS
        + INCREMENTAL_MS_PER_CHANGE_BYTE * change_bytes
        + FULL_MS_PER_BASE_BYTE * joined_bytes
        + STEP_MS * (steps + scale * joins)
    )
    incremental = _corrected(
        incremental_ms, history.get(RefreshMode.INCREMENTAL), scale, stats.refreshes
    )
    return CostEstimate(
        base_bytes,
        view.row_count,
        scale,
        full,
        change_bytes,
        incremental,
        joined_bytes,
    )


def confidence(history: ModeHistory, refreshes: int) -> float:
    """How much a mode's ``history`` counts, 0 to 1, when the view has had ``refreshes``:
    in proportion to its measured refreshes up to ``CONFIDENT_REFRESHES``, halved for every
    ``STALE_HALF_LIFE`` refreshes of the other mode since its newest."""
    stale = max(refreshes - history.last_refresh, 0) if history.last_refresh else 0
    measured = min(history.refreshes, CONFIDENT_REFRESHES) / CONFIDENT_REFRESHES
    return float(measured * 0.5 ** (stale / STALE_HALF_LIFE))


def _corrected(
    model_ms: float, history: ModeHistory | None, scale: float, refreshes: int
) -> ModeCost:
    """``model_ms`` scaled by how the mode's measured refreshes compared with the model,
    to the power ``scale · confidence``."""
    if history is None or history.mean_ms <= 0 or history.mean_model_ms <= 0:
        return ModeCost(model_ms, model_ms)
    weight = scale * confidence(history, refreshes)
    return ModeCost(model_ms, model_ms * (history.mean_ms / history.mean_model_ms) ** weight)


def joined_bytes(
    root: Node, table_bytes: Mapping[str, int], changed: set[str], proof: KeyProof | None = None
) -> int:
    """The bytes of base tables the change of ``root`` is joined with (``join_scans``), less
    the scans ``proof`` spares (``spared_bytes``)."""
    scanned = sum(count * size for count, size in join_scans(root, table_bytes, changed))
    spared = spared_bytes(root, table_bytes, changed, proof) if proof is not None else 0
    return max(scanned - spared, 0)


def spared_bytes(
    root: Node, table_bytes: Mapping[str, int], changed: set[str], proof: KeyProof
) -> int:
    """The bytes of the scans a join's terms skip by reading a changed input from its own
    change (``join.only_changed_rows``: the term of ``ΔR_i`` joins ``Δ⁺R_j`` or ``Δ⁻R_j``,
    which the change bytes count, where ``proof`` holds for ``R_j`` at ``R_i``'s keys). Only
    for joins of two changed inputs: with more, a pivot is scanned once for all terms
    (``join.terms_scans``), and no single proof spares that scan."""
    spared = 0
    for node in joins_as_joined(root):
        hit = [i for i, child in enumerate(node.inputs) if scanned_tables(child) & changed]
        if len(hit) != 2:
            continue
        core = set(changed_core(node, hit)) or set(range(len(node.inputs)))
        members = sorted(core)
        core_join = sub_join(node, core)[0] if len(core) < len(node.inputs) else node
        first, second = (members.index(i) for i in hit)
        for term, other in ((first, second), (second, first)):
            keyed = equated(core_join, term, other)
            if keyed is not None and proof(*keyed):
                spared += sum(
                    table_bytes.get(scan.table, 0)
                    for scan in walk(core_join.inputs[other])
                    if isinstance(scan, Scan)
                )
    return spared


def extra_joins(root: Node, table_bytes: Mapping[str, int], changed: set[str]) -> int:
    """The joins the change's terms run beyond the query's own: each is a broadcast of the
    smaller side, a Spark job of its own, as a step apart is (a refresh of TPC-H Q5 after
    changes to four of its six tables runs 11 joins in 12 jobs; the query has 5 joins)."""
    run = sum(count for count, _ in join_scans(root, table_bytes, changed))
    own = sum(len(node.inputs) - 1 for node in joins_as_joined(root))
    return max(run - own, 0)


def join_scans(
    root: Node, table_bytes: Mapping[str, int], changed: set[str]
) -> Iterator[tuple[int, int]]:
    """Per input of each join that the ``changed`` tables reach: how often the change's
    terms scan it (each scan a join) and its bytes. Each changed input's term scans every
    other input of the join's changed core once (a pivot once in all:
    ``join.terms_scans``), and each input outside the core is joined once, with the core's
    change (``delta/join.py``). An input's bytes are its scanned tables' (``table_bytes``),
    once per scan. A selection over a join is the join under both conditions, as the rules
    join it (``selection.selected_join``): a ``WHERE`` over a ``FROM`` list connects its
    inputs."""
    for node in joins_as_joined(root):
        sizes = [
            sum(table_bytes.get(scan.table, 0) for scan in walk(child) if isinstance(scan, Scan))
            for child in node.inputs
        ]
        hit = [i for i, child in enumerate(node.inputs) if scanned_tables(child) & changed]
        if not hit:
            continue
        core = set(changed_core(node, hit)) if len(hit) > 1 else set(hit)
        core = core or set(range(len(node.inputs)))  # not connected: every term scans all
        members = sorted(core)
        core_join = sub_join(node, core)[0] if len(core) < len(node.inputs) else node
        counts = terms_scans(
            core_join, [members.index(i) for i in hit], [sizes[i] for i in members]
        )
        yield from zip(counts, (sizes[i] for i in members), strict=True)
        yield from ((1, size) for i, size in enumerate(sizes) if i not in core)


def joins_as_joined(root: Node) -> list[Join]:
    """``root``'s joins as the delta rules join them: a selection over a join as one join
    under both conditions (``selection.selected_join``)."""
    selected = {
        id(node.child): selected_join(node, node.child)
        for node in walk(root)
        if isinstance(node, Filter) and isinstance(node.child, Join)
    }
    return [selected.get(id(node), node) for node in walk(root) if isinstance(node, Join)]


def steps_apart(root: Node, changed: set[str]) -> int:
    """The changes of ``root``'s nodes that reach ``changed`` tables and are computed by a
    job of their own: a DISTINCT's or an aggregate's below the view's own (the top one, under
    the select list and HAVING, whose state the storage keeps), a window's, and a subtree
    several parents read above a ``Negate`` (``ir.shared_above_negation``)."""
    top = root
    while isinstance(top, (Project, Filter)):
        top = top.child
    shared = {id(node) for node in shared_above_negation(root)}
    return sum(
        1
        for node in walk(root)
        if scanned_tables(node) & changed
        and (
            id(node) in shared
            or isinstance(node, Window)
            or (node is not top and isinstance(node, (Distinct, Aggregate)))
        )
    )


def cost_based(spark: SparkSession) -> bool:
    """Whether AUTO weighs the estimates (``REFRESH_COST_BASED_CONF``, default true)."""
    return conf_flag(spark, REFRESH_COST_BASED_CONF)


def base_bytes(bases: Iterable[BaseTable]) -> int:
    """The bytes of the sized base tables' files (``table_bytes``)."""
    return sum(table_bytes(bases).values())


def table_bytes(bases: Iterable[BaseTable]) -> dict[str, int]:
    """Per sized base table, the bytes of its files: as tracking listed them, or as its
    table format's metadata says (``ChangelogSizes``). An unsized table is absent."""
    sizes = {}
    for base in bases:
        if base.files is not None:
            sizes[base.name] = sum(f.size for f in base.files.files)
        elif base.changelog is not None and base.changelog.sizes is not None:
            size = base.changelog.sizes.table_bytes()
            if size is not None:
                sizes[base.name] = size
    return sizes


def change_bytes(
    spark: SparkSession, base: BaseTable, consumed: int, read: set[str] | None
) -> int | None:
    """The bytes an incremental refresh reads as ``base``'s change since version
    ``consumed``: its log's (``logged_bytes``), or those its table format's metadata names
    (``ChangelogSizes``); None when neither says."""
    if base.log is not None and base.files is not None:
        return logged_bytes(spark, base, consumed, read)
    if base.changelog is not None and base.changelog.sizes is not None:
        return base.changelog.sizes.change_bytes(consumed, base.version)
    return None


def logged_bytes(spark: SparkSession, base: BaseTable, consumed: int, read: set[str] | None) -> int:
    """The bytes of what ``base``'s log holds for versions ``(consumed, base.version]``, as a
    refresh that reads the columns ``read`` (None: all) reads it: the files its commits
    reference (appended table files, files an overwrite replaced, pre-images copy-on-write
    kept; those a later overwrite moved, at their links) and its explicit change rows, but
    not the UPDATEs that assign none of ``read`` (``LogCommit.ignorable_by``). Sizes come from
    the table's listing and, for files outside the table, one listing of the log: no job."""
    log = base.log
    assert log is not None and base.files is not None
    commits = [c for c in log.commits(consumed, base.version) if not c.ignorable_by(read)]
    moved = {path: link for commit in commits for path, link in commit.preserved.items()}
    files = [
        moved.get(ref.path, ref.path)
        for commit in commits
        for ref in (*commit.inserted_files, *commit.deleted_files)
    ]
    directories = tuple(
        f"{rows}/"
        for commit in commits
        for rows in (commit.inserted_rows, commit.deleted_rows)
        if rows is not None
    )
    sizes = {file.path: file.size for file in base.files.files}
    if directories or any(path not in sizes for path in files):
        sizes.update(_log_file_sizes(spark, log))
    in_directories = sum(
        file_size
        for path, file_size in sizes.items()
        if directories and path.startswith(directories)
    )
    return in_directories + sum(sizes.get(path, 0) for path in files)


def _log_file_sizes(spark: SparkSession, log: ChangeLog) -> dict[str, int]:
    """Every data file under the log's root (change rows, kept pre-images, preserved links)
    by path, from one listing."""
    return {status.path: status.size for status in fs.data_files(spark, log.root)}


def seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def size(data_bytes: int) -> str:
    """``data_bytes`` in B, KiB, MiB, GiB or TiB."""
    if data_bytes < 1024:
        return f"{data_bytes} B"
    value = data_bytes / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
