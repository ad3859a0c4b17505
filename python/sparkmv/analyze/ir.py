"""The view IR: relational operators over Z-sets, the nodes the delta rules work on.

``relational.RelationalBuilder`` builds a tree of these from a query (its docstring says which
SQL becomes which node), ``decorrelate`` adds the nodes subqueries and outer joins become, and
``sparkmv.delta`` has one rule per node. Every node has ``outputs``: its columns' internal
names (``__c0``, ``__c1``, …), unique in the whole tree, so that an expression names a column
without a qualifier. A subtree may be shared by several parents (an anti-join reads its left
input twice): the tree is then a DAG, and ``walk`` yields each node once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp


class NotMaintainableError(Exception):
    """The query has a construct incremental maintenance does not cover (the message names it)."""


@dataclass(frozen=True, eq=False)
class Scan:
    table: str  # qualified, lower case: db.name
    columns: tuple[str, ...]  # the table's column names, in schema order
    outputs: tuple[str, ...]  # internal names, positionally
    alias: str  # the name the query gave this occurrence (for EXPLAIN)


@dataclass(frozen=True, eq=False)
class Join:
    inputs: tuple[Node, ...]
    condition: exp.Expr | None

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(name for node in self.inputs for name in node.outputs)


@dataclass(frozen=True, eq=False)
class Filter:
    child: Node
    predicate: exp.Expr

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs


@dataclass(frozen=True)
class SemiJoinOf:
    """What a node ``decorrelate`` built computes, said plainly (the node's ``native``):
    ``left ⋉_condition right``, or with ``anti`` ``left ▷_condition right``. The node is the
    expansion the delta rules maintain; its *value* is Spark's own semi- or anti-join of the
    two inputs' values (``delta/semijoin.py``), which counts no keys of ``right``."""

    left: Node
    right: Node
    condition: exp.Expr
    anti: bool


@dataclass(frozen=True, eq=False)
class Project:
    child: Node
    expressions: tuple[exp.Expr, ...]
    outputs: tuple[str, ...]
    native: SemiJoinOf | None = None  # a semi-join's expansion (``decorrelate.semijoin``)


@dataclass(frozen=True, eq=False)
class Distinct:
    child: Node

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs


@dataclass(frozen=True, eq=False)
class UnionAll:
    children: tuple[Node, ...]
    outputs: tuple[str, ...]
    native: SemiJoinOf | None = None  # an anti-join's expansion (``decorrelate.antijoin``)


AGGREGATE_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
}


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate function of a view: ``function(argument)``; ``argument`` None is
    ``COUNT(*)``; ``distinct`` is ``function(DISTINCT argument)``."""

    function: str  # a value of AGGREGATE_FUNCTIONS
    argument: exp.Expr | None
    distinct: bool = False

    def label(self) -> str:
        """The call without its argument (whose columns have internal names), for EXPLAIN."""
        if self.argument is None:
            return "count(*)"
        return f"{self.function}({'DISTINCT ' if self.distinct else ''}·)"

    def sql(self) -> str:
        if self.argument is None:
            return "count(*)"
        inner = self.argument.sql(dialect="spark")
        return f"{self.function}({'DISTINCT ' if self.distinct else ''}{inner})"


@dataclass(frozen=True, eq=False)
class Aggregate:
    """``γ_{keys; calls}(child)``: one row per group of ``keys`` (exactly one row when there
    are no keys, even over no input), with the keys then the calls' values as outputs."""

    child: Node
    keys: tuple[exp.Expr, ...]
    key_outputs: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    call_outputs: tuple[str, ...]

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.key_outputs + self.call_outputs


@dataclass(frozen=True, eq=False)
class Negate:
    """``−X``: the rows of ``child`` with their weights negated (Z-set negation, so that
    ``X ⊎ −X = ∅``). With ``UnionAll`` it is the difference ``A ⊎ −B``, exact where ``B ⊆ A``
    as bags: ``L ▷ R = L ⊎ −(L ⋉ R)`` (``decorrelate.antijoin``)."""

    child: Node

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs


@dataclass(frozen=True, eq=False)
class Window:
    """``W_{K; f_1 … f_m}(child)``: every row of ``child`` with the values of the window
    functions ``calls`` (each an ``exp.Window``: the function, its PARTITION BY, ORDER BY and
    frame, over ``child``'s columns) appended as ``call_outputs``. ``partition`` holds the
    partition expressions the calls share (the intersection of their PARTITION BYs): a call's
    value in a row depends only on the rows of the same ``partition`` values, which is what
    ``delta/window.py`` recomputes. Empty: some call reads the whole input."""

    child: Node
    partition: tuple[exp.Expr, ...]
    calls: tuple[exp.Window, ...]
    call_outputs: tuple[str, ...]

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.child.outputs + self.call_outputs


@dataclass(frozen=True, eq=False)
class Replicate:
    """``ρ_n(X)``: each row of ``child`` ``n`` times, ``n`` its column ``copies`` (a
    non-negative integer), which the output drops. Linear: a row ``(t, n)`` of weight ``w``
    becomes ``t`` with weight ``w · n``. ``EXCEPT ALL`` and ``INTERSECT ALL`` keep
    ``max(n_A − n_B, 0)`` and ``min(n_A, n_B)`` copies of a row (``relational``)."""

    child: Node
    copies: str

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(name for name in self.child.outputs if name != self.copies)


@dataclass(frozen=True, eq=False)
class RecursiveRef:
    """One reference of a recursive CTE to itself inside its step (``Recursive``): a leaf
    whose value is whatever the delta engine binds it to (``DeltaEngine.bound``): the
    previous iteration's rows, the stored fixpoint, or a frontier of its change. A step that
    reads the CTE n times has n of these, each with its own output names (its last output
    is the level of its rows). ``anchor`` is the CTE's anchor (not a child: it only gives
    the reference its column types)."""

    name: str  # the CTE's name (for EXPLAIN)
    outputs: tuple[str, ...]
    anchor: Node


@dataclass(frozen=True, eq=False)
class Recursive:
    """``μr. anchor ⊎ step(r, …, r)``: a recursive CTE with ``UNION ALL`` (bag semantics)
    whose ``step`` reads it through ``refs`` (one or more), multilinearly: a sum of joins
    that each read every reference at most once (``delta/recursive.py``). Spark's
    iteration: ``R_0 = anchor``, ``R_{i+1} = step(R_i, …, R_i)`` (every reference reads the
    previous level only), value ``Σ_i R_i``; the step joins its references on their level.
    ``terms[i]`` is the step without the ``UNION ALL`` inputs that do not read ``refs[i]``
    (``monomials_reading``): the part of the step whose change ``refs[i]``'s change makes.
    ``key`` names its stored fixpoint among the view's (``r0``, ``r1``, …); ``limit`` is the
    recursion level limit written in the query (``MAX RECURSION LEVEL``), None: the
    session's."""

    anchor: Node
    step: Node
    refs: tuple[RecursiveRef, ...]
    outputs: tuple[str, ...]
    key: str
    terms: tuple[Node, ...]
    limit: int | None = None

    @property
    def ref(self) -> RecursiveRef:
        """The first reference: its output names name the fixpoint's columns in the rules."""
        return self.refs[0]


Node = (
    Scan
    | Join
    | Filter
    | Project
    | Distinct
    | UnionAll
    | Aggregate
    | Negate
    | Window
    | Replicate
    | RecursiveRef
    | Recursive
)


def children(node: Node) -> tuple[Node, ...]:
    """The inputs of ``node`` (a ``Negate``'s, like the other unary nodes', is ``child``)."""
    if isinstance(node, (Scan, RecursiveRef)):
        return ()
    if isinstance(node, Recursive):
        return (node.anchor, node.step)
    if isinstance(node, Join):
        return node.inputs
    if isinstance(node, UnionAll):
        return node.children
    return (node.child,)


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, parents first, each once (a shared subtree is
    walked where it is first met)."""
    seen: set[int] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(reversed(children(current)))


def scanned_tables(node: Node) -> set[str]:
    return {scan.table for scan in walk(node) if isinstance(scan, Scan)}


def expressions(node: Node) -> list[exp.Expr]:
    """The expressions ``node`` evaluates (its predicate, condition, select list, keys,
    aggregate arguments and window functions)."""
    if isinstance(node, Filter):
        return [node.predicate]
    if isinstance(node, Join):
        return [node.condition] if node.condition is not None else []
    if isinstance(node, Project):
        return list(node.expressions)
    if isinstance(node, Aggregate):
        return [*node.keys, *(c.argument for c in node.calls if c.argument is not None)]
    if isinstance(node, Window):
        return [*node.partition, *node.calls]
    if isinstance(node, Replicate):
        return [exp.column(node.copies, quoted=True)]
    return []


def read_columns(root: Node) -> dict[str, set[str]]:
    """Per base table, the columns whose values can change the query's result
    (``passed_columns``): no other column of a scan reaches the view or a condition, so a
    change of it alone changes nothing (a readily ignorable update)."""
    referenced = passed_columns(root)
    read: dict[str, set[str]] = {}
    for scan in walk(root):
        if isinstance(scan, Scan):
            names = read.setdefault(scan.table, set())
            names.update(
                c for c, o in zip(scan.columns, scan.outputs, strict=True) if o in referenced
            )
    return read


def passed_columns(root: Node, skipped: frozenset[int] = frozenset()) -> set[str]:
    """The columns (internal names) that the view's rows or a condition read, top down from
    the root's outputs: a projection reads its needed outputs' expressions, a ``UNION ALL``
    its inputs' columns at the needed positions (an outer join's or an anti-join's inputs
    pass through one unnamed), a ``DISTINCT`` every column it compares, a filter, join or
    aggregate its predicate, condition, keys and arguments, a window its functions (with
    their PARTITION BY and ORDER BY), a ``Replicate`` its copies, besides what it passes on
    (a ``Negate``, a filter, a join and a window pass their inputs' columns under their own
    names; a recursive CTE reads every column of its anchor, step and reference). The nodes
    whose ids are ``skipped`` read nothing (what reaches a node from above it: skip those
    below)."""
    needed = set(root.outputs)
    for node in _parents_first(root):
        if id(node) in skipped:
            continue
        wanted = needed & set(node.outputs)
        if isinstance(node, Project):
            pairs = zip(node.expressions, node.outputs, strict=True)
            read = [expression for expression, output in pairs if output in wanted]
        else:
            read = expressions(node)
        needed |= {column.name for expression in read for column in expression.find_all(exp.Column)}
        if isinstance(node, Recursive):  # every column feeds the next iteration
            needed |= {*node.anchor.outputs, *node.step.outputs}
            needed |= {name for ref in node.refs for name in ref.outputs}
        if isinstance(node, UnionAll):
            for child in node.children:
                positions = zip(child.outputs, node.outputs, strict=True)
                needed |= {name for name, output in positions if output in wanted}
        elif isinstance(node, Distinct):
            needed |= set(node.child.outputs)
    return needed


def shared_nodes(root: Node) -> list[Node]:
    """The nodes of ``root`` that two or more parents read (an anti-join's left input, the
    inner join of an outer join with a grouped aggregate)."""
    parents: dict[int, int] = {}
    for node in walk(root):
        for child in {id(c): c for c in children(node)}.values():
            parents[id(child)] = parents.get(id(child), 0) + 1
    return [node for node in walk(root) if parents.get(id(node), 0) > 1]


def shared_above_negation(root: Node) -> list[Node]:
    """The shared nodes of ``root`` (``shared_nodes``) with a ``Negate`` below them: those
    whose change the delta engine computes apart, by a job of its own (each reader would
    otherwise inline its SQL: a chain of k outer joins would hold ~3^k copies of the first
    one's change)."""
    return [
        node
        for node in shared_nodes(root)
        if any(isinstance(below, Negate) for below in walk(node))
    ]


def _parents_first(root: Node) -> list[Node]:
    """The nodes of ``root`` with every node after all of its parents (a shared subtree
    after each of its readers): reversed post-order."""
    order: list[Node] = []
    seen: set[int] = set()

    def visit(node: Node) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in children(node):
            visit(child)
        order.append(node)

    visit(root)
    return order[::-1]


def monomials_reading(node: Node, ref: RecursiveRef) -> Node:
    """``node`` (a recursive CTE's step, multilinear in its references) without the terms
    that do not read ``ref``: every ``UNION ALL`` on a path to ``ref`` keeps its inputs that
    read ``ref`` and has the others emptied (``σ_false``: the union's column types stay
    those Spark widens to). A join reading ``ref`` in one input multiplies the whole of the
    others, so they are kept. With ``f = Σ_m m`` the step's monomials, this is ``Σ`` of
    those reading ``ref``: what ``f(…, Δ, …)`` (Δ in ``ref``'s place) must sum, as the
    monomials not reading ``ref`` do not change with it."""
    return _reading(node, ref, {})


def _reading(node: Node, ref: RecursiveRef, done: dict[int, Node]) -> Node:
    known = done.get(id(node))
    if known is not None:
        return known
    result: Node
    if node is ref or not _reads(node, ref):
        result = node
    elif isinstance(node, UnionAll):
        result = UnionAll(
            tuple(
                _reading(child, ref, done) if _reads(child, ref) else Filter(child, exp.false())
                for child in node.children
            ),
            node.outputs,
        )
    elif isinstance(node, Join):
        result = Join(tuple(_reading(c, ref, done) for c in node.inputs), node.condition)
    elif isinstance(node, Filter):
        result = Filter(_reading(node.child, ref, done), node.predicate)
    elif isinstance(node, Project):
        result = Project(_reading(node.child, ref, done), node.expressions, node.outputs)
    elif isinstance(node, Negate):
        result = Negate(_reading(node.child, ref, done))
    else:  # the builder admits no other operator above a reference
        raise AssertionError(f"{type(node).__name__} above a recursive reference")
    done[id(node)] = result
    return result


def _reads(node: Node, ref: RecursiveRef) -> bool:
    return any(below is ref for below in walk(node))
