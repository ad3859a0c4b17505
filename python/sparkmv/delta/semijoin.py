"""The values of semi- and anti-joins, as Spark's own joins (``ir.SemiJoinOf``).

``decorrelate`` builds ``L ⋉_c R`` and ``L ▷_c R`` from nodes the rules maintain: a join of
``L`` with ``R``'s distinct keys, and ``L ⊎ −(L ⋉_c R)``. Their changes come from those nodes'
rules, and so do their values, unless computed here. A value needs none of that machinery:

    (L ⋉_c R)_v(t) = L_v(t) · [∃ r ∈ supp(R_v): c(t, r)]
    (L ▷_c R)_v(t) = L_v(t) · [∄ r ∈ supp(R_v): c(t, r)]

Both are linear in ``L``, so Spark's ``LEFT SEMI JOIN`` / ``LEFT ANTI JOIN`` of ``L_v``'s rows
(their weights kept) with ``R_v``'s rows computes them, as Spark computes ``EXISTS`` and
``NOT EXISTS`` itself: the expansion would count ``R``'s keys (an aggregate), and for the
anti-join consolidate the difference over all of ``L``'s columns (another). A full refresh of
a view with such subqueries, and every term of a change that reads their value as of NEW,
costs what Spark's plan of the query costs.

``supp(R_v)`` is ``R_v``'s rows as of NEW, where every rule's value has positive weights
(``union_all`` consolidates a difference), and as of OLD when ``R`` did not change. As of OLD a
changed ``R``'s value is ``NEW ⊎ −Δ``, unconsolidated (a row inserted since is there with
weights 1 and −1): its support would take an aggregate, as the expansion's distinct keys do,
so the expansion computes that value (measured: no faster the other way, and a job more for
TPC-H Q13). Wherever the node is not the expansion ``decorrelate`` built, the expansion's own
rules compute the value too.
"""

from __future__ import annotations

from sqlglot import exp

from sparkmv.analyze.decorrelate import conjunction, split_conjuncts
from sparkmv.analyze.ir import Join, Node, Project, SemiJoinOf, UnionAll
from sparkmv.delta.engine import DeltaEngine, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, renamed
from sparkmv.identifiers import quote_identifier


def native_value(
    node: Project | UnionAll, version: Version, engine: DeltaEngine
) -> Relation | None:
    """``node``'s value as of ``version`` by Spark's semi- or anti-join (``node.native``), or
    None where the expansion's rules compute it."""
    spec = node.native
    if spec is None or _expanded_left(node) is not spec.left or not _joinable(spec):
        return None
    if version is Version.OLD and engine.changed(spec.right):
        return None  # R_old is NEW ⊎ −Δ: its support would take an aggregate (module doc)
    left = engine.value(spec.left, version).subquery("l")
    right = engine.value(spec.right, Version.NEW).subquery("r")
    on, support = _split(spec)
    names = ", ".join(quote_identifier(o) for o in spec.right.outputs if o in _read(on))
    where = f" WHERE {sql_expression(support)}" if support is not None else ""
    kind = "LEFT ANTI" if spec.anti else "LEFT SEMI"
    return engine.query(
        f"SELECT {renamed(spec.left.outputs, node.outputs)}, {WEIGHT_SQL} FROM {left} "
        f"{kind} JOIN (SELECT {names or _ONE} FROM {right}{where}) AS `m` "
        f"ON {sql_expression(on)}"
    )


def _split(spec: SemiJoinOf) -> tuple[exp.Expr, exp.Expr | None]:
    """The condition's conjuncts over ``R``'s columns alone, which filter ``R`` before the
    join, and the rest, the join's condition (TRUE when none is left)."""
    outputs = set(spec.right.outputs)
    on: list[exp.Expr] = []
    alone: list[exp.Expr] = []
    for conjunct in split_conjuncts(spec.condition):
        read = _read(conjunct)
        (alone if read and read <= outputs else on).append(conjunct)
    return conjunction(on) or exp.true(), conjunction(alone)


_ONE = f"1 AS {quote_identifier('__sparkmv_one')}"
"""The support's one column when the join's condition reads none of ``R``'s."""


def _read(expression: exp.Expr) -> set[str]:
    return {column.name for column in expression.find_all(exp.Column)}


def _expanded_left(node: Project | UnionAll) -> Node | None:
    """The left input of the expansion ``node`` is (``decorrelate.semijoin``: a projection of
    ``L ⋈ …``; ``decorrelate.antijoin``: ``L ⊎ −…``), or None."""
    if isinstance(node, UnionAll):
        return node.children[0]
    return node.child.inputs[0] if isinstance(node.child, Join) else None


def _joinable(spec: SemiJoinOf) -> bool:
    """Whether the condition reads the two inputs' columns only, and those are apart."""
    left, right = set(spec.left.outputs), set(spec.right.outputs)
    return bool(right) and not left & right and _read(spec.condition) <= left | right
