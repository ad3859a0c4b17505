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
a view with such subqueries, and every term of a change that reads their value, costs what
Spark's plan of the query costs.

``supp(R_v)`` is ``R_v``'s rows as of NEW, where every rule's value has positive weights
(``union_all`` consolidates a difference). As of OLD a value is ``NEW ⊎ −Δ``, unconsolidated:
a row inserted since is there with weights 1 and −1, so the support is the rows whose weights
sum above zero, grouped on the columns the condition reads. Wherever the node is not the
expansion ``decorrelate`` built, the expansion's own rules compute the value.
"""

from __future__ import annotations

from sqlglot import exp

from sparkmv.analyze.ir import Join, Node, Project, SemiJoinOf, UnionAll
from sparkmv.delta.engine import DeltaEngine, Version, sql_expression
from sparkmv.delta.relation import WEIGHT_SQL, Relation, renamed
from sparkmv.parse.statements import quote_identifier


def native_value(
    node: Project | UnionAll, version: Version, engine: DeltaEngine
) -> Relation | None:
    """``node``'s value as of ``version`` by Spark's semi- or anti-join (``node.native``), or
    None where the expansion's rules must compute it."""
    spec = node.native
    if spec is None or _expanded_left(node) is not spec.left or not _joinable(spec):
        return None
    left = engine.value(spec.left, version).subquery("l")
    kind = "LEFT ANTI" if spec.anti else "LEFT SEMI"
    return engine.query(
        f"SELECT {renamed(spec.left.outputs, node.outputs)}, {WEIGHT_SQL} FROM {left} "
        f"{kind} JOIN ({_support(spec, version, engine)}) AS `m` "
        f"ON {sql_expression(spec.condition)}"
    )


def _support(spec: SemiJoinOf, version: Version, engine: DeltaEngine) -> str:
    """The rows of ``supp(R_v)``, as the columns the condition reads (one constant column
    when it reads none): ``R_v``'s own rows as of NEW, its rows of positive net weight as of
    OLD (equal rows summed: a multiset has no negative multiplicities, so a projection's
    positive sums are the projected support)."""
    if not engine.changed(spec.right):
        version = Version.NEW  # the same rows either way (``DeltaEngine.value``)
    right = engine.value(spec.right, version).subquery("r")
    read = {column.name for column in spec.condition.find_all(exp.Column)}
    names = ", ".join(quote_identifier(o) for o in spec.right.outputs if o in read)
    if version is Version.NEW:
        return f"SELECT {names or _ONE} FROM {right}"
    grouped = f" GROUP BY {names}" if names else ""
    return f"SELECT {names or _ONE} FROM {right}{grouped} HAVING SUM({WEIGHT_SQL}) > 0"


_ONE = f"1 AS {quote_identifier('__sparkmv_one')}"


def _expanded_left(node: Project | UnionAll) -> Node | None:
    """The left input of the expansion ``node`` is (``decorrelate.semijoin``: a projection of
    ``L ⋈ …``; ``decorrelate.antijoin``: ``L ⊎ −…``), or None."""
    if isinstance(node, UnionAll):
        return node.children[0]
    return node.child.inputs[0] if isinstance(node.child, Join) else None


def _joinable(spec: SemiJoinOf) -> bool:
    """Whether the condition reads the two inputs' columns only, and those are apart."""
    left, right = set(spec.left.outputs), set(spec.right.outputs)
    read = {column.name for column in spec.condition.find_all(exp.Column)}
    return bool(right) and not left & right and read <= left | right
