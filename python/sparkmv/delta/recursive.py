"""Recursive CTEs ``μr. A ⊎ step(r, …, r)`` (``ir.Recursive``, ``WITH RECURSIVE`` with
``UNION ALL``): the fixpoint, stored with the view, and its change by semi-naive iteration.

Spark's semantics: ``R_0 = A``, ``R_{i+1} = step(R_i, …, R_i)`` — every reference to ``r``
in the step reads the previous level only, however many there are — value ``R = Σ_i R_i``
(a bag); it fails when level ``L`` (``spark.sql.cteRecursionLevelLimit``, 100) is not empty
or when ``Σ_i |R_i|`` reaches ``spark.sql.cteRecursionRowLimit`` (1,000,000). The builder
admits steps multilinear in their references ``r_1 … r_n`` (``relational._references``):
unions of joins, filters and projections, each join reading a reference at most once. Each
row carries its level ``i`` (a reference's last column; the references of one join are
joined on equal levels; the step adds 1), so the state is ``R`` as a Z-set over
``(columns, level)``: exactly Spark's per-level result, consolidated. Write ``f(X_1, …,
X_n)`` for the step over that levelled relation, each ``X_j`` in ``r_j``'s place: it is
multilinear, and ``R = A + f(R, …, R)`` (the level join makes every term read one level).

value (``evaluate``): as of NEW with no stored fixpoint (CREATE, a full refresh), Spark's
        iteration, each level consolidated (duplicate walks become one row of their
        count) and materialized; it stops at the first empty level. As of OLD: the stored
        fixpoint. As of NEW in an incremental refresh: ``R_old + ΔR``. Both check Spark's
        row limit on ``Σ`` of the weights (one small job).

delta:  with the base tables changing from ``E_old`` to ``E_new``,

            ``ΔR = ΔA + f(R_new; E_new) − f(R_old; E_old)
                 = ΔA + [f(R_old; E_new) − f(R_old; E_old)] + [f(R_new; E_new) − f(R_old; E_new)]``

        i.e. ``ΔR = Σ_k G_k`` with ``G_0 = ΔA + Δ_E f(R_old)`` — the change of the step
        with every reference held at the stored fixpoint, which the other rules derive (a
        step joining several changed tables gets the join rule's terms) — and, over
        ``E_new``, ``G_{k+1} = f(R_k + G_k) − f(R_k)`` with ``R_k = R_old + G_0 + … +
        G_{k−1}``: semi-naive iteration seeded by the change, over all levels at once,
        until ``G_k`` is empty after consolidation. Multilinearity telescopes the
        difference (``N = R_k + G_k``, ``O = R_k``, ``Δ = G_k``)::

            f(N, …, N) − f(O, …, O) = Σ_i f_i(N_1, …, N_{i−1}, Δ_i, O_{i+1}, …, O_n)

        ``f_i`` the monomials of ``f`` that read ``r_i`` (``Recursive.terms``; the others do
        not change with ``X_i``). One reference (a linear step): ``G_{k+1} = f(G_k)``, and
        ``R_k`` is not read. Deletions are negative weights. Counting is exact here (no
        DRed needed): a row's multiplicity in a ``UNION ALL`` recursion *is* its number of
        derivations, every derivation is finite (the level limit), and the algebra above is
        an identity of Z-sets. Every term of ``G_{k+1}`` reads ``G_k`` at the level of its
        rows, so ``G_k`` holds levels ``≥ k``, and the loop ends within ``L`` iterations
        unless a round reaches level ``L``. Such a row need not be one of ``R_new``: rounds
        cancel each other's rows (delete the edge into a node at level ``L − 1`` and add
        one out of it: ``G_0`` holds the new edge's row at level ``L``, made from the stored
        fixpoint, and a later round the same row negated, made from the deletion), so only
        the new fixpoint tells whether Spark's query fails. The change then stops with
        ``LevelLimitInChangeError``, and the refresh recomputes the view, which fails as
        Spark's query does, or not.

Each level or ``G_k`` is one job that computes and consolidates it (``localCheckpoint``)
and one that finds whether it is empty and its highest level (``frontier``).
"""

from __future__ import annotations

from pyspark.sql import functions as F

from sparkmv.analyze.ir import Node, NotMaintainableError, Recursive, RecursiveRef
from sparkmv.delta.engine import DeltaEngine, DeltaRule, Version
from sparkmv.delta.relation import WEIGHT_SQL, Relation, consolidated_sql, renamed
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import quote_identifier as _q
from sparkmv.storage.stored_columns import storage_columns
from sparkmv.zset import WEIGHT, materialized

LEVEL_LIMIT_CONF = "spark.sql.cteRecursionLevelLimit"
ROW_LIMIT_CONF = "spark.sql.cteRecursionRowLimit"
LEVEL_COLUMN = "mv_level"
"""In a stored fixpoint: the level (Spark's iteration) of each row, after the columns."""


class LevelLimitInChangeError(Exception):
    """A round of a recursive CTE's change reached the level limit ``L`` (module
    docstring): whether the new fixpoint does, only recomputing it can tell."""


class MissingFixpointError(Exception):
    """The view's snapshot holds no stored fixpoint for a recursive CTE (a refresh must
    recompute it)."""


def state_columns(node: Recursive) -> list[str]:
    """The stored fixpoint's columns: the CTE's (``c0``, ``c1``, …), then the level."""
    return [*storage_columns(len(node.outputs)), LEVEL_COLUMN]


def evaluate(node: Recursive, version: Version, engine: DeltaEngine) -> Relation:
    if engine.fixpoints.analysis:
        anchor = engine.value(node.anchor, Version.NEW).subquery("a")
        columns = renamed(node.anchor.outputs, node.outputs)
        return engine.query(f"SELECT {columns}, {WEIGHT_SQL} FROM {anchor} LIMIT 0")
    if version is Version.OLD:
        return _visible(node, engine, _stored(node, engine), storage_named=True)
    if node.key in engine.fixpoints.stored:  # an incremental refresh: R_new = R_old + ΔR
        if not engine.changed(node):
            state = _stored(node, engine)
        else:
            ref = _ref_names(node)
            old = engine.query(
                f"SELECT {renamed(tuple(state_columns(node)), ref)}, {WEIGHT_SQL}"
                f" FROM {_stored(node, engine).subquery('o')}"
            )
            change = _change(node, engine)
            union = engine.query(f"{old.sql} UNION ALL {change.sql}")
            _check_rows(node, engine, union)
            new = engine.query(consolidated_sql(union, list(ref)))
            state = engine.query(_state_sql(node, new))
            engine.fixpoints.changes[node.key] = engine.query(_state_sql(node, change)).frame
    else:
        state = engine.query(_state_sql(node, _iterate(node, engine)))
        _check_rows(node, engine, state)
    engine.fixpoints.computed[node.key] = state.frame
    return _visible(node, engine, state, storage_named=True)


def _stored(node: Recursive, engine: DeltaEngine) -> Relation:
    stored = engine.fixpoints.stored.get(node.key)
    if stored is None:
        raise MissingFixpointError(f"the stored fixpoint of {node.ref.name} is missing")
    return engine.relation(stored)


def _ref_names(node: Recursive) -> tuple[str, ...]:
    return node.ref.outputs


def _state_sql(node: Recursive, frontier: Relation) -> str:
    """A Z-set in the reference's columns as the stored fixpoint's."""
    return (
        f"SELECT {renamed(_ref_names(node), tuple(state_columns(node)))}, {WEIGHT_SQL}"
        f" FROM {frontier.subquery('s')}"
    )


def _visible(node: Recursive, engine: DeltaEngine, rows: Relation, storage_named: bool) -> Relation:
    """``rows`` (levelled) as the CTE's value: its columns under ``node``'s outputs."""
    sources = tuple(state_columns(node) if storage_named else _ref_names(node))[:-1]
    return engine.query(
        f"SELECT {renamed(sources, node.outputs)}, {WEIGHT_SQL} FROM {rows.subquery('v')}"
    )


def _level_limit(node: Recursive, engine: DeltaEngine) -> int:
    if node.limit is not None:
        return node.limit
    return int(engine.views.spark.conf.get(LEVEL_LIMIT_CONF, "100") or "100")


def _consolidated(engine: DeltaEngine, relation: Relation, columns: tuple[str, ...]) -> Relation:
    """``relation`` consolidated and computed now (a frontier: small, read twice)."""
    frame = engine.query(consolidated_sql(relation, list(columns))).frame
    return engine.relation(materialized(frame))


def _frontier(node: Recursive, engine: DeltaEngine, frontier: Relation, *, in_change: bool) -> bool:
    """Whether ``frontier`` (consolidated, levelled) has rows. One at level ``L`` or above
    in Spark's own iteration fails as Spark's query over the same tables fails; in a round
    of the change (``in_change``), it raises ``LevelLimitInChangeError``."""
    limit = _level_limit(node, engine)
    level = _q(node.ref.outputs[-1])
    row = frontier.frame.agg(F.count(F.lit(1)), F.max(F.expr(level))).collect()[0]
    if row[1] is not None and int(row[1]) >= limit:
        if in_change:
            raise LevelLimitInChangeError(
                f"a round of the change of the recursive CTE {node.ref.name} reached the"
                f" recursion level limit ({limit}), which only the new fixpoint can confirm"
            )
        raise SparkMvError(ErrorClass.RECURSION_LEVEL_LIMIT_EXCEEDED, levelLimit=limit)
    return bool(row[0])


def _as_ref(node: Recursive, engine: DeltaEngine, rows: Relation, ref: RecursiveRef) -> Relation:
    """``rows`` (in the first reference's columns) in ``ref``'s."""
    if ref is node.ref:
        return rows
    return engine.query(
        f"SELECT {renamed(_ref_names(node), ref.outputs)}, {WEIGHT_SQL} FROM {rows.subquery('b')}"
    )


def _bound(
    node: Recursive, engine: DeltaEngine, values: list[Relation], below: Node
) -> DeltaEngine:
    """``engine`` with ``node.refs[i]`` bound to ``values[i]`` for the nodes ``below``."""
    pairs = zip(node.refs, values, strict=True)
    return engine.bound({id(ref): _as_ref(node, engine, rows, ref) for ref, rows in pairs}, below)


def _in_ref_names(node: Recursive, stepped: Relation) -> str:
    """SQL of the step's (or a term's) result in the first reference's columns."""
    columns = renamed(node.step.outputs, _ref_names(node))
    return f"SELECT {columns}, {WEIGHT_SQL} FROM {stepped.subquery('t')}"


def _step(node: Recursive, engine: DeltaEngine, frontier: Relation) -> Relation:
    """``step(frontier, …, frontier; E_new)`` (every reference reads ``frontier``), in the
    first reference's columns: Spark's next level when ``frontier`` is one level."""
    bound = _bound(node, engine, [frontier] * len(node.refs), node.step)
    return engine.query(_in_ref_names(node, bound.value(node.step, Version.NEW)))


def _step_change(
    node: Recursive, engine: DeltaEngine, accumulated: Relation, frontier: Relation
) -> Relation:
    """``step(R + G) − step(R)`` over ``E_new`` (``R``: ``accumulated``, ``G``: ``frontier``)
    by the telescoping sum ``Σ_i f_i(N, …, N, G, O, …, O)``: ``f_i`` the step's monomials
    that read ``refs[i]`` (``Recursive.terms``), ``G`` in ``refs[i]``'s place, ``N = R + G``
    in the references before it, ``O = R`` in those after it. A monomial is linear in each
    reference it reads, so ``f(N,…,N) − f(O,…,O)`` is the sum over ``i`` of the change
    ``refs[i]`` going from ``O`` to ``N`` makes with the earlier ones already at ``N``. One
    reference (a linear step): ``step(G)``, and ``R`` is not read."""
    if len(node.refs) == 1:
        return _step(node, engine, frontier)
    new = engine.query(f"({accumulated.sql}) UNION ALL ({frontier.sql})")
    terms = []
    for index, term in enumerate(node.terms):
        values = [new] * index + [frontier] + [accumulated] * (len(node.refs) - index - 1)
        stepped = _bound(node, engine, values, term).value(term, Version.NEW)
        terms.append(_in_ref_names(node, stepped))
    return engine.query(" UNION ALL ".join(f"({term})" for term in terms))


def _iterate(node: Recursive, engine: DeltaEngine) -> Relation:
    """Spark's iteration, each level consolidated: ``Σ_i R_i`` in the reference's columns."""
    anchor = engine.value(node.anchor, Version.NEW).subquery("a")
    columns = renamed(node.anchor.outputs, _ref_names(node)[:-1])
    level = f"CAST(0 AS BIGINT) AS {_q(_ref_names(node)[-1])}"
    frontier = _consolidated(
        engine,
        engine.query(f"SELECT {columns}, {level}, {WEIGHT_SQL} FROM {anchor}"),
        _ref_names(node),
    )
    levels = []
    while _frontier(node, engine, frontier, in_change=False):
        levels.append(frontier)
        frontier = _consolidated(engine, _step(node, engine, frontier), _ref_names(node))
    if not levels:
        return frontier
    return engine.query(" UNION ALL ".join(f"({level.sql})" for level in levels))


def _check_rows(node: Recursive, engine: DeltaEngine, state: Relation) -> None:
    """Spark's row limit: its query fails once the recursion's rows reach it."""
    spark = engine.views.spark
    limit = int(spark.conf.get(ROW_LIMIT_CONF, "1000000") or "1000000")
    if limit < 0:
        return
    total = state.frame.agg(F.sum(F.col(WEIGHT))).collect()[0][0]
    if total is not None and int(total) >= limit:
        raise SparkMvError(ErrorClass.RECURSION_ROW_LIMIT_EXCEEDED, rowLimit=limit)


def _change(node: Recursive, engine: DeltaEngine) -> Relation:
    """``ΔR = Σ_k G_k`` in the reference's columns (module docstring), consolidated and
    computed (once per engine: the value as of NEW and the change read it)."""
    known = engine.memo.get(("recursive change", id(node)))
    if known is None:
        known = _iterated_change(node, engine)
        engine.memo[("recursive change", id(node))] = known
    return known


def _iterated_change(node: Recursive, engine: DeltaEngine) -> Relation:
    names = _ref_names(node)
    old = engine.relation(_stored(node, engine).frame)
    stored_old = engine.query(
        f"SELECT {renamed(tuple(state_columns(node)), names)}, {WEIGHT_SQL}"
        f" FROM {old.subquery('o')}"
    )
    terms = []
    if engine.changed(node.anchor):
        anchor = engine.change(node.anchor).subquery("a")
        columns = renamed(node.anchor.outputs, names[:-1])
        level = f"CAST(0 AS BIGINT) AS {_q(names[-1])}"
        terms.append(f"SELECT {columns}, {level}, {WEIGHT_SQL} FROM {anchor}")
    if engine.changed(node.step):
        held = _bound(node, engine, [stored_old] * len(node.refs), node.step)
        stepped = held.change(node.step).subquery("s")
        terms.append(f"SELECT {renamed(node.step.outputs, names)}, {WEIGHT_SQL} FROM {stepped}")
    if not terms:
        return engine.query(f"{stored_old.sql} LIMIT 0")
    frontier = _consolidated(engine, engine.query(" UNION ALL ".join(terms)), names)
    accumulated, parts = stored_old, []
    while _frontier(node, engine, frontier, in_change=True):
        parts.append(frontier)
        following = _step_change(node, engine, accumulated, frontier)
        accumulated = engine.query(f"({accumulated.sql}) UNION ALL ({frontier.sql})")
        frontier = _consolidated(engine, following, names)
    if not parts:
        return frontier
    union = engine.query(" UNION ALL ".join(f"({part.sql})" for part in parts))
    return _consolidated(engine, union, names)


def delta(node: Recursive, engine: DeltaEngine) -> Relation:
    if engine.fixpoints.analysis:
        return evaluate(node, Version.NEW, engine)
    return _visible(node, engine, _change(node, engine), storage_named=False)


def describe(node: Recursive, version: Version | None, engine: DeltaEngine) -> str:
    name = node.ref.name
    if version is Version.OLD:
        return f"{name}_old (stored fixpoint)"
    anchor = engine.describe(node.anchor, Version.NEW)
    step = engine.describe(node.step, Version.NEW)
    if version is Version.NEW:
        return f"μ{name}. {anchor} ⊎ {step}"
    parts = []
    if engine.changed(node.anchor):
        parts.append(engine.describe(node.anchor))
    if engine.changed(node.step):
        parts.append(f"Δ_E({step})[{name} := {name}_old]")
    seed = " + ".join(parts) or "∅"
    semi_naive = f"Σ_k G_k (semi-naive, ≤ L levels): G_0 = {seed}"
    if len(node.refs) == 1:
        return f"{semi_naive}, G_k+1 = ({step})[{name} := G_k]"
    terms = " + ".join(
        f"({engine.describe(term, Version.NEW)})[{_bindings_text(name, index, len(node.refs))}]"
        for index, term in enumerate(node.terms)
    )
    return (
        f"{semi_naive}, G_k+1 = {terms} ({name}1, {name}2, …: the step's references to {name}"
        f" in order; R_k = {name}_old + G_0 + … + G_k-1)"
    )


def _bindings_text(name: str, index: int, count: int) -> str:
    """The telescoping sum's ``index``-th term's bindings: ``r1 := R_k + G_k, r2 := G_k``."""
    values = ["R_k + G_k"] * index + ["G_k"] + ["R_k"] * (count - index - 1)
    return ", ".join(f"{name}{position} := {value}" for position, value in enumerate(values, 1))


def evaluate_ref(node: RecursiveRef, version: Version, engine: DeltaEngine) -> Relation:
    bound = engine.bindings.get(id(node))
    if bound is not None:
        return bound
    if not engine.fixpoints.analysis:
        raise NotMaintainableError(f"the recursive reference {node.name} read outside its CTE")
    anchor = engine.value(node.anchor, Version.NEW).subquery("a")
    columns = renamed(node.anchor.outputs, node.outputs[:-1])
    level = f"CAST(0 AS BIGINT) AS {_q(node.outputs[-1])}"
    return engine.query(f"SELECT {columns}, {level}, {WEIGHT_SQL} FROM {anchor} LIMIT 0")


def delta_ref(node: RecursiveRef, engine: DeltaEngine) -> Relation:
    """Never changes: the engine holds it at a bound Z-set (``_change``'s ``R_old``)."""
    return engine.query(f"{evaluate_ref(node, Version.NEW, engine).sql} LIMIT 0")


def describe_ref(node: RecursiveRef, version: Version | None, engine: DeltaEngine) -> str:
    return node.name if version is not None else f"Δ{node.name} = ∅"


RULE = DeltaRule(Recursive, evaluate, delta, describe)
REF_RULE = DeltaRule(RecursiveRef, evaluate_ref, delta_ref, describe_ref)
