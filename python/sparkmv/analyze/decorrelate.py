"""Subqueries and outer joins as IR operators (issue 24): semi-joins, anti-joins, outer joins,
``NOT IN`` and the per-row aggregates of scalar subqueries, built from the nodes the delta
rules already maintain and one more, ``Negate`` (``−X``). No rule is special to them: the
join, DISTINCT, aggregate, union and negation rules maintain them exactly.

Notation: ``L`` the outer (left) input, ``R`` the subquery's (right) input, ``c`` the
correlation (the conditions over both), ``δ`` DISTINCT, ``π`` projection, ``σ`` selection,
``γ`` aggregation, ``⋈`` inner join, ``⊎`` Z-set sum (UNION ALL), ``−X`` negation.

``correlation`` splits ``c`` into its conjuncts over ``L`` only (``left``), over ``R`` only or
neither (``right``), equalities ``e_L = e_R`` or ``e_L <=> e_R`` of an expression of each
(``pairs``), and any other conjunct over both (``mixed``, e.g. ``l.b < r.b``).

Semi-join, the rows of ``L`` with a match in ``R``, each with its multiplicity in ``L``
(``semijoin``):

- equi-correlated (no mixed conjunct): ``L ⋉_c R = π_L(L ⋈_{left ∧ e_L = d} D)`` with
  ``D = δ(π_{e_R}(σ_right R))``. ``D`` holds each key once, so a row of ``L`` joins at most one
  row of ``D`` and keeps its multiplicity. The DISTINCT rule keeps a counter per key
  (Blakeley §5.1): a key enters or leaves ``D`` exactly when its number of matching rows of
  ``R`` crosses zero, and with it the rows of ``L`` that carry it.
- otherwise: ``L ⋉_c R = π_L(L ⋈_{left ∧ l_c <=> m} M)`` with
  ``M = δ(π_p(π_{p = l_c}(L) ⋈_{c[l_c := p]} σ_right R))``, ``l_c`` the columns of ``L`` that
  the correlation reads: the distinct combinations of them that have a match, each once, so a
  row of ``L`` again joins at most one row of ``M`` (null-safely: a NULL in ``l_c`` is the
  value it is; whether it matches was decided by ``c``).

Anti-join: ``L ▷_c R = L ⊎ −(L ⋉_c R)`` (``antijoin``), exact since ``L ⋉ R ⊆ L`` as bags.

Both keep, beside the expansion, what they compute (``ir.SemiJoinOf``: ``native``), so that
their values are Spark's own semi- and anti-joins (``delta/semijoin.py``); their changes are
the expansion's.

Outer joins (``outer_join``): ``L ⟕_c R = (L ⋈_c R) ⊎ π_{L, NULL…}(L ▷_c R)``; a right one
mirrors it and a full one adds both paddings. A row of ``L`` gets its padded twin when its
last match leaves and loses it when its first match arrives, as the counters of ``D`` (or
``M``) cross zero. When each row of ``L`` matches at most one row of ``R`` (an aggregate
grouped by the keys it is joined on), ``L ⋉_c R = π_L(L ⋈_c R)``: the join is read once
(``unique_left_join``).

``x NOT IN (SELECT y FROM R WHERE c)`` (``not_in``), with SQL's NULLs: with ``S`` the values
``y`` the correlation selects for a row, the row is kept iff ``S`` is empty, or ``x`` is not
NULL and neither NULL nor ``x`` is in ``S``:
``π_L σ_{coalesce(n, 0) = 0 ∨ (x IS NOT NULL ∧ n = n_y)}((L ▷_{c ∧ x = y} R) ⟕
γ_{keys; n = COUNT(*), n_y = COUNT(y)}(R))``, the counts per correlation key (``grouping``;
one global row when uncorrelated, joined to every row).

A condition other than a conjunct of WHERE (under OR, in a select list) reads a *mark*, a
boolean column of ``L`` (``exists_mark``, ``not_in_mark``): ``π_{L, TRUE}(L ⋉ R) ⊎
π_{L, FALSE}(L ▷ R)``. There Spark reads ``x IN (...)`` as an existence (FALSE, not NULL,
without a match) and ``NOT (x IN (...))`` as the negated null-aware existence (FALSE where
SQL says NULL), after pushing NOT down to them (``RelationalBuilder`` does it alike).

Per-row aggregates (``grouping``), for scalar subqueries and ``NOT IN``:
``γ_{e_R; f}(σ_right R)`` joined by ``e_L = e_R`` when equi-correlated, else
``γ_{p; f}(δ(π_{p = l_c} L) ⋈_{c[l_c := p]} σ_right R)`` joined by ``l_c <=> p`` — one row
per key, joined to ``L`` by a left outer join; a missing group is the aggregate over no
rows (``empty_defaults``: ``COUNT`` 0, the others NULL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from sparkmv.analyze.ir import (
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Join,
    Negate,
    Node,
    Project,
    SemiJoinOf,
    UnionAll,
)

Fresh = Callable[[], str]
"""A supplier of new internal column names (``RelationalBuilder._fresh``)."""
Side = Literal["left", "right", "full"]


def column(name: str) -> exp.Column:
    """The internal column ``name`` as an expression."""
    return exp.column(name, quoted=True)


def names_in(expression: exp.Expr) -> set[str]:
    """The (internal) column names ``expression`` reads."""
    return {c.name for c in expression.find_all(exp.Column)}


def renamed(expression: exp.Expr, mapping: dict[str, str]) -> exp.Expr:
    """``expression`` with its columns renamed by ``mapping`` (others unchanged)."""

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in mapping:
            return column(mapping[node.name])
        return node

    return expression.copy().transform(rename)


def renaming(names: Sequence[str], node: Node) -> dict[str, str]:
    """``names`` to the first outputs of ``node``, positionally: what a rewrite whose result
    carries its inputs' columns first (renamed) calls them now."""
    if len(names) > len(node.outputs):
        raise ValueError("a rewrite's result has fewer columns than its inputs")
    return dict(zip(names, node.outputs, strict=False))


def split_conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    """The conjuncts of ``condition`` (nested ANDs and parentheses around them flattened)."""
    inner = condition
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.And):
        return split_conjuncts(inner.this) + split_conjuncts(inner.expression)
    return [condition]


def conjunction(conjuncts: Sequence[exp.Expr]) -> exp.Expr | None:
    return exp.and_(*conjuncts) if conjuncts else None


def equal(left: exp.Expr, right: exp.Expr, null_safe: bool = False) -> exp.Expr:
    """``left = right`` (``<=>`` when ``null_safe``)."""
    kind = exp.NullSafeEQ if null_safe else exp.EQ
    return kind(this=left.copy(), expression=right.copy())


def _fresh_names(fresh: Fresh, count: int) -> tuple[str, ...]:
    return tuple(fresh() for _ in range(count))


@dataclass(frozen=True)
class KeyPair:
    """``left = right`` (``<=>`` when ``null_safe``), ``left`` over ``L``, ``right`` over ``R``."""

    left: exp.Expr
    right: exp.Expr
    null_safe: bool

    def condition(self) -> exp.Expr:
        return equal(self.left, self.right, self.null_safe)


@dataclass(frozen=True)
class Correlation:
    """The conjuncts of a condition over ``L`` and ``R``, by the inputs they read."""

    left: tuple[exp.Expr, ...]
    right: tuple[exp.Expr, ...]
    pairs: tuple[KeyPair, ...]
    mixed: tuple[exp.Expr, ...]

    def across(self) -> list[exp.Expr]:
        """The conjuncts that read both inputs."""
        return [*(pair.condition() for pair in self.pairs), *self.mixed]


def correlation(conjuncts: Iterable[exp.Expr], left: Node, right: Node) -> Correlation:
    """``conjuncts`` (over ``left``'s and ``right``'s outputs) split by what they read."""
    left_names, right_names = set(left.outputs), set(right.outputs)
    sides: dict[str, list[exp.Expr]] = {"left": [], "right": [], "mixed": []}
    pairs: list[KeyPair] = []
    for conjunct in conjuncts:
        names = names_in(conjunct)
        if names and names <= left_names:
            sides["left"].append(conjunct)
        elif names <= right_names:
            sides["right"].append(conjunct)
        else:
            pair = _key_pair(conjunct, left_names, right_names)
            if pair is None:
                sides["mixed"].append(conjunct)
            else:
                pairs.append(pair)
    return Correlation(
        tuple(sides["left"]), tuple(sides["right"]), tuple(pairs), tuple(sides["mixed"])
    )


def _key_pair(conjunct: exp.Expr, left: set[str], right: set[str]) -> KeyPair | None:
    """``conjunct`` as a key pair, when it is an equality of an expression of each input."""
    while isinstance(conjunct, exp.Paren):
        conjunct = conjunct.this
    if not isinstance(conjunct, (exp.EQ, exp.NullSafeEQ)):
        return None
    a, b = conjunct.this, conjunct.expression
    a_names, b_names = names_in(a), names_in(b)
    null_safe = isinstance(conjunct, exp.NullSafeEQ)
    if a_names and b_names and a_names <= left and b_names <= right:
        return KeyPair(a, b, null_safe)
    if a_names and b_names and a_names <= right and b_names <= left:
        return KeyPair(b, a, null_safe)
    return None


def filtered(node: Node, conjuncts: Sequence[exp.Expr]) -> Node:
    """``σ_conjuncts(node)`` (``node`` itself without conjuncts)."""
    condition = conjunction(conjuncts)
    return node if condition is None else Filter(node, condition)


def rows_of(node: Node, joined: Node, fresh: Fresh) -> Project:
    """``π_node(joined)``: the columns of ``node`` (an input of ``joined``), renamed."""
    columns = tuple(column(o) for o in node.outputs)
    return Project(joined, columns, _fresh_names(fresh, len(columns)))


def semijoin(left: Node, right: Node, conjuncts: Sequence[exp.Expr], fresh: Fresh) -> Project:
    """``L ⋉_c R``: the rows of ``left`` that ``conjuncts`` match with a row of ``right``, each
    with its multiplicity (module docstring); ``left``'s columns, renamed."""
    found = correlation(conjuncts, left, right)
    source = filtered(right, found.right)
    if found.mixed:
        expansion = _probed_semijoin(left, source, found, fresh)
    else:
        keys: tuple[exp.Expr, ...] = tuple(pair.right for pair in found.pairs) or (exp.true(),)
        distinct_keys = Distinct(Project(source, keys, _fresh_names(fresh, len(keys))))
        matches = [
            equal(pair.left, column(key), pair.null_safe)
            for pair, key in zip(found.pairs, distinct_keys.outputs, strict=False)
        ]
        joined = Join((left, distinct_keys), conjunction([*found.left, *matches]))
        expansion = rows_of(left, joined, fresh)
    native = SemiJoinOf(left, right, conjunction(conjuncts) or exp.true(), anti=False)
    return Project(expansion.child, expansion.expressions, expansion.outputs, native)


def _probed_semijoin(left: Node, source: Node, found: Correlation, fresh: Fresh) -> Project:
    """``L ⋉_c R`` for a correlation with a mixed conjunct, through ``M`` (module docstring)."""
    probe, probes = probe_of(left, found, fresh)
    across = [renamed(c, dict(zip(probes, probe.outputs, strict=True))) for c in found.across()]
    joined = Join((probe, source), conjunction(across))
    matched = Distinct(rows_of(probe, joined, fresh))
    matches = [
        equal(column(name), column(m), null_safe=True)
        for name, m in zip(probes, matched.outputs, strict=True)
    ]
    return rows_of(left, Join((left, matched), conjunction([*found.left, *matches])), fresh)


def probe_of(left: Node, found: Correlation, fresh: Fresh) -> tuple[Project, list[str]]:
    """``π_{p = l_c}(L)``, and ``l_c``: the columns of ``left`` the conjuncts over both inputs
    read, in ``left``'s order."""
    read = set().union(*(names_in(c) for c in found.across()))
    probes = [name for name in left.outputs if name in read]
    columns = tuple(column(name) for name in probes)
    return Project(left, columns, _fresh_names(fresh, len(columns))), probes


def difference(whole: Node, part: Node, fresh: Fresh) -> UnionAll:
    """``whole ⊎ −part``, for a ``part`` contained in ``whole`` as bags; ``whole``'s columns,
    renamed."""
    return UnionAll((whole, Negate(part)), _fresh_names(fresh, len(whole.outputs)))


def antijoin(left: Node, right: Node, conjuncts: Sequence[exp.Expr], fresh: Fresh) -> UnionAll:
    """``L ▷_c R = L ⊎ −(L ⋉_c R)``: the rows of ``left`` without a match; its columns,
    renamed."""
    expansion = difference(left, semijoin(left, right, conjuncts, fresh), fresh)
    native = SemiJoinOf(left, right, conjunction(conjuncts) or exp.true(), anti=True)
    return UnionAll(expansion.children, expansion.outputs, native)


def padded(rows: Node, before: int, after: int, fresh: Fresh) -> Project:
    """``rows`` with ``before`` NULL columns in front and ``after`` behind (an outer join's
    unmatched rows; the union with the matched ones types the NULLs)."""
    expressions = (
        *(exp.null() for _ in range(before)),
        *(column(o) for o in rows.outputs),
        *(exp.null() for _ in range(after)),
    )
    return Project(rows, expressions, _fresh_names(fresh, len(expressions)))


def outer_join(
    left: Node, right: Node, conjuncts: Sequence[exp.Expr], side: Side, fresh: Fresh
) -> UnionAll:
    """``L ⟕_c R``, ``L ⟖_c R`` or ``L ⟗_c R`` (``side``): the inner join and the padded
    anti-join(s); ``left``'s then ``right``'s columns, renamed."""
    joined = Join((left, right), conjunction(conjuncts))
    parts: list[Node] = [joined]
    if side in ("left", "full"):
        unmatched = antijoin(left, right, conjuncts, fresh)
        parts.append(padded(unmatched, 0, len(right.outputs), fresh))
    if side in ("right", "full"):
        unmatched = antijoin(right, left, conjuncts, fresh)
        parts.append(padded(unmatched, len(left.outputs), 0, fresh))
    return UnionAll(tuple(parts), _fresh_names(fresh, len(joined.outputs)))


def unique_left_join(
    left: Node, right: Node, conjuncts: Sequence[exp.Expr], fresh: Fresh
) -> UnionAll:
    """``L ⟕_c R`` when ``conjuncts`` match each row of ``left`` with at most one row of
    ``right``: ``(L ⋈_c R) ⊎ π_{L, NULL…}(L ⊎ −π_L(L ⋈_c R))``, the join read once."""
    joined = Join((left, right), conjunction(conjuncts))
    unmatched = difference(left, rows_of(left, joined, fresh), fresh)
    parts = (joined, padded(unmatched, 0, len(right.outputs), fresh))
    return UnionAll(parts, _fresh_names(fresh, len(joined.outputs)))


@dataclass(frozen=True)
class Grouping:
    """How to aggregate ``R`` once per row of ``L`` (module docstring): the aggregate's input
    ``source`` and group ``keys``, and how its rows join ``L`` (``condition``)."""

    source: Node
    keys: tuple[exp.Expr, ...]
    left: tuple[exp.Expr, ...]  # conjuncts over L alone
    probes: tuple[tuple[exp.Expr, bool], ...]  # per key: its expression over L, null-safety

    def condition(self, key_outputs: Sequence[str]) -> list[exp.Expr]:
        """The join of ``L`` with the aggregate whose key columns are ``key_outputs``."""
        matches = [
            equal(probe, column(key), null_safe)
            for (probe, null_safe), key in zip(self.probes, key_outputs, strict=True)
        ]
        return [*self.left, *matches]


def grouping(left: Node, right: Node, conjuncts: Sequence[exp.Expr], fresh: Fresh) -> Grouping:
    """The ``Grouping`` of ``right`` per row of ``left`` under ``conjuncts``."""
    found = correlation(conjuncts, left, right)
    source = filtered(right, found.right)
    if not found.mixed:
        probes = tuple((pair.left, pair.null_safe) for pair in found.pairs)
        return Grouping(source, tuple(pair.right for pair in found.pairs), found.left, probes)
    probe, names = probe_of(left, found, fresh)
    distinct = Distinct(probe)
    mapping = dict(zip(names, probe.outputs, strict=True))
    joined = Join((distinct, source), conjunction([renamed(c, mapping) for c in found.across()]))
    keys = tuple(column(o) for o in probe.outputs)
    return Grouping(joined, keys, found.left, tuple((column(name), True) for name in names))


def empty_defaults(expression: exp.Expr, aggregate: Aggregate) -> exp.Expr:
    """``expression`` over ``aggregate``'s outputs with each ``COUNT`` as ``coalesce(n, 0)``:
    on an outer join's padded row (no group) it is the value over no rows (``COUNT`` 0, the
    other aggregates NULL), and on a group's row the same as before (a count is never NULL)."""
    counts = {
        output
        for call, output in zip(aggregate.calls, aggregate.call_outputs, strict=True)
        if call.function == "count"
    }

    def default(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in counts:
            return exp.func("coalesce", column(node.name), exp.Literal.number(0))
        return node

    return expression.copy().transform(default)


@dataclass(frozen=True)
class ValueCounts:
    """Rows joined with the number of an ``IN`` subquery's values ``y`` that their correlation
    selects, ``n = COUNT(*)`` (NULL: none), and how many of them are not NULL, ``n_y``."""

    node: Node
    columns: tuple[str, ...]  # the rows' columns, as ``node`` calls them
    count: exp.Expr
    not_null: exp.Expr
    needle: exp.Expr  # x, over ``node``


def value_counts(
    rows: Node,
    left: Node,
    right: Node,
    needle: exp.Expr,
    value: exp.Expr,
    conjuncts: Sequence[exp.Expr],
    fresh: Fresh,
) -> ValueCounts:
    """``rows`` (some of ``left``'s rows, its columns renamed) joined with
    ``γ_{keys; n = COUNT(*), n_y = COUNT(y)}(R)`` per correlation key (``grouping``; a global
    one, exactly one row, joined to every row when ``c`` reads no column of ``L``; by the
    combinations of ``L``'s columns it reads when it is not equalities). A change to ``R``
    that changes a count touches every row with that key (every row, uncorrelated)."""
    to_rows = renaming(left.outputs, rows)
    group = grouping(left, right, conjuncts, fresh)
    counts = Aggregate(
        group.source,
        group.keys,
        _fresh_names(fresh, len(group.keys)),
        (AggregateCall("count", None), AggregateCall("count", value.copy())),
        _fresh_names(fresh, 2),
    )
    condition = [renamed(c, to_rows) for c in group.condition(counts.key_outputs)]
    joined: Node
    if condition:
        joined = unique_left_join(rows, counts, condition, fresh)
    else:
        joined = Join((rows, counts), None)  # one row, whatever R holds
    to_joined = renaming((*rows.outputs, *counts.outputs), joined)
    count, not_null = (column(to_joined[o]) for o in counts.call_outputs)
    x = renamed(renamed(needle, to_rows), to_joined)
    return ValueCounts(joined, tuple(to_joined[o] for o in rows.outputs), count, not_null, x)


def _no_values(counts: ValueCounts) -> exp.Expr:
    """``S`` is empty: ``coalesce(n, 0) = 0``."""
    zero = exp.Literal.number(0)
    return exp.EQ(this=exp.func("coalesce", counts.count.copy(), zero), expression=zero.copy())


def _unknown(counts: ValueCounts) -> exp.Expr:
    """Among rows without a match, ``x IN S`` is NULL: ``x`` or a value of ``S`` is NULL."""
    has_null = exp.NEQ(this=counts.count.copy(), expression=counts.not_null.copy())
    return exp.or_(exp.Is(this=counts.needle.copy(), expression=exp.null()), has_null)


def not_in(
    left: Node,
    right: Node,
    needle: exp.Expr,
    value: exp.Expr,
    conjuncts: Sequence[exp.Expr],
    fresh: Fresh,
) -> Project:
    """``x NOT IN (SELECT y FROM R WHERE c)`` over ``left`` (``needle`` x over ``left``,
    ``value`` y over ``right``), with SQL's NULL semantics exactly: with ``S`` the values
    ``y`` of the rows of ``R`` that ``c`` matches with a row, the row is kept iff ``S`` is
    empty, or ``x`` is not NULL, no ``y`` in ``S`` is NULL and none equals ``x``:

        π_L σ_{coalesce(n, 0) = 0 ∨ ¬(x IS NULL ∨ n ≠ n_y)}((L ▷_{c ∧ x = y} R) ⟕ counts)

    (``value_counts``: ``n``, ``n_y`` per correlation key)."""
    kept = antijoin(left, right, [*conjuncts, equal(needle, value)], fresh)
    counts = value_counts(kept, left, right, needle, value, conjuncts, fresh)
    known = exp.Not(this=exp.Paren(this=_unknown(counts)))
    selected = Filter(counts.node, exp.or_(_no_values(counts), known))
    columns = tuple(column(name) for name in counts.columns)
    return Project(selected, columns, _fresh_names(fresh, len(columns)))


def marked(rows: Node, mark: exp.Expr, fresh: Fresh) -> Project:
    """``rows`` with one more column, ``mark``; its columns renamed."""
    expressions = (*(column(o) for o in rows.outputs), mark)
    return Project(rows, expressions, _fresh_names(fresh, len(expressions)))


def exists_mark(left: Node, right: Node, conjuncts: Sequence[exp.Expr], fresh: Fresh) -> UnionAll:
    """``EXISTS`` as a column ``m`` of ``left`` (a mark join, for a condition other than a
    conjunct of WHERE: under OR, in a select list):
    ``π_{L, TRUE}(L ⋉_c R) ⊎ π_{L, FALSE}(L ▷_c R)``; ``left``'s columns then ``m``."""
    matched = semijoin(left, right, conjuncts, fresh)
    unmatched = difference(left, matched, fresh)
    parts = (marked(matched, exp.true(), fresh), marked(unmatched, exp.false(), fresh))
    return UnionAll(parts, _fresh_names(fresh, len(left.outputs) + 1))


def not_in_mark(
    left: Node,
    right: Node,
    needle: exp.Expr,
    value: exp.Expr,
    conjuncts: Sequence[exp.Expr],
    fresh: Fresh,
) -> UnionAll:
    """``x NOT IN (SELECT y FROM R WHERE c)`` as a column ``m`` of ``left``, as Spark reads it
    other than as a conjunct of WHERE: TRUE for the rows ``not_in`` keeps, FALSE for the
    others (NULL never: Spark's null-aware existence join),
    ``π_{L, TRUE}(K) ⊎ π_{L, FALSE}(L ⊎ −K)`` with ``K = not_in(L)``; ``left``'s columns then
    ``m``. (``x IN (...)`` there is ``exists_mark`` under ``c ∧ x = y``: FALSE, not NULL,
    without a match.)"""
    kept = not_in(left, right, needle, value, conjuncts, fresh)
    others = difference(left, kept, fresh)
    parts = (marked(kept, exp.true(), fresh), marked(others, exp.false(), fresh))
    return UnionAll(parts, _fresh_names(fresh, len(left.outputs) + 1))
