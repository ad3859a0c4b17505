"""Inner join of any number of inputs, self-joins included: the bilinear rule.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S_old + R_new ⋈ ΔS`` (lecture notes; Hanson Appendix A's
corrected formula, with ``S_old = S_new − ΔS``). For n inputs, with ``R_i`` before and after
the change,

    Δ(R_1 ⋈ … ⋈ R_n) = Σ_i  R_1,new ⋈ … ⋈ R_i−1,new ⋈ ΔR_i ⋈ R_i+1,old ⋈ … ⋈ R_n,old

and a term whose ``ΔR_i`` is empty vanishes, so only the inputs that changed contribute a
term: the rows of Blakeley's truth table (§5.3, Alg. 5.1) with at least one changed input,
grouped so that each combination of changes is counted exactly once. Joined weights
multiply, so an inserted row joined with a deleted partner contributes ``+1 · −1``.
A self-join is two inputs over the same table and needs nothing special.

Join order: the inputs are joined starting from the term's ``ΔR_i`` (the smallest input,
so every intermediate result stays near the size of the change), each next input one that
a conjunct of the condition connects to those already joined, with every conjunct attached
to the first join where it can be evaluated. Left to Spark, a chain of condition-less
joins under one filter kept a FROM list's unlucky order and cross-joined tables that the
condition only connects later (creating a 10-way join view of sqllogictest's select5 took
about 50 s instead of 10 s, and its refreshes longer still).

Unchanged inputs are joined once, not once per term. Joins distribute over the sum of the
terms, so with ``C`` a connected part of the join graph that holds every changed input,

    Δ(⋈ C ⋈ ⋈ rest) = Δ(⋈ C) ⋈ ⋈ rest      (every input of ``rest`` unchanged)

and ``Δ(⋈ C)`` has the terms above, over the inputs of ``C`` only. ``C`` (``changed_core``)
is the changed inputs and the inputs on shortest paths between them along the conjuncts
that connect two inputs, so ``Δ(⋈ C)`` joins no input it is not connected to, and the rest
joins ``Δ(⋈ C)`` (small) along the condition. With k changed inputs among n this is
``k·(|C| − 1) + n − |C|`` joins instead of ``k·(n − 1)``: a view over a fact table and ten
dimensions, refreshed after a change to the fact table and one dimension, runs 11 joins
instead of 20.

A changed input is scanned once, not once per other changed input, when it is joined last.
The sum above holds for any order of the inputs; with the *pivot* ``P`` last, every other
term reads ``P_old``, and with ``X`` the other inputs,

    Δ(⋈ X ⋈ P) = Δ(⋈ X) ⋈ P_old + (⋈ X_new) ⋈ ΔP

where ``Δ(⋈ X)`` is the sum of the other terms over ``X`` alone (the same rule, so pivoted
again when it has three changed inputs), joined with ``P_old`` once. With ``k ≥ 3`` changed
inputs ``P`` is scanned once instead of ``k − 1`` times, and every other input as often as
before. ``P`` is the largest changed input (bytes of its tables' files) whose removal leaves
``X`` connected by its own conjuncts (else ``Δ(⋈ X)`` would cross unconnected inputs): in
TPC-H, after RF1/RF2 and updates of ``customer``, Q3's and Q10's terms scan ``lineitem`` once
instead of twice, Q5's once instead of three times.

An input a term's change reaches only through its own change is not scanned either. In the
term of ``ΔR_i``, another input ``R_j`` equated to ``R_i`` by conjuncts ``R_j.a = R_i.b`` is
read at the keys ``π_b(ΔR_i)`` only; where the engine's ``KeyProof`` proves that no row of
``R_j`` at those keys outlived the change (``R_j,new[k] = ΔR_j⁺[k]``, so ``R_j,old[k] =
ΔR_j⁻[k]``), the term reads ``ΔR_j⁺`` for ``R_j,new`` and ``ΔR_j⁻`` for ``R_j,old``
(``term_input``). After TPC-H's RF1/RF2, ``Δ(O ⋈ L) = ΔO ⋈ Δ⁻L + Δ⁺O ⋈ ΔL``: no scan of
``orders`` or ``lineitem``.
"""

from __future__ import annotations

from collections import deque

from sqlglot import exp

from sparkmv.analyze.ir import Filter, Node, Project, Scan
from sparkmv.analyze.relational import Join
from sparkmv.delta.engine import DeltaEngine, DeltaRule, KeyedColumns, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation
from sparkmv.identifiers import quote_identifier


def join(node: Join, inputs: list[Relation], engine: DeltaEngine, start: int = 0) -> Relation:
    """The Z-set join of ``inputs`` under ``node``'s condition: weights multiply. The
    joins begin at input ``start`` and follow the condition (``join_order``)."""
    order, attached = join_order(node, start)
    aliases = [f"j{index}" for index in range(len(inputs))]
    sql = f"FROM {inputs[order[0]].subquery(aliases[order[0]])}"
    for index, conjuncts in zip(order[1:], attached[1:], strict=True):
        joined = inputs[index].subquery(aliases[index])
        if conjuncts:
            sql += f" JOIN {joined} ON {sql_expression(exp.and_(*conjuncts))}"
        else:
            sql += f" CROSS JOIN {joined}"  # no condition connects it
    if attached[0]:
        sql += f" WHERE {sql_expression(exp.and_(*attached[0]))}"
    outputs = ", ".join(quote_identifier(o) for o in node.outputs)
    weight = " * ".join(f"{quote_identifier(alias)}.{WEIGHT_SQL}" for alias in aliases)
    return engine.query(f"SELECT {outputs}, {weight} AS {WEIGHT_SQL} {sql}")


def join_order(node: Join, start: int) -> tuple[list[int], list[list[exp.Expr]]]:
    """The order in which to join ``node``'s inputs from ``start``, and per step the
    conjuncts of the condition first evaluable there (step 0: a filter on ``start``).

    Greedy, as Spark's ``ReorderJoin``: the next input is the first one that a conjunct
    connects to the inputs already joined (a conjunct over it and some of them, not a filter
    of its own), else the first one left. Inner joins commute, so any order gives the same
    Z-set; the order only decides the intermediate sizes.
    """
    pending = conjunct_inputs(node)
    order = [start]
    attached: list[list[exp.Expr]] = [[c for c, inputs in pending if inputs <= {start}]]
    pending = [(c, inputs) for c, inputs in pending if not inputs <= {start}]
    rest = [index for index in range(len(node.inputs)) if index != start]
    while rest:
        done = set(order)
        connected = (
            index
            for index in rest
            if any(
                index in inputs and inputs & done and inputs <= done | {index}
                for _, inputs in pending
            )
        )
        chosen = next(connected, rest[0])
        rest.remove(chosen)
        order.append(chosen)
        done.add(chosen)
        attached.append([c for c, inputs in pending if inputs <= done])
        pending = [(c, inputs) for c, inputs in pending if not inputs <= done]
    return order, attached


def conjunct_inputs(node: Join) -> list[tuple[exp.Expr, set[int]]]:
    """Each conjunct of ``node``'s condition with the inputs whose columns it reads."""
    owner = {name: index for index, child in enumerate(node.inputs) for name in child.outputs}
    return [
        (conjunct, {owner[c.name] for c in conjunct.find_all(exp.Column) if c.name in owner})
        for conjunct in conjuncts_of(node.condition)
    ]


def changed_core(node: Join, changed: list[int]) -> list[int]:
    """A connected set of ``node``'s inputs holding every ``changed`` one: those and the
    inputs on a shortest path from the first to each other in ``join_graph``. [] when a
    changed input is not connected to the first that way."""
    neighbours = join_graph(node)
    parent: dict[int, int | None] = {changed[0]: None}
    queue = deque([changed[0]])
    while queue:
        current = queue.popleft()
        for index in sorted(neighbours[current] - parent.keys()):
            parent[index] = current
            queue.append(index)
    core: set[int] = set()
    for index in changed:
        if index not in parent:
            return []
        step: int | None = index
        while step is not None and step not in core:  # up the BFS tree to the core
            core.add(step)
            step = parent[step]
    return sorted(core)


def join_graph(node: Join) -> dict[int, set[int]]:
    """Per input of ``node``, the inputs a conjunct over exactly those two connects it to
    (a wider conjunct cannot be evaluated before all its inputs are joined)."""
    neighbours: dict[int, set[int]] = {index: set() for index in range(len(node.inputs))}
    for _, inputs in conjunct_inputs(node):
        if len(inputs) == 2:
            first, second = sorted(inputs)
            neighbours[first].add(second)
            neighbours[second].add(first)
    return neighbours


def factored(node: Join, engine: DeltaEngine) -> Join | None:
    """``node`` as ``(⋈ core) ⋈ rest`` with ``changed_core`` inside (module docstring), or
    None when that spares no join: fewer than two changed inputs (one term either way), or a
    core of every input, or none."""
    changed = [index for index, child in enumerate(node.inputs) if engine.changed(child)]
    if len(changed) < 2:
        return None
    core = set(changed_core(node, changed))
    if not core or len(core) == len(node.inputs):
        return None
    core_join, outer = sub_join(node, core)
    rest = tuple(child for index, child in enumerate(node.inputs) if index not in core)
    return Join((core_join, *rest), outer)


def sub_join(node: Join, members: set[int]) -> tuple[Join, exp.Expr | None]:
    """The join of ``node``'s ``members`` (in input order) under the conjuncts over them
    alone, and the conjuncts left (those reading other inputs, and constants)."""
    conjuncts = conjunct_inputs(node)
    inner = [conjunct for conjunct, inputs in conjuncts if inputs and inputs <= members]
    outer = [conjunct for conjunct, inputs in conjuncts if not (inputs and inputs <= members)]
    return Join(tuple(node.inputs[i] for i in sorted(members)), _and(inner)), _and(outer)


def pivot(node: Join, changed: list[int], sizes: list[int]) -> int | None:
    """The changed input of ``node`` to join last, once (module docstring): the largest by
    ``sizes`` (ties: the later), among those whose removal leaves the other inputs connected
    by conjuncts over two of them; None with fewer than three ``changed`` inputs (no scan
    spared) or no such input."""
    if len(changed) < 3:
        return None
    everyone = set(range(len(node.inputs)))
    candidates = [i for i in changed if connected(node, everyone - {i})]
    return max(candidates, key=lambda i: (sizes[i], i), default=None)


def connected(node: Join, members: set[int]) -> bool:
    """Whether ``members`` (inputs of ``node``) are connected in ``join_graph`` by paths
    through members only."""
    neighbours = join_graph(node)
    reached = {min(members)}
    frontier = list(reached)
    while frontier:
        found = (neighbours[frontier.pop()] & members) - reached
        reached |= found
        frontier.extend(found)
    return reached == members


def without(node: Join, last: int) -> tuple[Join, exp.Expr | None]:
    """``sub_join`` of every input of ``node`` but ``last``."""
    return sub_join(node, set(range(len(node.inputs))) - {last})


def terms_scans(node: Join, changed: list[int], sizes: list[int]) -> list[int]:
    """Per input of ``node``, how often the terms of ``Δ(⋈ inputs)`` scan it (each scan a
    join), with ``changed`` the inputs whose change makes a term and ``sizes`` each input's
    bytes: each term scans every input but its changed one, except that a pivot is scanned
    once, by ``Δ(⋈ X) ⋈ P_old`` (module docstring). What ``delta`` runs, for the cost model
    (``plan/cost.py``), but for the inputs a term reads from their own change (``term_input``),
    which the model still counts."""
    last = pivot(node, changed, sizes)
    if last is None:
        return [len(changed) - (index in changed) for index in range(len(node.inputs))]
    first, _ = without(node, last)
    others = [index for index in range(len(node.inputs)) if index != last]
    inner = terms_scans(
        first, [others.index(i) for i in changed if i != last], [sizes[i] for i in others]
    )
    counts = [1] * len(node.inputs)  # the pivot by Δ(⋈ X) ⋈ P_old, the others by ΔP's term
    for position, index in enumerate(others):
        counts[index] += inner[position]
    return counts


def _and(conjuncts: list[exp.Expr]) -> exp.Expr | None:
    return exp.and_(*conjuncts) if conjuncts else None


def conjuncts_of(condition: exp.Expr | None) -> list[exp.Expr]:
    """The conjuncts of ``condition`` (nested ANDs and parentheses flattened)."""
    if condition is None:
        return []
    if isinstance(condition, exp.Paren):
        return conjuncts_of(condition.this)
    if isinstance(condition, exp.And):
        return conjuncts_of(condition.this) + conjuncts_of(condition.expression)
    return [condition]


def base_columns(node: Node, names: list[str]) -> KeyedColumns | None:
    """The base table and its columns that ``node``'s outputs ``names`` pass through
    unchanged, when ``node`` is filters and projections over one scan (linear in that
    table); else None."""
    while not isinstance(node, Scan):
        if isinstance(node, Filter):
            node = node.child
            continue
        if not isinstance(node, Project) or node.native is not None:
            return None
        expressions = dict(zip(node.outputs, node.expressions, strict=True))
        passed = [expressions[name] for name in names]
        if not all(isinstance(e, exp.Column) and e.name in node.child.outputs for e in passed):
            return None
        names = [e.name for e in passed]
        node = node.child
    columns = dict(zip(node.outputs, node.columns, strict=True))
    return node.table, tuple(columns[name] for name in names)


def equated(node: Join, changed: int, other: int) -> tuple[KeyedColumns, KeyedColumns] | None:
    """The base columns of input ``other`` and of input ``changed`` that the conjuncts
    ``other.a = changed.b`` (columns on both sides) over those two inputs alone equate,
    pairwise; None when there is no such conjunct or either input is not linear in one
    table (``base_columns``)."""
    ours: list[str] = []
    theirs: list[str] = []
    for conjunct, inputs in conjunct_inputs(node):
        if inputs != {changed, other} or type(conjunct) is not exp.EQ:
            continue
        left, right = conjunct.this, conjunct.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        if left.name in node.inputs[changed].outputs:
            left, right = right, left
        ours.append(left.name)
        theirs.append(right.name)
    if not ours:
        return None
    rows = base_columns(node.inputs[other], ours)
    keys = base_columns(node.inputs[changed], theirs)
    return None if rows is None or keys is None else (rows, keys)


def only_changed_rows(node: Join, changed: int, other: int, engine: DeltaEngine) -> str | None:
    """The table of input ``other`` when, in the term of input ``changed``'s change, it is
    read from its own change (module docstring): it changed, it is equated to ``changed``
    (``equated``), and ``engine``'s proofs prove it; else None."""
    if not engine.changed(node.inputs[other]):
        return None
    keyed = equated(node, changed, other)
    if keyed is None or not engine.rows_only_changed(*keyed):
        return None
    return keyed[0][0]


def term_input(
    node: Join, index: int, changed: int, version: Version | None, engine: DeltaEngine
) -> Relation:
    """Input ``index`` in the term of input ``changed``'s change: that change (``version``
    None), or its value as of ``version``, read from its own change where
    ``only_changed_rows`` says so."""
    child = node.inputs[index]
    if version is None:
        return engine.change(child)
    table = only_changed_rows(node, changed, index, engine)
    if table is not None:
        return engine.changed_rows(child, table, version)
    return engine.value(child, version)


def describe_term_input(
    node: Join, index: int, changed: int, version: Version | None, engine: DeltaEngine
) -> str:
    """``term_input`` in the rules' algebra: ``Δ⁺R`` / ``Δ⁻R`` for the rows a change
    inserted / deleted read in place of ``R`` / ``R_old``."""
    child = node.inputs[index]
    if version is None:
        return engine.describe(child)
    if only_changed_rows(node, changed, index, engine) is not None:
        sign = "⁻" if version is Version.OLD else "⁺"
        return f"Δ{sign}{engine.describe(child, Version.NEW)}"
    return engine.describe(child, version)


def evaluate(node: Join, version: Version, engine: DeltaEngine) -> Relation:
    return join(node, [engine.value(i, version) for i in node.inputs], engine)


def delta_terms(node: Join, engine: DeltaEngine) -> list[tuple[int, list[Version | None]]]:
    """Per changed input ``i``: the versions of the inputs in its term (None: ``ΔR_i``)."""
    terms = []
    for index, changed in enumerate(node.inputs):
        if not engine.changed(changed):
            continue
        versions: list[Version | None] = [Version.NEW] * index + [None]
        versions += [Version.OLD] * (len(node.inputs) - index - 1)
        terms.append((index, versions))
    return terms


def delta(node: Join, engine: DeltaEngine) -> Relation:
    whole = factored(node, engine)
    if whole is not None:  # one term, Δcore ⋈ rest; its columns in ``node``'s order
        outputs = ", ".join(quote_identifier(o) for o in node.outputs)
        change = engine.change(whole).subquery("f")
        return engine.query(f"SELECT {outputs}, {WEIGHT_SQL} FROM {change}")
    last = engine_pivot(node, engine)
    if last is not None:  # Δ(⋈ X) ⋈ P_old + (⋈ X_new) ⋈ ΔP
        first, condition = without(node, last)
        outputs = ", ".join(quote_identifier(o) for o in node.outputs)
        change = engine.change(first).subquery("x")
        old = engine.value(node.inputs[last], Version.OLD).subquery("p")
        joined = f"JOIN {old} ON {sql_expression(condition)}" if condition else f"CROSS JOIN {old}"
        weight = f"x.{WEIGHT_SQL} * p.{WEIGHT_SQL}"
        inputs = [
            term_input(node, i, last, None if i == last else Version.NEW, engine)
            for i in range(len(node.inputs))
        ]
        pivot_term = join(node, inputs, engine, start=last)
        sql = f"SELECT {outputs}, {weight} AS {WEIGHT_SQL} FROM {change} {joined}"
        return engine.query(f"{sql} UNION ALL {pivot_term.sql}")
    terms = [
        join(
            node,
            [term_input(node, i, changed, v, engine) for i, v in enumerate(versions)],
            engine,
            start=changed,
        )
        for changed, versions in delta_terms(node, engine)
    ]
    return engine.query(" UNION ALL ".join(term.sql for term in terms))


def engine_pivot(node: Join, engine: DeltaEngine) -> int | None:
    """``pivot`` of ``node`` over ``engine``'s changed inputs and the bytes of their tables."""
    changed = [index for index, child in enumerate(node.inputs) if engine.changed(child)]
    return pivot(node, changed, [engine.scanned_bytes(child) for child in node.inputs])


def describe(node: Join, version: Version | None, engine: DeltaEngine) -> str:
    if version is not None:
        return " ⋈ ".join(engine.describe(i, version) for i in node.inputs)
    whole = factored(node, engine)
    if whole is not None:
        core, *rest = whole.inputs
        rows = [engine.describe(child, Version.NEW) for child in rest]
        return " ⋈ ".join([f"({engine.describe(core)})", *rows])
    last = engine_pivot(node, engine)
    if last is not None:
        first, _ = without(node, last)
        others = [i for i in range(len(node.inputs)) if i != last]
        rows = [describe_term_input(node, i, last, Version.NEW, engine) for i in others]
        return (
            f"({engine.describe(first)}) ⋈ {engine.describe(node.inputs[last], Version.OLD)} + "
            + " ⋈ ".join([*rows, engine.describe(node.inputs[last])])
        )
    terms = [
        " ⋈ ".join(describe_term_input(node, i, changed, v, engine) for i, v in enumerate(versions))
        for changed, versions in delta_terms(node, engine)
    ]
    return " + ".join(terms)


RULE = DeltaRule(Join, evaluate, delta, describe)
