"""``ALTER MATERIALIZED VIEW v AS q'``: the new contents derived from the old ones.

Harrison–Dietrich's EPF (§3.5) maintains a view whose *definition* changes from its old
contents instead of recomputing it, when the new definition can be written over the old one.
For select-project-join views ``V = π_L σ_P(F)`` (one ``FROM`` clause ``F``, the conjuncts
``P`` of its ``WHERE``, the select list ``L``) and ``V' = π_L' σ_P'(F)`` over the same ``F``:

- ``P ⊆ P'`` (conjuncts added, ``A = P' − P``) and every column ``L'`` and ``A`` read is an
  expression of ``L``: ``V' = π_L' σ_A(V)`` with ``L'`` and ``A`` rewritten over ``V``'s
  columns. This covers a conjunct added, columns dropped or reordered, and computed columns
  added, alone or together; the base tables are not read.
- A table ``S`` joined at the end of ``F`` (inner, left outer or cross, ``ON θ``), with
  ``P ⊆ P'`` and ``L'``, ``A`` and ``θ`` expressions of ``L`` and ``S``'s columns:
  ``V' = π_L' σ_A(V ⋈_θ S)`` (``⟕`` for a left join), reading ``S`` but not ``F``. It holds
  because ``P`` reads only ``F``: ``σ_P(F) ⋈_θ S = σ_P(F ⋈_θ S)``, and for a left join
  ``σ_P(F ⟕_θ S) = σ_P(F) ⟕_θ S`` (padding changes no column of ``F``); bag projection
  distributes over the join as over ``σ``. No key of ``S`` is needed for exactness.
- ``P' ⊂ P`` (conjuncts removed, ``D = P − P'``) and ``L' = L``:
  ``V' = V ⊎ π_L σ_{P' ∧ ¬(D IS TRUE)}(F)``: the rows the removed conjuncts excluded are
  added, and only they are computed from the base tables.

Both hold as bags: ``σ`` and ``π`` (bag projection) distribute over the rows of ``V``, and
``σ_P' = σ_P ⊎ σ_{P' ∧ ¬P}`` splits ``σ_P'(F)`` without overlap (a row whose ``D`` is NULL
was excluded by ``P`` and is added).

For aggregate views ``V = π_L σ_H γ_{K; f…}(σ_P(F))`` and ``V' = π_L' σ_H' γ_{K'; f'…}(σ_P(F))``
over the same ``F`` and ``P`` (``rollup``), with ``K' ⊆ K`` and every call of ``f'`` one whose
state some call of ``f`` keeps, the new groups follow from the old groups' stored state, which
holds every group of ``γ`` (those ``H`` hides too): a group of ``K'`` is the union of the old
groups it covers, and the state is distributive, ``state(⋃ G_j) = Σ_j state(G_j)`` for the
counters and sums and ``min_j``/``max_j`` for the extremes (a roll-up deletes nothing, so the
extremes stay exact). This covers a GROUP BY key dropped, aggregates dropped or recombined,
and ``HAVING`` changed. ``DISTINCT`` aggregates (their value counters) are not rolled up.

Anything else (another change of the joins, ``DISTINCT``, another change of the aggregates)
is recomputed. The derivation is exact only when
``V`` is current: the caller checks that the view consumed every change of its base tables,
and reads a joined ``S`` (and ``F`` for added rows) at the versions its tracking logged.

The trees given here are qualified (``maintainability.qualified``): every column carries its
table, every select item an alias, so that two texts that mean the same compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sparkmv.analyze.ir import Aggregate, AggregateCall, Scan, walk
from sparkmv.delta import aggregate as agg
from sparkmv.identifiers import quote_identifier as q
from sparkmv.storage.stored_columns import COUNT_COLUMN

OLD_ROWS = "__sparkmv_old"
"""The alias of the old view's rows in ``Derivation.select_list`` and ``Derivation.filter``."""

CLAUSES_OUTSIDE = ("group", "having", "distinct", "qualify", "limit", "offset", "order")


@dataclass(frozen=True)
class JoinedTable:
    """A base table joined to the old rows: ``table`` (``db.name``) as ``alias``; ``kind``
    is ``inner``, ``left`` or ``cross``; ``condition`` (over ``OLD_ROWS`` and ``alias``; None
    for a cross join) as Spark SQL."""

    table: str
    alias: str
    kind: str
    condition: str | None


@dataclass(frozen=True)
class Derivation:
    """How the new contents follow from the old: the old rows joined to ``joined`` (None:
    no join), filtered by ``filter`` (or None) and projected to ``select_list``
    (``expression AS alias`` over ``OLD_ROWS`` and the joined table), plus the rows of
    ``added_query`` (a query over the base tables; None: nothing to add). ``change`` says
    what changed, for the refresh reason."""

    change: str
    select_list: tuple[str, ...]
    filter: str | None
    added_query: str | None
    joined: JoinedTable | None = None


def derivation(old: exp.Expr, new: exp.Expr) -> Derivation | None:
    """The derivation of ``new``'s rows from ``old``'s (both qualified), or None when the
    new definition is not ``old`` with conjuncts added or removed, columns dropped or
    computed columns added."""
    if not (isinstance(old, exp.Select) and isinstance(new, exp.Select)):
        return None
    if not (_plain_select(old) and _plain_select(new)):
        return None
    join = None
    if _source_sql(old) != _source_sql(new):
        join = _added_join(old, new)
        if join is None:
            return None
    old_conjuncts, new_conjuncts = _conjuncts(old), _conjuncts(new)
    if set(old_conjuncts) <= set(new_conjuncts):
        added = [c for k, c in new_conjuncts.items() if k not in old_conjuncts]
        return _over_old_rows(old, new, added, join)
    if (
        join is None
        and set(new_conjuncts) < set(old_conjuncts)
        and _select_sql(old) == _select_sql(new)
    ):
        removed = [c for k, c in old_conjuncts.items() if k not in new_conjuncts]
        return _with_excluded_rows(new, removed)
    return None


def _plain_select(tree: exp.Select) -> bool:
    """A SELECT without grouping, DISTINCT, windows, ordering or a row limit."""
    if any(tree.args.get(c) for c in CLAUSES_OUTSIDE):
        return False
    return not any(
        item.find(exp.AggFunc, exp.Window) for item in tree.expressions
    ) and not tree.find(exp.Star)


def _source_sql(tree: exp.Select, joins: int | None = None) -> str:
    """The FROM clause, its first ``joins`` joins (all: None) and WITH, as text."""
    parts = [tree.args.get(key) for key in ("with_", "with", "from_", "from")]
    parts.extend((tree.args.get("joins") or [])[:joins])
    return " ".join(part.sql(dialect="spark") for part in parts if isinstance(part, exp.Expr))


JOIN_KINDS = {("", ""): "inner", ("", "INNER"): "inner", ("LEFT", ""): "left"}
JOIN_KINDS |= {("LEFT", "OUTER"): "left", ("", "CROSS"): "cross"}
"""(side, kind) of a join ``_added_join`` derives over, as sqlglot spells them."""


def _added_join(old: exp.Select, new: exp.Select) -> exp.Join | None:
    """The join ``new`` adds after ``old``'s FROM clause, when that is the only difference
    of their sources and it joins a base table (not a subquery) inner, left or cross."""
    old_joins = len(old.args.get("joins") or [])
    new_joins = new.args.get("joins") or []
    if len(new_joins) != old_joins + 1 or _source_sql(old) != _source_sql(new, old_joins):
        return None
    join = new_joins[-1]
    if not isinstance(join, exp.Join):
        return None
    side, kind = (join.args.get(key) or "" for key in ("side", "kind"))
    if (str(side).upper(), str(kind).upper()) not in JOIN_KINDS or join.args.get("using"):
        return None
    table = join.this
    if not isinstance(table, exp.Table) or not table.db or table.alias_or_name == OLD_ROWS:
        return None
    return join


def _select_sql(tree: exp.Select) -> list[str]:
    return [item.sql(dialect="spark") for item in tree.expressions]


def _conjuncts(tree: exp.Select) -> dict[str, exp.Expr]:
    """The conjuncts of WHERE, by their text."""
    where = tree.args.get("where")
    if not isinstance(where, exp.Where):
        return {}
    condition = where.this
    parts = condition.flatten() if isinstance(condition, exp.And) else [condition]
    return {part.sql(dialect="spark"): part for part in parts}


def _over_old_rows(
    old: exp.Select, new: exp.Select, added: list[exp.Expr], join: exp.Join | None
) -> Derivation | None:
    """``π_L' σ_A(V)``, or ``π_L' σ_A(V ⋈_θ S)`` with the added ``join``, with ``L'``, ``A``
    and ``θ`` written over ``V``'s columns (and ``S``'s); None when they read a column no
    item of ``L`` provides."""
    provided = {
        item.this.sql(dialect="spark"): item.alias
        for item in old.expressions
        if isinstance(item, exp.Alias)
    }
    joined = join.this.alias_or_name if join is not None else None
    items: list[str] = []
    for item in new.expressions:
        if not isinstance(item, exp.Alias):
            return None
        rewritten = _over(item.this, provided, joined)
        if rewritten is None:
            return None
        items.append(f"{rewritten} AS {exp.to_identifier(item.alias).sql(dialect='spark')}")
    conditions: list[str] = []
    for conjunct in added:
        rewritten = _over(conjunct, provided, joined)
        if rewritten is None:
            return None
        conditions.append(f"({rewritten})")
    joined_table = None
    if join is not None:
        joined_table = _joined_table(join, provided)
        if joined_table is None:
            return None
    changes = []
    if joined_table is not None:
        changes.append(
            f"a {joined_table.kind} join of {joined_table.table} added: the stored rows joined"
        )
    if added:
        changes.append(f"{len(added)} conjunct(s) added to WHERE: the stored rows filtered")
    if _select_sql(old) != _select_sql(new):
        changes.append("the select list rewritten over the stored columns")
    change = "; ".join(changes) or "the same rows"
    filter_ = " AND ".join(conditions) or None
    return Derivation(change, tuple(items), filter_, None, joined_table)


def _joined_table(join: exp.Join, provided: dict[str, str]) -> JoinedTable | None:
    """``join`` over the old rows: its table, alias, kind and ``ON`` condition rewritten."""
    table = join.this
    side, kind = (str(join.args.get(key) or "").upper() for key in ("side", "kind"))
    on = join.args.get("on")
    condition = None
    if isinstance(on, exp.Expr):
        condition = _over(on, provided, table.alias_or_name)
        if condition is None:
            return None
    join_kind = JOIN_KINDS[(side, kind)]
    if join_kind == "cross" and condition is not None:
        join_kind = "inner"
    if join_kind != "cross" and condition is None:
        return None
    name = f"{table.db}.{table.name}".lower()
    return JoinedTable(name, table.alias_or_name, join_kind, condition)


def _over(expression: exp.Expr, provided: dict[str, str], joined: str | None = None) -> str | None:
    """``expression`` with each subexpression the old select list computes replaced by its
    column of ``OLD_ROWS``; None when a base column remains (but the ``joined`` table's), or
    a subquery."""
    if expression.find(exp.Subquery, exp.Select):
        return None

    def replace(node: exp.Expr) -> exp.Expr:
        alias = provided.get(node.sql(dialect="spark"))
        if alias is None or isinstance(node, exp.Literal):
            return node
        return exp.column(alias, table=OLD_ROWS, quoted=True)

    rewritten = expression.copy().transform(replace)
    if any(column.table not in (OLD_ROWS, joined) for column in rewritten.find_all(exp.Column)):
        return None
    return rewritten.sql(dialect="spark")


def _with_excluded_rows(new: exp.Select, removed: list[exp.Expr]) -> Derivation:
    """``V ⊎ π_L σ_{P' ∧ ¬(D IS TRUE)}(F)``: the old rows, and the query's rows that the
    removed conjuncts ``D`` excluded (false or NULL)."""
    excluded = exp.Not(this=exp.Coalesce(this=exp.and_(*removed), expressions=[exp.false()]))
    query = new.copy()
    where = query.args.get("where")
    condition = excluded if not isinstance(where, exp.Where) else exp.and_(where.this, excluded)
    query.set("where", exp.Where(this=condition))
    items = tuple(
        f"{exp.column(item.alias_or_name, table=OLD_ROWS, quoted=True).sql(dialect='spark')}"
        f" AS {exp.to_identifier(item.alias_or_name).sql(dialect='spark')}"
        for item in new.expressions
    )
    change = f"{len(removed)} conjunct(s) removed from WHERE: the rows they excluded added"
    return Derivation(change, items, None, query.sql(dialect="spark"))


def same_input(old: exp.Expr, new: exp.Expr) -> bool:
    """Whether two qualified aggregate queries group the same rows: one ``SELECT`` each, with
    the same FROM clause and the same WHERE conjuncts, and no DISTINCT, window, row limit or
    subquery outside FROM."""
    if not (isinstance(old, exp.Select) and isinstance(new, exp.Select)):
        return False
    for tree in (old, new):
        if any(tree.args.get(c) for c in ("distinct", "qualify", "limit", "offset")):
            return False
        if any(item.find(exp.Window, exp.Subquery, exp.Select) for item in tree.expressions):
            return False
    return _source_sql(old) == _source_sql(new) and _conjuncts(old).keys() == _conjuncts(new).keys()


@dataclass(frozen=True)
class Rollup:
    """The new aggregate's group state from the old one's stored groups: its ``i``-th key
    is the old ``keys[i]``-th; its ``i``-th call's state is the old ``calls[i]``-th call's
    (-1: ``COUNT(*)``, whose state is the group's count). ``change`` says what changed."""

    change: str
    keys: tuple[int, ...]
    calls: tuple[int, ...]

    def state_sql(self, new: Aggregate, source: str, sum_types: dict[str, str]) -> str:
        """The new groups' keys and state over the FROM item ``source`` (the old view's
        stored groups, value counters excluded), a Spark SQL query. ``sum_types``: the type
        of each old sum column, kept by the rolled-up sum."""
        old_keys = [q(agg.key_column(j)) for j in self.keys]
        items = [f"{k} AS {q(agg.key_column(i))}" for i, k in enumerate(old_keys)]
        items.append(f"coalesce(sum({q(COUNT_COLUMN)}), 0) AS {q(COUNT_COLUMN)}")
        for index, (call, old) in enumerate(zip(new.calls, self.calls, strict=True)):
            if call.function in ("min", "max"):
                extreme = q(agg.extreme_column(old))
                items.append(f"{call.function}({extreme}) AS {q(agg.extreme_column(index))}")
            elif call.argument is not None:
                counted = q(agg.count_column(old))
                items.append(f"coalesce(sum({counted}), 0) AS {q(agg.count_column(index))}")
                if call.function in ("sum", "avg"):
                    summed = agg.sum_column(old)
                    items.append(
                        f"CAST(sum({q(summed)}) AS {sum_types[summed]})"
                        f" AS {q(agg.sum_column(index))}"
                    )
        grouped = f" GROUP BY {', '.join(old_keys)}" if old_keys else ""
        return f"SELECT {', '.join(items)} FROM {source}{grouped}"


def rollup(old: Aggregate, new: Aggregate) -> Rollup | None:
    """How ``new``'s groups roll up ``old``'s (both over the same input, ``same_input``), or
    None: a key of ``new`` is not one of ``old``'s, or a call's state is not kept by ``old``
    (a DISTINCT count, sum or average is never rolled up)."""
    names_old, names_new = _input_columns(old), _input_columns(new)
    if names_old is None or names_new is None:
        return None
    old_keys = [_canonical(key, names_old) for key in old.keys]
    keys = []
    for key in new.keys:
        text = _canonical(key, names_new)
        if text is None or text not in old_keys:
            return None
        keys.append(old_keys.index(text))
    states = _kept_states(old, names_old)
    calls = []
    for call in new.calls:
        if call.argument is None:
            calls.append(-1)
            continue
        if agg.counts_values(call):
            return None
        argument = _canonical(call.argument, names_new)
        found = None if argument is None else states.get((_state_kind(call), argument))
        if found is None:
            return None
        calls.append(found)
    if len(set(keys)) < len(keys):
        return None
    dropped = len(old.keys) - len(keys)
    change = (
        f"{dropped} GROUP BY key(s) dropped: the stored groups rolled up"
        if dropped
        else "the aggregates recomputed from the stored group state"
    )
    return Rollup(change, tuple(keys), tuple(calls))


def _kept_states(old: Aggregate, names: dict[str, str]) -> dict[tuple[str, str], int]:
    """The old calls whose state a new call can take, by (kind, argument): ``n`` a count of
    non-null values (COUNT, SUM, AVG), ``s`` a sum with its count (SUM, AVG), ``min``/``max``
    an extreme."""
    states: dict[tuple[str, str], int] = {}
    for index, call in enumerate(old.calls):
        argument = _canonical(call.argument, names) if call.argument is not None else None
        if argument is None or agg.counts_values(call):
            continue
        states.setdefault((_state_kind(call), argument), index)
        if call.function in ("sum", "avg"):  # its count of values serves a COUNT too
            states.setdefault(("n", argument), index)
    return states


def _state_kind(call: AggregateCall) -> str:
    """The state a (non-DISTINCT) call reads: ``min``/``max`` an extreme, ``s`` a sum with
    its count (SUM, AVG), ``n`` a count of non-null values (COUNT)."""
    if call.function in ("min", "max"):
        return call.function
    return "s" if call.function in ("sum", "avg") else "n"


def _input_columns(node: Aggregate) -> dict[str, str] | None:
    """The internal names of the aggregate's input columns as ``alias.column`` of the table
    occurrence each comes from (the same in two trees built from the same FROM clause);
    None when two occurrences would read alike."""
    names: dict[str, str] = {}
    for scan in walk(node.child):
        if isinstance(scan, Scan):
            for output, column in zip(scan.outputs, scan.columns, strict=True):
                names[output] = f"{scan.alias}.{column}".lower()
    return names if len(set(names.values())) == len(names) else None


def _canonical(expression: exp.Expr, names: dict[str, str]) -> str | None:
    """``expression`` with its internal column names replaced by ``names``; None when it
    reads a column no table occurrence provides."""
    if any(column.name not in names for column in expression.find_all(exp.Column)):
        return None

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return exp.Var(this=names[node.name])
        return node

    return expression.copy().transform(rename).sql(dialect="spark")
