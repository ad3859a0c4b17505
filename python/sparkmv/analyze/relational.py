"""The view's query as relational operators: the IR the delta rules work on.

A query of the maintainable class (DESIGN §6; Blakeley §5's ``π_X(σ_C(R_1 × … × R_p))``
blocks, combined with ``UNION ALL``, ``UNION``, ``INTERSECT``, ``EXCEPT`` and ``DISTINCT``)
becomes a tree of

- ``Scan``: one occurrence of a base table (a self-join has two);
- ``Join``: the cross product of its inputs restricted by the ``ON`` conditions (inner joins
  only; comma and ``CROSS JOIN`` are joins without a condition);
- ``Filter`` (``WHERE``), ``Project`` (the select list, bag semantics);
- ``Distinct`` (``SELECT DISTINCT``, and ``UNION`` as ``Distinct(UnionAll)``);
- ``UnionAll`` (and ``INTERSECT``/``EXCEPT`` as an ``Aggregate`` of per-row counters of the
  two inputs over their ``UnionAll``, ``RelationalBuilder._set_comparison``);
- ``Aggregate`` (``GROUP BY`` and aggregate functions: ``COUNT``, ``SUM``, ``AVG``, ``MIN``,
  ``MAX``, also ``DISTINCT``), with ``HAVING`` as a ``Filter`` and the select list as a
  ``Project`` above it.

Subqueries in ``FROM`` and non-recursive ``WITH`` are inlined (each reference to a CTE is
its own subtree). ``ORDER BY`` without ``LIMIT`` is dropped: a view is a multiset.

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


@dataclass(frozen=True, eq=False)
class Project:
    child: Node
    expressions: tuple[exp.Expr, ...]
    outputs: tuple[str, ...]


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


Node = Scan | Join | Filter | Project | Distinct | UnionAll | Aggregate


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Scan):
        return ()
    if isinstance(node, Join):
        return node.inputs
    if isinstance(node, UnionAll):
        return node.children
    return (node.child,)


def _aggregates(select: exp.Select) -> bool:
    """Whether ``select`` groups: ``GROUP BY``, ``HAVING`` or an aggregate function in its
    select list (not one inside a subquery)."""
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(
        isinstance(node, exp.AggFunc)
        for projection in select.expressions
        for node in projection.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Select)))
    )


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, parents first."""
    yield node
    for child in children(node):
        yield from walk(child)


def scanned_tables(node: Node) -> set[str]:
    return {scan.table for scan in walk(node) if isinstance(scan, Scan)}


def expressions(node: Node) -> list[exp.Expr]:
    """The expressions ``node`` evaluates (its predicate, condition, select list, keys and
    aggregate arguments)."""
    if isinstance(node, Filter):
        return [node.predicate]
    if isinstance(node, Join):
        return [node.condition] if node.condition is not None else []
    if isinstance(node, Project):
        return list(node.expressions)
    if isinstance(node, Aggregate):
        return [*node.keys, *(c.argument for c in node.calls if c.argument is not None)]
    return []


def read_columns(root: Node) -> dict[str, set[str]]:
    """Per base table, the columns the query reads (in any expression of any occurrence).

    Every SELECT ends in a ``Project`` or an ``Aggregate``, so a scan's other columns never
    leave the block they are scanned in: their values cannot change the query's result.
    """
    referenced = {
        column.name
        for node in walk(root)
        for expression in expressions(node)
        for column in expression.find_all(exp.Column)
    }
    read: dict[str, set[str]] = {}
    for scan in walk(root):
        if isinstance(scan, Scan):
            names = read.setdefault(scan.table, set())
            names.update(
                c for c, o in zip(scan.columns, scan.outputs, strict=True) if o in referenced
            )
    return read


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
        if with_.args.get("recursive"):
            raise NotMaintainableError("WITH RECURSIVE")
        scoped = dict(ctes)
        for cte in with_.expressions:
            scoped[cte.alias_or_name.lower()] = cte.this
        return scoped

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
        """``A INTERSECT B`` and ``A EXCEPT B`` (set semantics) as an aggregate: with each row
        of ``A`` tagged ``(1, 0)`` and each of ``B`` ``(0, 1)``,
        ``π_X σ_{n_A > 0 ∧ n_B ⋈ 0} γ_{X; n_A = Σ tag_A, n_B = Σ tag_B}(A' ⊎ B')`` where ``⋈`` is
        ``>`` for INTERSECT and ``=`` for EXCEPT: the per-row counters of the two inputs (as
        Blakeley §5.1's multiplicity counter for DISTINCT), maintained like any ``SUM``.
        Grouping compares NULLs as equal, as the set operations do. The ``ALL`` forms keep
        ``min(n_A, n_B)`` or ``max(n_A − n_B, 0)`` copies of a row, which one row per group
        cannot hold."""
        operation = type(tree).__name__.upper()
        if not tree.args.get("distinct"):
            raise NotMaintainableError(f"{operation} ALL")
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
        right_test = exp.GT if isinstance(tree, exp.Intersect) else exp.EQ
        predicate = exp.and_(
            exp.GT(this=in_left, expression=zero), right_test(this=in_right, expression=zero)
        )
        node = Project(
            Filter(aggregate, predicate),
            tuple(exp.column(key, quoted=True) for key in key_outputs),
            tuple(self._fresh() for _ in key_outputs),
        )
        return node, names

    def _tagged(self, node: Node, tags: tuple[int, ...]) -> Project:
        """``node``'s rows with the constant columns ``tags`` appended."""
        columns = [exp.column(output, quoted=True) for output in node.outputs]
        expressions = (*columns, *(exp.Literal.number(tag) for tag in tags))
        return Project(node, expressions, tuple(self._fresh() for _ in expressions))

    def _select(self, select: exp.Select, ctes: dict[str, exp.Expr]) -> tuple[Node, list[str]]:
        clause = unsupported_select_clause(select)
        if clause:
            raise NotMaintainableError(clause)
        source = select.args.get("from_") or select.args.get("from")
        if not isinstance(source, exp.From):
            raise NotMaintainableError("a query without FROM")
        scope: dict[str, _Relation] = {}
        inputs = [self._from_item(source.this, ctes, scope)]
        conditions: list[exp.Expr] = []
        for join in select.args.get("joins") or []:
            if join.side or join.kind not in ("", "INNER", "CROSS"):
                kind = " ".join(part for part in (join.side, join.kind) if part)
                raise NotMaintainableError(f"{kind} JOIN")
            if join.args.get("using"):
                raise NotMaintainableError("JOIN ... USING")
            inputs.append(self._from_item(join.this, ctes, scope))
            if join.args.get("on"):
                conditions.append(join.args["on"])
        condition = self._expression(exp.and_(*conditions), scope) if conditions else None
        node: Node = inputs[0] if len(inputs) == 1 else Join(tuple(inputs), condition)
        where = select.args.get("where")
        if where is not None:
            node = Filter(node, self._expression(where.this, scope))
        projections = []
        for projection in select.expressions:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                raise NotMaintainableError("an unexpanded *")
            projections.append(projection.unalias())
        names = [projection.alias_or_name.lower() for projection in select.expressions]
        if _aggregates(select):
            node, expressions = self._aggregate(select, node, projections, scope)
        else:
            expressions = [self._expression(e, scope) for e in projections]
        node = Project(node, tuple(expressions), tuple(self._fresh() for _ in expressions))
        if select.args.get("distinct"):
            if select.args["distinct"].args.get("on"):
                raise NotMaintainableError("DISTINCT ON")
            node = Distinct(node)
        return node, names

    def _aggregate(
        self,
        select: exp.Select,
        child: Node,
        projections: list[exp.Expr],
        scope: dict[str, _Relation],
    ) -> tuple[Node, list[exp.Expr]]:
        """``Aggregate`` (and the ``HAVING`` filter) over ``child``, and the select list as
        expressions over the aggregate's outputs."""
        group = select.args.get("group")
        keys: list[exp.Expr] = []
        if isinstance(group, exp.Group):
            for construct in ("grouping_sets", "rollup", "cube"):
                if group.args.get(construct):
                    raise NotMaintainableError("GROUPING SETS / ROLLUP / CUBE")
            keys = list(group.expressions)
        if any(isinstance(key, (exp.Rollup, exp.Cube, exp.GroupingSets)) for key in keys):
            raise NotMaintainableError("GROUPING SETS / ROLLUP / CUBE")
        if any(isinstance(key, exp.Literal) for key in keys):
            raise NotMaintainableError("GROUP BY a constant or a position")
        having = select.args.get("having")
        post = [*projections, *([having.this] if having is not None else [])]
        key_outputs = tuple(self._fresh() for _ in keys)
        by_key = {key.sql(dialect="spark"): o for key, o in zip(keys, key_outputs, strict=True)}
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
                raise NotMaintainableError(
                    f"the column {node.sql(dialect='spark')}, neither grouped nor aggregated"
                )
            return node

        rewritten = [expression.copy().transform(replace) for expression in post]
        for expression in rewritten:
            construct = find_unsupported_expression(expression)
            if construct:
                raise NotMaintainableError(construct)
        aggregate: Node = Aggregate(
            child,
            tuple(self._expression(key, scope) for key in keys),
            key_outputs,
            tuple(call for call, _ in calls.values()),
            tuple(output for _, output in calls.values()),
        )
        if having is not None:
            aggregate = Filter(aggregate, rewritten.pop())
        return aggregate, rewritten

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
            if not item.db and name in ctes:
                node, names = self._query(ctes[name], ctes)
                scope[alias] = _Relation(node, dict(zip(names, node.outputs, strict=True)))
                return node
            qualified = f"{item.db.lower()}.{name}"
            if qualified not in self.tables:
                raise NotMaintainableError(f"table {qualified} (not among the view's base tables)")
            columns = self.tables[qualified]
            scan = Scan(qualified, columns, tuple(self._fresh() for _ in columns), alias)
            scope[alias] = _Relation(
                scan, {c.lower(): o for c, o in zip(columns, scan.outputs, strict=True)}
            )
            return scan
        if isinstance(item, exp.Subquery):
            node, names = self._query(item, ctes)
            columns = item.args["alias"].columns if item.args.get("alias") else []
            if columns:
                names = [column.name.lower() for column in columns]
            scope[alias] = _Relation(node, dict(zip(names, node.outputs, strict=True)))
            return node
        raise NotMaintainableError(f"{type(item).__name__.upper()} in FROM")

    def _expression(self, expression: exp.Expr, scope: dict[str, _Relation]) -> exp.Expr:
        """``expression`` with every column replaced by its internal name."""
        construct = find_unsupported_expression(expression)
        if construct:
            raise NotMaintainableError(construct)

        def rename(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
                return node
            return exp.column(self._resolve(node, scope), quoted=True)

        return expression.copy().transform(rename)

    @staticmethod
    def _resolve(column: exp.Column, scope: dict[str, _Relation]) -> str:
        name, table = column.name.lower(), column.table.lower()
        candidates = [scope[table]] if table in scope else [] if table else list(scope.values())
        matches = [relation.columns[name] for relation in candidates if name in relation.columns]
        if len(matches) != 1:
            raise NotMaintainableError(f"the column reference {column.sql(dialect='spark')}")
        return matches[0]
