"""The view's query as relational operators (``ir``): the IR the delta rules work on.

A query of the maintainable class (docs/sql-reference.md; Blakeley §5's ``π_X(σ_C(R_1 × … × R_p))``
blocks, combined with ``UNION ALL``, ``UNION``, ``INTERSECT``, ``EXCEPT`` and ``DISTINCT``)
becomes a tree of

- ``Scan``: one occurrence of a base table (a self-join has two);
- ``Join``: the cross product of its inputs restricted by the ``ON`` conditions of inner
  joins (comma and ``CROSS JOIN`` are joins without a condition); ``LEFT``/``RIGHT``/``FULL``
  outer joins and ``LEFT SEMI``/``LEFT ANTI`` joins of what precedes them in FROM as in
  ``decorrelate`` (an inner join, anti-joins ``L ∪ −(L ⋉ R)`` with ``Negate``, padding);
- ``Filter`` (``WHERE``), ``Project`` (the select list, bag semantics);
- ``Distinct`` (``SELECT DISTINCT``, and ``UNION`` as ``Distinct(UnionAll)``);
- ``UnionAll`` (and ``INTERSECT``/``EXCEPT`` as an ``Aggregate`` of per-row counters of the
  two inputs over their ``UnionAll``, ``RelationalBuilder._set_comparison``);
- ``Aggregate`` (``GROUP BY`` and aggregate functions: ``COUNT``, ``SUM``, ``AVG``, ``MIN``,
  ``MAX``, also ``DISTINCT``), with ``HAVING`` as a ``Filter`` and the select list as a
  ``Project`` above it;
- ``Window`` (window functions in the select list of a query without GROUP BY: each
  distinct call computed once over the rows of FROM and WHERE, the select list a ``Project``
  above it reading the calls' outputs; ``analyze/windows`` says which functions).

- ``Recursive`` (``WITH RECURSIVE r AS (anchor UNION ALL step)``, ``_recursive_cte``): the
  branches of the ``UNION ALL`` chain that do not read ``r`` are the anchor, the others the
  step, in which each reference to ``r`` is a ``RecursiveRef`` leaf of its own. The step
  must be multilinear in them (``_references``: only filters, projections, joins (each
  reading a reference at most once), ``Negate`` and ``UNION ALL`` of such terms above
  them), and carries the level of each row (a reference's last column, the references of
  one join joined on equal levels, ``+ 1`` at the step's top: ``_leveled``);
  ``delta/recursive.py`` maintains it over its stored fixpoint. The reference under
  DISTINCT, GROUP BY or a window, and ``UNION`` (set) are refused.

Subqueries in ``FROM`` and non-recursive ``WITH`` are inlined (each reference to a CTE is
its own subtree; each reference to a recursive CTE outside it its own ``Recursive`` node).
``ORDER BY`` without ``LIMIT`` is dropped: a view is a multiset.

Subqueries in expressions are decorrelated (``decorrelate``): a conjunct of ``WHERE`` that is
``[NOT] EXISTS`` or ``x [NOT] IN (subquery)`` becomes a semi-join, an anti-join or
``not_in`` of the rows so far with the subquery's FROM (under its WHERE's conjuncts that
read only its own columns; the others, over both, are the correlation); elsewhere (under
OR, in a select list) one is a mark join, a boolean column of the rows so far. A scalar
subquery (one aggregate value) in ``WHERE`` or a select list joins the rows so far with its
aggregate, grouped by the correlation's keys (a left outer join; none when uncorrelated),
and the expression reads its value there. In the select list or ``HAVING`` of an aggregate
query only uncorrelated scalar ones are taken (joined to the groups). A rewrite renames the
columns it passes on; the names in scope follow (``_rename``).

Columns are renamed to internal names unique in the whole tree (``__c0``, ``__c1``, …), and
every expression is rewritten to use them, so a self-join or a subquery alias needs no
qualifier and any column name works. Expressions stay sqlglot trees; they are rendered as
Spark SQL and evaluated with ``F.expr`` over DataFrames with the internal names.

Anything outside the class raises ``NotMaintainableError`` naming the construct.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlglot import exp

from sparkmv.analyze.constructs import find_unsupported_expression, unsupported_select_clause
from sparkmv.analyze.decorrelate import (
    Grouping,
    Side,
    antijoin,
    column,
    empty_defaults,
    equal,
    exists_mark,
    grouping,
    names_in,
    not_in,
    not_in_mark,
    outer_join,
    renamed,
    renaming,
    semijoin,
    split_conjuncts,
    unique_left_join,
)
from sparkmv.analyze.ir import (
    AGGREGATE_FUNCTIONS,
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Join,
    Negate,
    Node,
    NotMaintainableError,
    Project,
    Recursive,
    RecursiveRef,
    Replicate,
    Scan,
    UnionAll,
    Window,
    children,
    expressions,
    monomials_reading,
    read_columns,
    scanned_tables,
    walk,
)
from sparkmv.analyze.query import table_key
from sparkmv.analyze.windows import function_of, unsupported_window_call

__all__ = [  # the IR, for the modules that read it through the builder's module
    "AGGREGATE_FUNCTIONS",
    "Aggregate",
    "AggregateCall",
    "Distinct",
    "Filter",
    "Join",
    "Negate",
    "Node",
    "NotMaintainableError",
    "Project",
    "Recursive",
    "RecursiveRef",
    "RelationalBuilder",
    "Replicate",
    "Scan",
    "UnionAll",
    "Window",
    "children",
    "expressions",
    "read_columns",
    "scanned_tables",
    "walk",
]


def _aggregates(select: exp.Select) -> bool:
    """Whether ``select`` groups: ``GROUP BY``, ``HAVING`` or an aggregate function in its
    select list (not one inside a subquery, nor a window function)."""
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(
        isinstance(node, exp.AggFunc) and not _window_function(node)
        for projection in select.expressions
        for node in projection.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Select)))
    )


def _window_function(node: exp.Expr) -> bool:
    """Whether ``node`` is the function of a window call (``SUM`` in ``SUM(x) OVER (...)``):
    not an aggregate of the enclosing query (its arguments may hold one)."""
    while isinstance(node.parent, (exp.IgnoreNulls, exp.RespectNulls)):
        node = node.parent
    return isinstance(node.parent, exp.Window) and node.arg_key == "this"


def _window_calls(expression: exp.Expr) -> list[exp.Window]:
    """The window calls of a select-list item (not those of a subquery in it, refused)."""
    calls = list(expression.find_all(exp.Window))
    for call in calls:
        if call.find_ancestor(exp.Subquery, exp.Exists, exp.Select) not in (
            None,
            expression.parent_select,
        ):
            raise NotMaintainableError("a window function in a subquery of an expression")
    return calls


def _reads_table(tree: exp.Expr, name: str) -> bool:
    """Whether ``tree`` reads a table (a CTE) called ``name`` without a database."""
    return any(not t.db and t.name.lower() == name for t in tree.find_all(exp.Table))


def _union_all_branches(body: exp.Expr) -> list[exp.Expr]:
    """The branches of a recursive CTE's ``UNION ALL`` chain; ``UNION`` (set) is refused."""
    if isinstance(body, exp.Subquery) and not body.args.get("limit"):
        return _union_all_branches(body.this)
    if not isinstance(body, exp.Union):
        return [body]
    if body.args.get("distinct"):
        raise NotMaintainableError(
            "UNION (set) in a recursive CTE (Spark refuses it too:"
            " UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE)"
        )
    if body.args.get("limit") or body.args.get("offset"):
        raise NotMaintainableError("LIMIT / OFFSET")
    return _union_all_branches(body.this) + _union_all_branches(body.expression)


def _references(node: Node, refs: set[int], name: str) -> set[int]:
    """The references (ids, of ``refs``: a recursive CTE's, named ``name``) that ``node``
    reads, checking that it is multilinear in them — a sum of products, each reading a
    reference at most once: a filter, projection or ``Negate`` passes its input's on, a
    join the union of its inputs' (disjoint: a join of two inputs sharing a reference, as a
    rewritten subquery can be, reads it twice in one product), a ``UNION ALL`` its inputs'
    (each must read one: ``step(∅) ≠ ∅`` would add that input's rows at every level). Any
    other operator above a reference (DISTINCT, GROUP BY, a window, a nested recursion) is
    refused."""
    if isinstance(node, RecursiveRef) and id(node) in refs:
        return {id(node)}
    reads = [_references(child, refs, name) for child in children(node)]
    if not any(reads):
        return set()
    read = set().union(*reads)
    if isinstance(node, UnionAll):
        if not all(reads):
            raise NotMaintainableError(
                f"a UNION ALL in the step of {name} with an input that does not read it"
            )
        return read
    if isinstance(node, Join):
        if sum(len(r) for r in reads) != len(read):
            raise NotMaintainableError(
                f"a join in the step of {name} whose inputs read the same reference to {name}"
                f" (the step is not multilinear in the references to {name})"
            )
        return read
    if isinstance(node, (Filter, Project, Negate)):
        return read
    operator = {Distinct: "DISTINCT", Aggregate: "GROUP BY", Window: "a window function"}.get(
        type(node), type(node).__name__
    )
    raise NotMaintainableError(
        f"the recursive reference {name} under {operator} in the step (sparkmv maintains"
        f" steps that are unions of joins, filters and projections of the references to"
        f" {name}: multilinear in them)"
    )


@dataclass
class _Building:
    """A recursive CTE whose step is being built: its name, column names and anchor, and
    the references to it met so far (one ``RecursiveRef`` per occurrence)."""

    name: str
    columns: list[str]
    anchor: Node
    refs: list[RecursiveRef] = field(default_factory=list)


@dataclass
class _Relation:
    """A FROM item as the enclosing SELECT sees it: column name → internal name."""

    node: Node
    columns: dict[str, str]


@dataclass
class RelationalBuilder:
    """Builds the IR from a query qualified by ``sqlglot.optimizer.qualify``.

    ``tables`` maps each qualified base table to its column names (schema order).
    """

    tables: dict[str, tuple[str, ...]]
    _names: Iterator[int] = field(default_factory=itertools.count)
    # The bodies of the recursive CTEs in scope (by id), with their names; and those whose
    # step is being built, with their reference and column names.
    _recursive: dict[int, str] = field(default_factory=dict)
    _building: dict[int, _Building] = field(default_factory=dict)
    _fixpoints: Iterator[int] = field(default_factory=itertools.count)

    def build(self, tree: exp.Expr) -> tuple[Node, list[str]]:
        """The IR of ``tree`` and its output column names."""
        return self._query(tree, {})

    def _fresh(self) -> str:
        return f"__c{next(self._names)}"

    def _query(self, tree: exp.Expr, ctes: dict[str, exp.Expr]) -> tuple[Node, list[str]]:
        ctes = self._with(tree, ctes)
        if isinstance(tree, exp.Subquery):
            if tree.args.get("limit") or tree.args.get("offset"):
                raise NotMaintainableError("LIMIT / OFFSET")
            return self._query(tree.this, ctes)
        if isinstance(tree, exp.Union):
            return self._union(tree, ctes)
        if isinstance(tree, (exp.Intersect, exp.Except)):
            return self._set_comparison(tree, ctes)
        if isinstance(tree, exp.Select):
            return self._select(tree, ctes)
        raise NotMaintainableError(f"{type(tree).__name__.upper()} as a query")

    def _with(self, tree: exp.Expr, ctes: dict[str, exp.Expr]) -> dict[str, exp.Expr]:
        with_ = tree.args.get("with_") or tree.args.get("with")
        if not isinstance(with_, exp.With):
            return ctes
        scoped = dict(ctes)
        for cte in with_.expressions:
            name = cte.alias_or_name.lower()
            scoped[name] = cte.this
            if with_.args.get("recursive") and _reads_table(cte.this, name):
                self._recursive[id(cte.this)] = name
        return scoped

    def _recursive_cte(self, body: exp.Expr, cte: exp.Expr, ctes: dict[str, exp.Expr]) -> _Relation:
        """A reference to the recursive CTE ``body`` (``cte``: its definition, for its
        column list): inside its own step, the ``RecursiveRef``; elsewhere a ``Recursive``
        node, ``μr. anchor ⊎ step(r)``. Only ``UNION ALL`` of branches that do not read the
        CTE (the anchor) and branches that read it once, linearly (the step) is taken."""
        building = self._building.get(id(body))
        if building is not None:  # one more reference: its own names, its level last
            outputs = tuple(self._fresh() for _ in range(len(building.anchor.outputs) + 1))
            ref = RecursiveRef(building.name, outputs, building.anchor)
            building.refs.append(ref)
            return _Relation(ref, dict(zip(building.columns, outputs[:-1], strict=True)))
        name = self._recursive[id(body)]
        branches = _union_all_branches(body)
        anchors = [branch for branch in branches if not _reads_table(branch, name)]
        steps = [branch for branch in branches if _reads_table(branch, name)]
        if not anchors or not steps:
            raise NotMaintainableError(f"a recursive CTE ({name}) without an anchor and a step")
        anchor, names = self._branches(anchors, ctes)
        listed = (
            cte.args["alias"].columns if isinstance(cte.args.get("alias"), exp.TableAlias) else []
        )
        if listed:
            names = [column.name.lower() for column in listed]
        building = _Building(name, names, anchor)
        self._building[id(body)] = building
        try:
            step, _ = self._branches(steps, ctes)
        finally:
            del self._building[id(body)]
        if len(step.outputs) != len(anchor.outputs):
            raise NotMaintainableError(f"a recursive CTE ({name}) whose step has other columns")
        refs = tuple(building.refs)
        if not _references(step, {id(ref) for ref in refs}, name):
            raise NotMaintainableError(f"a recursive CTE ({name}) whose step does not read it")
        leveled, next_level = self._leveled(step, refs, {})
        one = exp.Literal.number(1)
        columns = (
            *(exp.column(c, quoted=True) for c in step.outputs),
            exp.Add(this=exp.column(next_level, quoted=True), expression=one),
        )
        step = Project(leveled, columns, tuple(self._fresh() for _ in columns))
        outputs = tuple(self._fresh() for _ in anchor.outputs)
        terms = tuple(monomials_reading(step, ref) for ref in refs)
        node = Recursive(anchor, step, refs, outputs, f"r{next(self._fixpoints)}", terms)
        return _Relation(node, dict(zip(names, outputs, strict=True)))

    def _leveled(
        self, node: Node, refs: tuple[RecursiveRef, ...], done: dict[int, tuple[Node, str]]
    ) -> tuple[Node, str]:
        """``node`` (a step, multilinear in ``refs``: ``_references``) passing on the level
        of the reference rows each of its rows comes from (a reference's last output, which
        the step's own select list drops), and that column's name: a projection on the path
        from a reference keeps it as a column of its own, a ``UNION ALL`` at the end of
        each input, and a join of several inputs that read references joins them on their
        levels too — Spark's step reads every reference at the same (the previous)
        level."""
        known = done.get(id(node))
        if known is not None:
            return known
        result: tuple[Node, str]
        if isinstance(node, RecursiveRef) and node in refs:
            result = (node, node.outputs[-1])
        elif isinstance(node, Filter):
            child, level = self._leveled(node.child, refs, done)
            result = (Filter(child, node.predicate), level)
        elif isinstance(node, Negate):
            child, level = self._leveled(node.child, refs, done)
            result = (Negate(child), level)
        elif isinstance(node, Join):
            result = self._leveled_join(node, refs, done)
        elif isinstance(node, Project):
            child, level = self._leveled(node.child, refs, done)
            output = self._fresh()
            column = exp.column(level, quoted=True)
            result = (Project(child, (*node.expressions, column), (*node.outputs, output)), output)
        elif isinstance(node, UnionAll):
            branches: list[Node] = []
            for branch in node.children:
                leveled, level = self._leveled(branch, refs, done)
                columns = tuple(exp.column(c, quoted=True) for c in (*branch.outputs, level))
                branches.append(Project(leveled, columns, tuple(self._fresh() for _ in columns)))
            output = self._fresh()
            result = (UnionAll(tuple(branches), (*node.outputs, output)), output)
        else:  # ``_references`` admits no other operator above a reference
            raise AssertionError(f"{type(node).__name__} above a recursive reference")
        done[id(node)] = result
        return result

    def _leveled_join(
        self, node: Join, refs: tuple[RecursiveRef, ...], done: dict[int, tuple[Node, str]]
    ) -> tuple[Node, str]:
        """A join in the step, leveled: its inputs that read references leveled and joined
        on equal levels (``l_1 = l_2 ∧ l_1 = l_3 …``); the first one's level passed on."""
        inputs = list(node.inputs)
        levels = []
        for index, child in enumerate(inputs):
            if any(below in refs for below in walk(child) if isinstance(below, RecursiveRef)):
                inputs[index], level = self._leveled(child, refs, done)
                levels.append(level)
        condition = node.condition
        for other in levels[1:]:
            same = exp.EQ(
                this=exp.column(levels[0], quoted=True), expression=exp.column(other, quoted=True)
            )
            condition = same if condition is None else exp.and_(condition, same)
        return Join(tuple(inputs), condition), levels[0]

    def _branches(
        self, branches: list[exp.Expr], ctes: dict[str, exp.Expr]
    ) -> tuple[Node, list[str]]:
        """The ``UNION ALL`` of ``branches`` (one: itself), and its column names."""
        built = [self._query(branch, ctes) for branch in branches]
        node, names = built[0]
        if len(built) == 1:
            return node, names
        if any(len(other.outputs) != len(node.outputs) for other, _ in built):
            raise NotMaintainableError("UNION ALL of inputs with different column counts")
        union = UnionAll(
            tuple(other for other, _ in built), tuple(self._fresh() for _ in node.outputs)
        )
        return union, names

    def _union(self, tree: exp.Union, ctes: dict[str, exp.Expr]) -> tuple[Node, list[str]]:
        (left, right), names = self._operands(tree, ctes)
        union: Node = UnionAll((left, right), tuple(self._fresh() for _ in left.outputs))
        if tree.args.get("distinct"):
            union = Distinct(union)
        return union, names

    def _operands(
        self, tree: exp.SetOperation, ctes: dict[str, exp.Expr]
    ) -> tuple[tuple[Node, Node], list[str]]:
        """The two inputs of a set operation, and its column names (the left input's)."""
        operation = type(tree).__name__.upper()
        for clause in ("limit", "offset"):
            if tree.args.get(clause):
                raise NotMaintainableError("LIMIT / OFFSET")
        left, names = self._query(tree.this, ctes)
        right, _ = self._query(tree.expression, ctes)
        if len(left.outputs) != len(right.outputs):
            raise NotMaintainableError(f"{operation} of inputs with different column counts")
        return (left, right), names

    def _set_comparison(
        self, tree: exp.Intersect | exp.Except, ctes: dict[str, exp.Expr]
    ) -> tuple[Node, list[str]]:
        """``A INTERSECT B`` and ``A EXCEPT B`` over the per-row counters of the two inputs:
        with each row of ``A`` tagged ``(1, 0)`` and each of ``B`` ``(0, 1)``,
        ``N = γ_{X; n_A = Σ tag_A, n_B = Σ tag_B}(A' ⊎ B')`` (Blakeley §5.1's multiplicity
        counters, maintained like any ``SUM``; grouping compares NULLs as equal, as the set
        operations do). Set semantics keep a row once: ``π_X σ_{n_A > 0 ∧ n_B ⋈ 0}(N)``, ``⋈``
        ``>`` for INTERSECT and ``=`` for EXCEPT. The ``ALL`` forms keep ``min(n_A, n_B)`` and
        ``max(n_A − n_B, 0)`` copies: ``ρ_k σ_{k > 0} π_{X, k}(N)`` (``Replicate``)."""
        (left, right), names = self._operands(tree, ctes)
        columns = tuple(self._fresh() for _ in left.outputs)
        tags = (self._fresh(), self._fresh())
        tagged = (self._tagged(left, (1, 0)), self._tagged(right, (0, 1)))
        key_outputs = tuple(self._fresh() for _ in columns)
        counts = (self._fresh(), self._fresh())
        aggregate = Aggregate(
            UnionAll(tagged, (*columns, *tags)),
            tuple(exp.column(c, quoted=True) for c in columns),
            key_outputs,
            tuple(AggregateCall("sum", exp.column(tag, quoted=True)) for tag in tags),
            counts,
        )
        in_left, in_right = (exp.column(count, quoted=True) for count in counts)
        zero = exp.Literal.number(0)
        keys = tuple(exp.column(key, quoted=True) for key in key_outputs)
        outputs = tuple(self._fresh() for _ in key_outputs)
        intersect = isinstance(tree, exp.Intersect)
        if tree.args.get("distinct"):
            right_test = exp.GT if intersect else exp.EQ
            predicate = exp.and_(
                exp.GT(this=in_left, expression=zero), right_test(this=in_right, expression=zero)
            )
            return Project(Filter(aggregate, predicate), keys, outputs), names
        if intersect:
            copies: exp.Expr = exp.Least(this=in_left, expressions=[in_right])
        else:
            difference = exp.Sub(this=in_left, expression=in_right)
            copies = exp.Greatest(this=difference, expressions=[zero])
        count = self._fresh()
        counted = Project(aggregate, (*keys, copies), (*outputs, count))
        positive = exp.GT(this=exp.column(count, quoted=True), expression=zero)
        return Replicate(Filter(counted, positive), count), names

    def _tagged(self, node: Node, tags: tuple[int, ...]) -> Project:
        """``node``'s rows with the constant columns ``tags`` appended."""
        columns = [exp.column(output, quoted=True) for output in node.outputs]
        expressions = (*columns, *(exp.Literal.number(tag) for tag in tags))
        return Project(node, expressions, tuple(self._fresh() for _ in expressions))

    def _select(self, select: exp.Select, ctes: dict[str, exp.Expr]) -> tuple[Node, list[str]]:
        clause = unsupported_select_clause(select)
        if clause:
            raise NotMaintainableError(clause)
        scope: dict[str, _Relation] = {}
        node = self._from(select, ctes, scope)
        where = select.args.get("where")
        if where is not None:
            node, _ = self._where(node, where.this, scope, ctes, None)
        projections = []
        for projection in select.expressions:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                raise NotMaintainableError("an unexpanded *")
            projections.append(projection.unalias())
        names = [projection.alias_or_name.lower() for projection in select.expressions]
        windowed = any(_window_calls(projection) for projection in projections)
        if _aggregates(select):
            if windowed:
                raise NotMaintainableError(
                    "a window function in an aggregate query (over the output of GROUP BY)"
                )
            node, expressions = self._grouped(select, node, projections, scope, ctes)
        else:
            if windowed:
                node, projections = self._windowed(node, projections, scope)
            node, expressions = self._selected(node, projections, scope, ctes)
        node = Project(node, tuple(expressions), tuple(self._fresh() for _ in expressions))
        if select.args.get("distinct"):
            if select.args["distinct"].args.get("on"):
                raise NotMaintainableError("DISTINCT ON")
            node = Distinct(node)
        return node, names

    def _from(
        self, select: exp.Select, ctes: dict[str, exp.Expr], scope: dict[str, _Relation]
    ) -> Node:
        """The FROM clause with its joins, its items' columns added to ``scope``: inner joins
        as one ``Join`` (comma and ``CROSS JOIN`` without a condition), each outer, semi or
        anti join of what precedes it with its right item as in ``decorrelate``."""
        source = select.args.get("from_") or select.args.get("from")
        if not isinstance(source, exp.From):
            raise NotMaintainableError("a query without FROM")
        return self._joined(source.this, select.args.get("joins") or [], ctes, scope)

    def _joined(
        self,
        first: exp.Expr,
        joins: list[exp.Join],
        ctes: dict[str, exp.Expr],
        scope: dict[str, _Relation],
    ) -> Node:
        """``first`` joined with ``joins`` in order, as ``_from`` describes."""
        inputs = [self._from_item(first, ctes, scope)]
        conditions: list[exp.Expr] = []
        for join in joins:
            if join.args.get("using"):
                raise NotMaintainableError("JOIN ... USING")
            kind = _join_kind(join)
            aliases = set(scope)
            right = self._from_item(join.this, ctes, scope)
            on = join.args.get("on")
            if kind == "inner":
                inputs.append(right)
                conditions.extend([on] if on is not None else [])
                continue
            left = self._inner_join(inputs, conditions, scope)
            conjuncts = split_conjuncts(self._expression(on, scope)) if on is not None else []
            inputs, conditions = (
                [self._outer_join(left, right, conjuncts, kind, scope, aliases)],
                [],
            )
        return self._inner_join(inputs, conditions, scope)

    def _inner_join(
        self, inputs: list[Node], conditions: list[exp.Expr], scope: dict[str, _Relation]
    ) -> Node:
        """The inner join of ``inputs`` under their ``ON`` ``conditions`` (one input: itself)."""
        condition = self._expression(exp.and_(*conditions), scope) if conditions else None
        return inputs[0] if len(inputs) == 1 else Join(tuple(inputs), condition)

    def _outer_join(
        self,
        left: Node,
        right: Node,
        conjuncts: list[exp.Expr],
        kind: str,
        scope: dict[str, _Relation],
        aliases: set[str],
    ) -> Node:
        """``left`` joined with ``right`` (an outer, semi or anti join, ``kind``), and the
        columns in ``scope`` renamed to the result's; a semi or anti join's right item leaves
        the scope (its columns are not in the result). ``aliases``: the scope's before
        ``right`` entered it."""
        if kind in ("semi", "anti"):
            rewrite = semijoin if kind == "semi" else antijoin
            node: Node = rewrite(left, right, conjuncts, self._fresh)
            for alias in set(scope) - aliases:
                del scope[alias]
            _rename(scope, renaming(left.outputs, node))
            return node
        side: Side = "left" if kind == "left" else "right" if kind == "right" else "full"
        node = outer_join(left, right, conjuncts, side, self._fresh)
        _rename(scope, renaming((*left.outputs, *right.outputs), node))
        return node

    def _where(
        self,
        node: Node,
        predicate: exp.Expr,
        scope: dict[str, _Relation],
        ctes: dict[str, exp.Expr],
        outer: dict[str, _Relation] | None,
    ) -> tuple[Node, list[exp.Expr]]:
        """``node`` under the conjuncts of ``predicate`` (``WHERE``), and the conjuncts that
        read columns of ``outer`` (a subquery's correlation, left to the caller). Plain
        conjuncts filter first; then each with a subquery, as a semi-join, anti-join, ``NOT
        IN`` or a join with a scalar subquery's aggregate (``_subquery_conjunct``)."""
        outer_names = {name for r in (outer or {}).values() for name in r.columns.values()}
        plain: list[exp.Expr] = []
        correlated: list[exp.Expr] = []
        subqueried: list[exp.Expr] = []
        for conjunct in split_conjuncts(_negation_normal(predicate)):
            if _has_subquery(conjunct):
                subqueried.append(conjunct)
                continue
            resolved = self._expression(conjunct, scope, outer)
            if names_in(resolved) & outer_names:
                correlated.append(conjunct)
            else:
                plain.append(resolved)
        if plain:
            node = Filter(node, exp.and_(*plain))
        for conjunct in subqueried:
            node = self._subquery_conjunct(node, conjunct, scope, ctes)
        # resolved last: a rewrite of a subquery conjunct renames the columns in scope
        return node, [self._expression(c, scope, outer) for c in correlated]

    def _subquery_conjunct(
        self, node: Node, conjunct: exp.Expr, scope: dict[str, _Relation], ctes: dict[str, exp.Expr]
    ) -> Node:
        """``σ_conjunct(node)`` for a conjunct with a subquery: ``[NOT] EXISTS`` a semi- or
        anti-join, ``x [NOT] IN (subquery)`` a semi-join or ``decorrelate.not_in``, anything
        else a filter over ``node`` joined with its scalar subqueries' values. The columns in
        ``scope`` are renamed to the result's."""
        negated, test = _negation(conjunct)
        if isinstance(test, exp.Exists):
            body = self._exists_body(test.this, ctes, scope)
            rewrite = antijoin if negated else semijoin
            result: Node = rewrite(node, body.node, body.correlated, self._fresh)
        elif isinstance(test, exp.In) and test.args.get("query") is not None:
            result = self._in_subquery(node, test, negated, scope, ctes)
        else:
            return self._scalar_filter(node, conjunct, scope, ctes)
        _rename(scope, renaming(node.outputs, result))
        return result

    def _in_subquery(
        self,
        node: Node,
        test: exp.In,
        negated: bool,
        scope: dict[str, _Relation],
        ctes: dict[str, exp.Expr],
    ) -> Node:
        """``x IN (SELECT y ...)``: ``node ⋉_{c ∧ x = y} R``; negated, ``decorrelate.not_in``."""
        needle, right, value, correlated = self._in_operands(test, scope, ctes)
        if negated:
            return not_in(node, right, needle, value, correlated, self._fresh)
        return semijoin(node, right, [*correlated, equal(needle, value)], self._fresh)

    def _in_operands(
        self, test: exp.In, scope: dict[str, _Relation], ctes: dict[str, exp.Expr]
    ) -> tuple[exp.Expr, Node, exp.Expr, list[exp.Expr]]:
        """``x IN (SELECT y FROM R WHERE c)``'s ``x`` (over ``scope``), ``R``, ``y`` and ``c``."""
        if isinstance(test.this, exp.Tuple):
            raise NotMaintainableError("IN (subquery) of several columns")
        if _has_subquery(test.this):
            raise NotMaintainableError("a subquery in the operand of IN (subquery)")
        needle = self._expression(test.this, scope)
        right, value, correlated = self._in_values(test.args["query"], ctes, scope)
        return needle, right, value, correlated

    def _in_values(
        self, query: exp.Expr, ctes: dict[str, exp.Expr], outer: dict[str, _Relation]
    ) -> tuple[Node, exp.Expr, list[exp.Expr]]:
        """The rows ``R`` of an ``IN`` subquery, its value ``y`` over them and its correlation:
        a plain SELECT's FROM and WHERE (correlated or not); any other query uncorrelated, as
        a whole (``y`` its one column)."""
        select = _unwrapped(query)
        if isinstance(select, exp.Select) and not _aggregates(select):
            if len(select.expressions) != 1:
                raise NotMaintainableError("IN (subquery) of several columns")
            body = self._subquery_body(select, ctes, outer)
            value = self._expression(select.expressions[0].unalias(), body.scope)
            return body.node, value, body.correlated
        if _outer_qualifiers(select):
            raise NotMaintainableError(
                "a correlated IN (subquery) with GROUP BY, an aggregate or a set operation"
            )
        node, _ = self._query(select, ctes)
        if len(node.outputs) != 1:
            raise NotMaintainableError("IN (subquery) of several columns")
        return node, column(node.outputs[0]), []

    def _exists_body(
        self, query: exp.Expr, ctes: dict[str, exp.Expr], outer: dict[str, _Relation]
    ) -> _Body:
        """The rows of an ``EXISTS`` subquery and its correlation (its select list is read by
        nothing)."""
        select = _unwrapped(query)
        if not isinstance(select, exp.Select):
            if _outer_qualifiers(select):
                raise NotMaintainableError("a correlated EXISTS over a set operation")
            node, _ = self._query(select, ctes)
            return _Body(node, {}, [])
        if _aggregates(select):
            raise NotMaintainableError("EXISTS over a subquery with GROUP BY or an aggregate")
        return self._subquery_body(select, ctes, outer)

    def _subquery_body(
        self, select: exp.Select, ctes: dict[str, exp.Expr], outer: dict[str, _Relation]
    ) -> _Body:
        """A subquery's FROM under the conjuncts of its WHERE that read none of ``outer``'s
        columns, its scope, and the conjuncts that do (its correlation). A column of
        ``outer`` anywhere else in it cannot be resolved (refused)."""
        clause = unsupported_select_clause(select)
        if clause:
            raise NotMaintainableError(clause)
        ctes = self._with(select, ctes)
        scope: dict[str, _Relation] = {}
        node = self._from(select, ctes, scope)
        where = select.args.get("where")
        if where is None:
            return _Body(node, scope, [])
        node, correlated = self._where(node, where.this, scope, ctes, outer)
        return _Body(node, scope, correlated)

    def _scalar_filter(
        self, node: Node, conjunct: exp.Expr, scope: dict[str, _Relation], ctes: dict[str, exp.Expr]
    ) -> Node:
        """``σ_conjunct(node)`` for a conjunct with scalar subqueries, or ``EXISTS`` / ``IN``
        other than as the conjunct itself (under OR, say): ``node`` joined with each one's
        value (``_subquery_values``), then filtered."""
        values: dict[str, exp.Expr] = {}
        held = self._placeheld(conjunct, values)
        node, values = self._subquery_values(node, values, scope, ctes)
        return Filter(node, self._expression(held, scope, values=values))

    def _selected(
        self,
        node: Node,
        projections: list[exp.Expr],
        scope: dict[str, _Relation],
        ctes: dict[str, exp.Expr],
    ) -> tuple[Node, list[exp.Expr]]:
        """A select list without aggregates: ``node`` joined with its subqueries' values
        (scalar ones, and ``EXISTS`` / ``IN`` marks), and the list over the result's columns."""
        values: dict[str, exp.Expr] = {}
        held = [self._placeheld(_negation_normal(e), values) for e in projections]
        node, values = self._subquery_values(node, values, scope, ctes)
        return node, [self._expression(e, scope, values=values) for e in held]

    def _windowed(
        self, node: Node, projections: list[exp.Expr], scope: dict[str, _Relation]
    ) -> tuple[Window, list[exp.Expr]]:
        """``Window`` over ``node`` (the rows of FROM and WHERE) with each distinct window
        call of the select list, and the list with each call replaced by its output: a
        column the scope resolves (under the alias "", which no FROM item has), so that the
        joins of subqueries in the list rename it like any other. The window's partition is
        what the calls' PARTITION BYs share."""
        calls: dict[str, tuple[exp.Window, str]] = {}

        def hold(expression: exp.Expr) -> exp.Expr:
            if not isinstance(expression, exp.Window):
                return expression
            call = self._window_call(expression, scope)
            known = calls.setdefault(call.sql(dialect="spark"), (call, self._fresh()))
            return exp.column(known[1])

        held = []
        for projection in projections:
            _window_calls(projection)  # refuses one inside a subquery, which hold would take
            held.append(projection.transform(hold))
        resolved = [call for call, _ in calls.values()]
        shared = [
            key
            for key in resolved[0].args.get("partition_by") or []
            if all(
                key.sql() in {k.sql() for k in call.args.get("partition_by") or []}
                for call in resolved
            )
        ]
        outputs = tuple(output for _, output in calls.values())
        window = Window(node, tuple(shared), tuple(resolved), outputs)
        scope[""] = _Relation(window, {output: output for output in outputs})
        return window, held

    def _window_call(self, call: exp.Window, scope: dict[str, _Relation]) -> exp.Window:
        """A window call over the internal names of ``scope``; refused when the rule does not
        maintain its function (``windows.unsupported_window_call``) or its arguments, keys or
        order hold what no expression may (an aggregate, a subquery, another window)."""
        construct = unsupported_window_call(call)
        if construct:
            raise NotMaintainableError(construct)
        order = call.args.get("order")
        parts = [
            *function_of(call).iter_expressions(),
            *(call.args.get("partition_by") or []),
            *(order.expressions if order else []),
        ]
        for part in parts:
            construct = find_unsupported_expression(part)
            if construct:
                raise NotMaintainableError(construct)
        renamed = self._renamed(call, scope)
        assert isinstance(renamed, exp.Window)
        return renamed

    def _grouped(
        self,
        select: exp.Select,
        child: Node,
        projections: list[exp.Expr],
        scope: dict[str, _Relation],
        ctes: dict[str, exp.Expr],
    ) -> tuple[Node, list[exp.Expr]]:
        """``Aggregate`` over ``child``, joined with the (uncorrelated) scalar subqueries of
        its select list and ``HAVING``, under the ``HAVING`` filter; and the select list as
        expressions over the result."""
        subqueries: dict[str, exp.Expr] = {}
        held = [self._placeheld(projection, subqueries) for projection in projections]
        having = select.args.get("having")
        condition = self._placeheld(having.this, subqueries) if having is not None else None
        aggregate, expressions, condition = self._aggregate(
            select, child, held, scope, having=condition, bound=frozenset(subqueries)
        )
        node: Node = aggregate
        for name, subquery in subqueries.items():
            if not isinstance(subquery, exp.Subquery):
                raise NotMaintainableError(
                    "EXISTS / IN (subquery) in the select list or HAVING of an aggregate query"
                )
            if _outer_qualifiers(subquery):
                raise NotMaintainableError(
                    "a correlated subquery in the select list or HAVING of an aggregate query"
                )
            node, subqueries[name] = self._scalar(node, subquery, _Rows(node, {}), ctes)
        expressions = [_bound(expression, subqueries) for expression in expressions]
        if condition is not None:
            node = Filter(node, _bound(condition, subqueries))
        return node, expressions

    def _placeheld(self, expression: exp.Expr, subqueries: dict[str, exp.Expr]) -> exp.Expr:
        """``expression`` with each subquery (a scalar one, ``EXISTS (...)``, ``x IN (...)``
        and ``NOT (x IN (...))``, which Spark reads apart) replaced by a placeholder column
        (a new internal name), added to ``subqueries``."""

        def hold(node: exp.Expr) -> exp.Expr:
            if isinstance(node, (exp.Any, exp.All)):
                raise NotMaintainableError("a comparison with ANY / ALL (subquery)")
            test = _negation(node)[1] if isinstance(node, exp.Not) else node
            predicate = isinstance(node, exp.Exists) or (
                isinstance(test, exp.In) and test.args.get("query") is not None
            )
            if predicate or isinstance(node, exp.Subquery):
                name = self._fresh()
                subqueries[name] = node
                return exp.column(name)
            return node

        return expression.copy().transform(hold)

    def _subquery_values(
        self,
        node: Node,
        subqueries: dict[str, exp.Expr],
        scope: dict[str, _Relation],
        ctes: dict[str, exp.Expr],
    ) -> tuple[Node, dict[str, exp.Expr]]:
        """``node`` joined with each of ``subqueries`` (by placeholder) in turn, the columns
        in ``scope`` renamed to the result's; and each placeholder's value over the result:
        a scalar subquery's (``_scalar``), or the mark of ``EXISTS`` / ``IN`` (``_mark``).
        A scalar subquery is correlated with ``node`` as it was (``_Rows``), not with the
        joins of the ones before it: its aggregate is then the same whatever their change."""
        copied = {alias: _Relation(r.node, dict(r.columns)) for alias, r in scope.items()}
        rows = _Rows(node, copied, {name: name for name in node.outputs})
        values: dict[str, exp.Expr] = {}
        for name, subquery in subqueries.items():
            if isinstance(subquery, exp.Subquery):
                joined, value = self._scalar(node, subquery, rows, ctes)
            else:
                joined = self._mark(node, subquery, scope, ctes)
                value = column(joined.outputs[len(node.outputs)])
            mapping = renaming(node.outputs, joined)
            _rename(scope, mapping)
            rows.names = {base: mapping.get(now, now) for base, now in rows.names.items()}
            values = {held: renamed(v, mapping) for held, v in values.items()}
            values[name] = value
            node = joined
        return node, values

    def _mark(
        self, node: Node, test: exp.Expr, scope: dict[str, _Relation], ctes: dict[str, exp.Expr]
    ) -> Node:
        """``node`` with the value of ``EXISTS (...)``, ``x IN (...)`` or ``NOT (x IN (...))``
        as one more column (a mark join: ``decorrelate.exists_mark``, ``not_in_mark``)."""
        negated, test = _negation(test)
        if isinstance(test, exp.Exists):
            body = self._exists_body(test.this, ctes, scope)
            return exists_mark(node, body.node, body.correlated, self._fresh)
        assert isinstance(test, exp.In)
        needle, right, value, correlated = self._in_operands(test, scope, ctes)
        if negated:
            return not_in_mark(node, right, needle, value, correlated, self._fresh)
        matches = [*correlated, equal(needle, value)]
        return exists_mark(node, right, matches, self._fresh)

    def _scalar(
        self, node: Node, subquery: exp.Expr, rows: _Rows, ctes: dict[str, exp.Expr]
    ) -> tuple[Node, exp.Expr]:
        """``node`` with a scalar subquery's value per row: its columns first, then the
        subquery's aggregate's; and the value over them. The subquery is correlated with
        ``rows`` (``node``, or what it was built from). Uncorrelated, the aggregate (exactly
        one row: no GROUP BY) joined to every row; correlated, one row per correlation key
        joined by a left outer join (``decorrelate.grouping``), a missing group standing for
        the aggregate over no rows."""
        select = _unwrapped(subquery)
        if not isinstance(select, exp.Select):
            raise NotMaintainableError("a scalar subquery over a set operation")
        if not _aggregates(select) or len(select.expressions) != 1:
            raise NotMaintainableError(
                "a scalar subquery that is not one aggregate value (it may return several rows)"
            )
        if select.args.get("having"):
            raise NotMaintainableError("a scalar subquery with HAVING")
        body = self._subquery_body(select, ctes, rows.scope)
        projection = [select.expressions[0].unalias()]
        if not body.correlated:
            if select.args.get("group"):
                raise NotMaintainableError(
                    "an uncorrelated scalar subquery with GROUP BY (it may return several rows)"
                )
            aggregate, values, _ = self._aggregate(select, body.node, projection, body.scope)
            return Join((node, aggregate), None), values[0]
        group = grouping(rows.node, body.node, body.correlated, self._fresh)
        aggregate, key_outputs, value = self._correlated_aggregate(select, group, projection, body)
        condition = [renamed(c, rows.names) for c in group.condition(key_outputs)]
        joined = unique_left_join(node, aggregate, condition, self._fresh)
        return joined, renamed(value, renaming((*node.outputs, *aggregate.outputs), joined))

    def _correlated_aggregate(
        self, select: exp.Select, group: Grouping, projection: list[exp.Expr], body: _Body
    ) -> tuple[Aggregate, list[str], exp.Expr]:
        """A correlated scalar subquery's aggregate, one row per correlation key: its key
        columns in the order of ``group.keys``, and the subquery's value over its columns.
        Its own GROUP BY must be exactly the correlation keys; without one, a missing group
        is the aggregate over no rows (``empty_defaults``), with one, no row (NULL)."""
        if not select.args.get("group"):
            aggregate, values, _ = self._aggregate(
                select, group.source, projection, body.scope, keys=group.keys
            )
            return aggregate, list(aggregate.key_outputs), empty_defaults(values[0], aggregate)
        aggregate, values, _ = self._aggregate(select, group.source, projection, body.scope)
        outputs = {
            key.sql(): o for key, o in zip(aggregate.keys, aggregate.key_outputs, strict=True)
        }
        wanted = [key.sql() for key in group.keys]
        if set(outputs) != set(wanted):
            raise NotMaintainableError(
                "a correlated scalar subquery grouped by other than its correlation keys"
                " (it may return several rows)"
            )
        return aggregate, [outputs[key] for key in wanted], values[0]

    def _aggregate(
        self,
        select: exp.Select,
        child: Node,
        projections: list[exp.Expr],
        scope: dict[str, _Relation],
        keys: tuple[exp.Expr, ...] = (),
        having: exp.Expr | None = None,
        bound: frozenset[str] = frozenset(),
    ) -> tuple[Aggregate, list[exp.Expr], exp.Expr | None]:
        """``Aggregate`` over ``child`` by the GROUP BY of ``select`` and then ``keys`` (over
        ``child``'s columns already), and the select list and ``having`` as expressions over
        the aggregate's outputs. The columns ``bound`` (placeholders of subqueries) stay."""
        group = select.args.get("group")
        grouped: list[exp.Expr] = []
        if isinstance(group, exp.Group):
            for construct in ("grouping_sets", "rollup", "cube"):
                if group.args.get(construct):
                    raise NotMaintainableError("GROUPING SETS / ROLLUP / CUBE")
            grouped = list(group.expressions)
        if any(isinstance(key, (exp.Rollup, exp.Cube, exp.GroupingSets)) for key in grouped):
            raise NotMaintainableError("GROUPING SETS / ROLLUP / CUBE")
        if any(isinstance(key, exp.Literal) for key in grouped):
            raise NotMaintainableError("GROUP BY a constant or a position")
        post = [*projections, *([having] if having is not None else [])]
        key_outputs = tuple(self._fresh() for _ in (*grouped, *keys))
        by_key = {key.sql(dialect="spark"): o for key, o in zip(grouped, key_outputs, strict=False)}
        calls: dict[str, tuple[AggregateCall, str]] = {}

        def replace(node: exp.Expr) -> exp.Expr:
            # transform visits a node before its children: a subquery is named as such before
            # its own columns would be reported as neither grouped nor aggregated
            if isinstance(node, (exp.Subquery, exp.Exists, exp.Select)):
                raise NotMaintainableError(find_unsupported_expression(node))
            text = node.sql(dialect="spark")
            if text in by_key:
                return exp.column(by_key[text], quoted=True)
            if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
                raise NotMaintainableError("an aggregate function with FILTER (WHERE ...)")
            if isinstance(node, exp.AggFunc):
                call = self._call(node, scope)
                if text not in calls:
                    calls[text] = (call, self._fresh())
                return exp.column(calls[text][1], quoted=True)
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                if node.name in bound and not node.table:
                    return node
                raise NotMaintainableError(
                    f"the column {node.sql(dialect='spark')}, neither grouped nor aggregated"
                )
            return node

        rewritten = [expression.copy().transform(replace) for expression in post]
        for expression in rewritten:
            construct = find_unsupported_expression(expression)
            if construct:
                raise NotMaintainableError(construct)
        aggregate = Aggregate(
            child,
            (*(self._expression(key, scope) for key in grouped), *keys),
            key_outputs,
            tuple(call for call, _ in calls.values()),
            tuple(output for _, output in calls.values()),
        )
        condition = rewritten.pop() if having is not None else None
        return aggregate, rewritten, condition

    def _call(self, node: exp.AggFunc, scope: dict[str, _Relation]) -> AggregateCall:
        function = AGGREGATE_FUNCTIONS.get(type(node))
        if function is None:
            name = node.sql(dialect="spark").partition("(")[0].upper()
            raise NotMaintainableError(f"aggregate function {name}")
        argument = node.this
        if isinstance(argument, exp.Star) and function == "count":
            return AggregateCall(function, None)
        distinct = isinstance(argument, exp.Distinct)
        if isinstance(argument, exp.Distinct):
            if len(argument.expressions) != 1:
                raise NotMaintainableError(f"{function.upper()}(DISTINCT of several columns)")
            argument = argument.expressions[0]
        if not isinstance(argument, exp.Expr) or node.expressions:
            raise NotMaintainableError(f"{function.upper()} with these arguments")
        return AggregateCall(function, self._expression(argument, scope), distinct)

    def _from_item(
        self, item: exp.Expr, ctes: dict[str, exp.Expr], scope: dict[str, _Relation]
    ) -> Node:
        alias = item.alias_or_name.lower()
        if isinstance(item, exp.Table):
            if item.args.get("sample"):
                raise NotMaintainableError("TABLESAMPLE")
            if not isinstance(item.this, exp.Identifier):
                raise NotMaintainableError(f"{type(item.this).__name__.upper()} in FROM")
            name = item.name.lower()
            if not item.db and name in ctes and id(ctes[name]) in self._recursive:
                body = ctes[name]
                relation = self._recursive_cte(body, body.parent or body, ctes)
                scope[alias] = relation
                return relation.node
            if not item.db and name in ctes:
                node, names = self._query(ctes[name], ctes)
                scope[alias] = _Relation(node, dict(zip(names, node.outputs, strict=True)))
                return node
            qualified = table_key(item, item.db)
            if qualified not in self.tables:
                raise NotMaintainableError(f"table {qualified} (not among the view's base tables)")
            columns = self.tables[qualified]
            scan = Scan(qualified, columns, tuple(self._fresh() for _ in columns), alias)
            scope[alias] = _Relation(
                scan, {c.lower(): o for c, o in zip(columns, scan.outputs, strict=True)}
            )
            return scan
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Table):
            if item.alias:
                raise NotMaintainableError("an aliased parenthesized join in FROM")
            # ``(a JOIN b ON …)``: a join nested in FROM, whose tables keep their own names.
            nested = item.this.copy()
            joins = nested.args.get("joins") or []
            nested.set("joins", None)
            return self._joined(nested, joins, ctes, scope)
        if isinstance(item, exp.Subquery):
            node, names = self._query(item, ctes)
            columns = item.args["alias"].columns if item.args.get("alias") else []
            if columns:
                names = [column.name.lower() for column in columns]
            scope[alias] = _Relation(node, dict(zip(names, node.outputs, strict=True)))
            return node
        raise NotMaintainableError(f"{type(item).__name__.upper()} in FROM")

    def _expression(
        self,
        expression: exp.Expr,
        scope: dict[str, _Relation],
        outer: dict[str, _Relation] | None = None,
        values: dict[str, exp.Expr] | None = None,
    ) -> exp.Expr:
        """``expression`` with every column replaced by its internal name: resolved in
        ``scope``, else in ``outer`` (a correlated subquery's enclosing query); a placeholder
        of ``values`` (``_placeheld``) by its value."""
        construct = find_unsupported_expression(expression)
        if construct:
            raise NotMaintainableError(construct)
        return self._renamed(expression, scope, outer, values)

    def _renamed(
        self,
        expression: exp.Expr,
        scope: dict[str, _Relation],
        outer: dict[str, _Relation] | None = None,
        values: dict[str, exp.Expr] | None = None,
    ) -> exp.Expr:
        """``_expression`` without its check of the constructs inside."""

        def rename(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
                return node
            if values and not node.table and node.name in values:
                return values[node.name].copy()
            return exp.column(self._resolve(node, scope, outer), quoted=True)

        return expression.copy().transform(rename)

    @staticmethod
    def _resolve(
        column: exp.Column,
        scope: dict[str, _Relation],
        outer: dict[str, _Relation] | None = None,
    ) -> str:
        """The internal name of ``column``: in ``scope`` first (a subquery's own FROM hides
        the enclosing query's names), else in ``outer``."""
        name, table = column.name.lower(), column.table.lower()
        for names in (scope, outer or {}):
            if table and table not in names:
                continue
            candidates = [names[table]] if table else list(names.values())
            matches = [
                relation.columns[name] for relation in candidates if name in relation.columns
            ]
            if len(matches) == 1:
                return matches[0]
            if matches or table:
                break
        raise NotMaintainableError(f"the column reference {column.sql(dialect='spark')}")


@dataclass
class _Body:
    """A subquery's rows (its FROM under the uncorrelated conjuncts of its WHERE), the scope
    of its FROM, and its correlation (the conjuncts that read the enclosing query's columns,
    over internal names of both)."""

    node: Node
    scope: dict[str, _Relation]
    correlated: list[exp.Expr]


@dataclass
class _Rows:
    """The rows a scalar subquery is correlated with: ``node`` and its ``scope``, and what
    their columns are called in the node now being built (``names``; missing: the same)."""

    node: Node
    scope: dict[str, _Relation]
    names: dict[str, str] = field(default_factory=dict)


JOIN_KINDS = {
    ("", ""): "inner",
    ("", "INNER"): "inner",
    ("", "CROSS"): "inner",
    ("LEFT", ""): "left",
    ("LEFT", "OUTER"): "left",
    ("RIGHT", ""): "right",
    ("RIGHT", "OUTER"): "right",
    ("FULL", ""): "full",
    ("FULL", "OUTER"): "full",
    ("", "SEMI"): "semi",
    ("LEFT", "SEMI"): "semi",
    ("", "ANTI"): "anti",
    ("LEFT", "ANTI"): "anti",
}
"""sqlglot's (side, kind) of a join → how ``RelationalBuilder._from`` builds it."""


def _join_kind(join: exp.Join) -> str:
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    found = JOIN_KINDS.get((side, kind))
    if found is None or join.method:
        words = " ".join(part for part in (join.method, side, kind) if part)
        raise NotMaintainableError(f"{words} JOIN")
    return found


def _rename(scope: dict[str, _Relation], mapping: dict[str, str]) -> None:
    """Rename the internal names in ``scope`` by ``mapping`` (a rewrite renamed its inputs'
    columns)."""
    for relation in scope.values():
        relation.columns = {name: mapping.get(o, o) for name, o in relation.columns.items()}


def _has_subquery(expression: exp.Expr) -> bool:
    return expression.find(exp.Subquery, exp.Exists, exp.Select) is not None


def _negation(expression: exp.Expr) -> tuple[bool, exp.Expr]:
    """Whether ``expression`` is negated (``NOT``s and parentheses peeled), and what is."""
    negated = False
    while isinstance(expression, (exp.Not, exp.Paren)):
        negated ^= isinstance(expression, exp.Not)
        expression = expression.this
    return negated, expression


def _negation_normal(expression: exp.Expr, negated: bool = False) -> exp.Expr:
    """``expression`` (negated) with every NOT pushed through AND and OR (De Morgan) and
    double NOTs dropped, as Spark's BooleanSimplification does before it reads subqueries:
    where ``NOT (x IN (...))`` ends up decides whether Spark reads it null-aware (a NOT IN)
    or as a negated existence, so the rewrite must find it where Spark does. Exact in SQL's
    three-valued logic."""
    inner = expression
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Not):
        return _negation_normal(inner.this, not negated)
    if isinstance(inner, (exp.And, exp.Or)):
        flipped = isinstance(inner, exp.And) == negated  # NOT (a AND b) = NOT a OR NOT b
        parts = (_negation_normal(inner.this, negated), _negation_normal(inner.expression, negated))
        joined = exp.or_(*parts) if flipped else exp.and_(*parts)
        return exp.Paren(this=joined)
    normal = inner.copy().transform(
        lambda node: _negation_normal(node) if isinstance(node, exp.Not) else node
    )
    return exp.Not(this=exp.Paren(this=normal)) if negated else normal


def _unwrapped(query: exp.Expr) -> exp.Expr:
    """``query`` without its enclosing parentheses (a ``LIMIT`` on them is refused)."""
    while isinstance(query, exp.Subquery):
        if query.args.get("limit") or query.args.get("offset"):
            raise NotMaintainableError("LIMIT / OFFSET")
        query = query.this
    return query


def _outer_qualifiers(query: exp.Expr) -> set[str]:
    """The table qualifiers of columns in ``query`` that nothing inside it defines: the
    enclosing query's, when it is correlated."""
    defined = {table.alias_or_name.lower() for table in query.find_all(exp.Table)}
    defined |= {sub.alias.lower() for sub in query.find_all(exp.Subquery) if sub.alias}
    defined |= {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    used = {c.table.lower() for c in query.find_all(exp.Column) if c.table}
    return used - defined


def _bound(expression: exp.Expr, values: dict[str, exp.Expr]) -> exp.Expr:
    """``expression`` with each placeholder column of ``values`` replaced by its value."""

    def bind(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name in values:
            return values[node.name].copy()
        return node

    return expression.copy().transform(bind)
