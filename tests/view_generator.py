"""Hypothesis strategies: random views of the select-project-join / DISTINCT / UNION class.

The class (docs/sql-reference.md): selections, bag projections with deterministic expressions,
inner joins of any number of table occurrences (self-joins; ``JOIN ... ON``, comma joins with the
condition in WHERE, ``CROSS JOIN``; equi, non-equi and NULL-sensitive conditions), ``DISTINCT``,
``UNION ALL``, ``UNION``, ``INTERSECT``, ``EXCEPT`` (and their ``ALL`` forms), derived tables in
FROM (themselves of the class) and non-recursive ``WITH``. Every generated text is valid Spark SQL:
column references are resolved against the sources in scope (qualified when a bare name would be
ambiguous), set-operation branches agree in column count and type kind, output names are distinct
(or the view lists its own column names), and no expression can fail at run time under ANSI mode (no
division, no casts of strings to numbers).

Base tables, over tiny domains so that joins match and duplicates are common::

    r(a INT, b INT)    s(b INT, c STRING)    t(c STRING, d BIGINT)

``writes(table)`` draws one statement that changes a base table (INSERT ... VALUES,
INSERT ... SELECT, DELETE, UPDATE, MERGE); ``scenarios()`` draws a whole test case: the
initial data, the view and a stream of write batches, each followed by a refresh.

A construct the incremental engine cannot maintain legitimately can be switched off in
``FEATURES`` (the generator then never produces it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from hypothesis import strategies as st
from sparkmv.config import (
    STORAGE_BUCKETS_CONF,
    STORAGE_MAX_MASKED_SHARE,
    STORAGE_PATCH_MIN_ROWS,
)

T = TypeVar("T")
Kind = Literal["int", "str"]
Draw = Callable[[st.SearchStrategy[Any]], Any]

# Constructs the view generator may use; drop one here to stop generating it.
FEATURES: frozenset[str] = frozenset(
    {
        "distinct",  # SELECT DISTINCT
        "union_all",
        "union",  # UNION (DISTINCT)
        "intersect",  # INTERSECT (DISTINCT)
        "except",  # EXCEPT (DISTINCT)
        "intersect_all",  # INTERSECT ALL
        "except_all",  # EXCEPT ALL
        "derived",  # (subquery) AS d in FROM
        "with",  # WITH w AS (...) (non-recursive)
        "comma_join",  # FROM x, y WHERE <join condition>
        "cross_join",  # CROSS JOIN (no condition)
        "non_equi_join",  # ON x.a < y.a, OR, IS NULL, <=> ...
        "star",  # SELECT *, SELECT x.*, y.c
        "column_list",  # CREATE MATERIALIZED VIEW v (n1, n2) AS ...
        "case",  # CASE WHEN / if()
        "string_functions",  # upper, concat, substr, ...
    }
)

SET_OPERATIONS = {
    "union_all": "UNION ALL",
    "union": "UNION",
    "intersect": "INTERSECT",
    "except": "EXCEPT",
    "intersect_all": "INTERSECT ALL",
    "except_all": "EXCEPT ALL",
}

JOIN_STYLES = {
    "join": "join: JOIN ... ON",
    "inner": "join: INNER JOIN ... ON",
    "comma": "join: comma",
    "cross": "join: CROSS JOIN",
}

INTS: tuple[int, ...] = (0, 1, 2, 3)
STRINGS: tuple[str, ...] = ("x", "y", "z")
MAX_LEAVES = 4  # table occurrences in one view (bounds the size of cross products)


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind


@dataclass(frozen=True)
class Table:
    """A base table (or a CTE): its name, its columns and their SQL types."""

    name: str
    columns: tuple[Column, ...]
    types: tuple[str, ...] = ()

    def ddl(self, rows: Sequence[tuple[object, ...]] = ()) -> str:
        """CREATE TABLE, with ``rows`` in the same statement (one Spark job, not two)."""
        pairs = list(zip(self.columns, self.types, strict=True))
        if not rows:
            columns = ", ".join(f"{c.name} {t}" for c, t in pairs)
            return f"CREATE TABLE {self.name} ({columns}) USING parquet"
        select = ", ".join(f"CAST({c.name} AS {t}) AS {c.name}" for c, t in pairs)
        names = ", ".join(c.name for c in self.columns)
        values = f"VALUES {values_clause(self, rows)} AS v({names})"
        return f"CREATE TABLE {self.name} USING parquet AS SELECT {select} FROM {values}"


TABLES: tuple[Table, ...] = (
    Table("r", (Column("a", "int"), Column("b", "int")), ("INT", "INT")),
    Table("s", (Column("b", "int"), Column("c", "str")), ("INT", "STRING")),
    Table("t", (Column("c", "str"), Column("d", "int")), ("STRING", "BIGINT")),
)
TABLE_BY_NAME: dict[str, Table] = {table.name: table for table in TABLES}


@dataclass(frozen=True)
class Source:
    """A FROM item in scope: how its columns are qualified (None: only bare names)."""

    qualifier: str | None
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Relation:
    """A query's text and its output columns."""

    sql: str
    columns: tuple[Column, ...]


def _lit(kind: Kind, value: object) -> str:
    if value is None:
        return "NULL"
    return f"'{value}'" if kind == "str" else str(value)


def _typed_lit(kind: Kind, value: object) -> str:
    """A literal whose type is never NULL's own (VALUES lists of a MERGE source)."""
    if value is None:
        return "CAST(NULL AS STRING)" if kind == "str" else "CAST(NULL AS INT)"
    return _lit(kind, value)


def values_of(kind: Kind) -> st.SearchStrategy[object]:
    """A column value: NULL about a third of the time, else from the tiny domain."""
    domain: Sequence[object] = STRINGS if kind == "str" else INTS
    return st.one_of(st.just(None), st.sampled_from(domain), st.sampled_from(domain))


def rows_of(
    table: Table, min_size: int = 0, max_size: int = 4
) -> st.SearchStrategy[list[tuple[object, ...]]]:
    """Rows for ``table``; a row is repeated now and then so duplicates are common."""
    row = st.tuples(*(values_of(c.kind) for c in table.columns))
    base = st.lists(row, min_size=min_size, max_size=max_size)
    return base.flatmap(
        lambda rows: (
            st.lists(st.sampled_from(rows), max_size=2).map(lambda extra: rows + extra)
            if rows
            else st.just(rows)
        )
    )


def values_clause(table: Table, rows: Sequence[tuple[object, ...]]) -> str:
    return ", ".join(
        "(" + ", ".join(_lit(c.kind, v) for c, v in zip(table.columns, row, strict=True)) + ")"
        for row in rows
    )


class ViewBuilder:
    """Draws one view query; ``leaves`` bounds how many table occurrences it reads."""

    def __init__(self, draw: Draw, features: frozenset[str] = FEATURES) -> None:
        self.draw = draw
        self.features = features
        self.leaves = 0
        self.counter = 0
        self.tables: list[Table] = list(TABLES)  # base tables, then CTEs as they are defined
        self.referenced: set[str] = set()
        self.universe: Sequence[Source] | None = None  # all of FROM, while writing an ON
        self.branches: set[str] = set()  # the shapes this builder drew (``View.branches``)

    # ---- small helpers -------------------------------------------------------------------
    def has(self, feature: str) -> bool:
        return feature in self.features

    def chance(self, p: float) -> bool:
        # integers(0, 99) is close to uniform (a wider range is biased towards small values);
        # hypothesis's simplest draw (0) means "no", so its simplest view is a simple one.
        return bool(self.draw(st.integers(0, 99)) >= 100 - p * 100)

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(list(options)))  # type: ignore[no-any-return]

    def took(self, branch: str) -> None:
        """Record that the view drew ``branch`` (a set operation, a join style or condition
        shape, a select-list style, ...), so that a test can cover every branch."""
        self.branches.add(branch)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ---- column references, expressions, predicates ------------------------------------
    def column_ref(
        self, scope: Sequence[Source], kind: Kind | None = None
    ) -> tuple[str, Column] | None:
        """A reference to a column of ``scope`` (of ``kind``), qualified when it must be."""
        candidates = [
            (source, column)
            for source in scope
            for column in source.columns
            if kind is None or column.kind == kind
        ]
        if not candidates:
            return None
        source, column = self.pick(candidates)
        return self.render_ref(scope, source, column), column

    def render_ref(self, scope: Sequence[Source], source: Source, column: Column) -> str:
        universe = self.universe if self.universe is not None else scope
        ambiguous = sum(1 for s in universe for c in s.columns if c.name == column.name) > 1
        if source.qualifier is None or (not ambiguous and not self.chance(0.6)):
            return column.name
        return f"{source.qualifier}.{column.name}"

    def literal(self, kind: Kind) -> str:
        return _lit(kind, self.pick(STRINGS if kind == "str" else INTS))

    def expr(self, scope: Sequence[Source], kind: Kind, depth: int = 0) -> str:
        """A deterministic expression of ``kind`` that cannot fail at run time."""
        if depth >= 2 or not self.chance(0.55):
            ref = self.column_ref(scope, kind)
            if ref is not None and not self.chance(0.15):
                return ref[0]
            other: Kind = "str" if kind == "int" else "int"
            if self.chance(0.3) and self.has("string_functions"):
                ref = self.column_ref(scope, other)
                if ref is not None:
                    return f"length({ref[0]})" if kind == "int" else f"CAST({ref[0]} AS STRING)"
            return self.literal(kind)

        def sub() -> str:
            return self.expr(scope, kind, depth + 1)

        choices: list[Callable[[], str]] = [
            lambda: f"coalesce({sub()}, {self.literal(kind)})",
            lambda: f"nullif({sub()}, {self.literal(kind)})",
        ]
        if kind == "int":
            choices += [
                lambda: f"{sub()} + {self.pick(INTS[1:])}",
                lambda: f"({sub()} - {self.pick(INTS[1:])})",
                lambda: f"{sub()} * 2",
                lambda: f"abs({sub()} - 2)",
                lambda: f"greatest({sub()}, {sub()})",
                lambda: f"pmod({sub()}, 2)",
            ]
            if self.has("string_functions"):
                choices.append(lambda: f"length({self.expr(scope, 'str', depth + 1)})")
        elif self.has("string_functions"):
            choices += [
                lambda: f"upper({sub()})",
                lambda: f"concat({sub()}, '{self.pick(STRINGS)}')",
                lambda: f"concat_ws('-', {sub()}, {sub()})",
                lambda: f"substr({sub()}, 1, 1)",
                lambda: f"CAST({self.expr(scope, 'int', depth + 1)} AS STRING)",
            ]
        if self.has("case"):
            choices += [
                lambda: f"CASE WHEN {self.pred(scope, depth + 1)} THEN {sub()} ELSE {sub()} END",
                lambda: f"CASE WHEN {self.pred(scope, depth + 1)} THEN {sub()} END",
                lambda: f"if({self.pred(scope, depth + 1)}, {sub()}, {sub()})",
            ]
        return self.pick(choices)()

    def pred(self, scope: Sequence[Source], depth: int = 0) -> str:
        """A predicate over ``scope``, NULL-sensitive now and then (three-valued logic)."""
        kinds = {c.kind for source in scope for c in source.columns}
        kind: Kind = "str" if "str" in kinds and ("int" not in kinds or self.chance(0.4)) else "int"
        if depth < 2 and self.chance(0.3):
            connective = self.pick(["AND", "OR", "NOT"])
            if connective == "NOT":
                return f"NOT ({self.pred(scope, depth + 1)})"
            return f"({self.pred(scope, depth + 1)} {connective} {self.pred(scope, depth + 1)})"
        atom = self.pick(["cmp", "cmp", "cmp", "null", "in", "between", "like"])
        left = self.expr(scope, kind, 2 if not self.chance(0.4) else depth + 1)
        if atom == "null":
            return f"{left} IS {self.pick(['', 'NOT '])}NULL"
        if atom == "in":
            items = ", ".join(self.literal(kind) for _ in range(self.draw(st.integers(1, 3))))
            return f"{left} {self.pick(['', 'NOT '])}IN ({items})"
        if atom == "between" and kind == "int":
            low = self.pick(INTS)
            return f"{left} BETWEEN {low} AND {low + self.pick(INTS)}"
        if atom == "like" and kind == "str":
            return f"{left} LIKE '{self.pick(STRINGS)}%'"
        op = self.pick(["=", "=", "<>", "<", "<=", ">", ">=", "<=>"])
        right = self.literal(kind) if not self.chance(0.4) else self.expr(scope, kind, 2)
        return f"{left} {op} {right}"

    def join_condition(self, left: Sequence[Source], new: Source, scope: Sequence[Source]) -> str:
        """A condition joining ``new`` to the sources ``left`` (an equi-join mostly)."""
        pairs = [
            (ls, lc, nc)
            for ls in left
            for lc in ls.columns
            for nc in new.columns
            if lc.kind == nc.kind
        ]
        if not pairs:  # no two columns of one kind: any predicate over both
            self.took("join condition: any predicate")
            return self.pred(scope)
        ls, lc, nc = self.pick(pairs)
        lhs, rhs = self.render_ref(scope, ls, lc), self.render_ref(scope, new, nc)
        shape = "equi"
        if self.has("non_equi_join"):
            shape = self.pick(
                ["equi", "equi", "equi", "equi_and", "equi_or", "null_safe", "less", "nulls_match"]
            )
        self.took(f"join condition: {shape}")
        if shape == "equi_and":
            return f"{lhs} = {rhs} AND {self.pred(scope)}"
        if shape == "equi_or":
            return f"({lhs} = {rhs} OR {self.pred(scope)})"
        if shape == "null_safe":
            return f"{lhs} <=> {rhs}"
        if shape == "less":
            return f"{lhs} {self.pick(['<', '<=', '<>'])} {rhs}"
        if shape == "nulls_match":
            return f"({lhs} = {rhs} OR ({lhs} IS NULL AND {rhs} IS NULL))"
        return f"{lhs} = {rhs}"

    # ---- FROM ----------------------------------------------------------------------------
    def from_item(self, depth: int, used: set[str]) -> tuple[str, Source]:
        """One FROM item: a table (or CTE) occurrence, or a derived table."""
        self.leaves += 1
        if (
            self.has("derived")
            and depth < 2
            and self.leaves < MAX_LEAVES
            and self.chance(0.2 if depth == 0 else 0.08)
        ):
            self.leaves -= 1  # the subquery counts its own leaves
            inner = self.query(depth + 1, unique_names=True)
            alias = self.fresh("d")
            used.add(alias)
            self.took("derived table")
            if not inner.columns:
                raise AssertionError(inner)
            return f"({inner.sql}) AS {alias}", Source(alias, inner.columns)
        ctes = [table for table in self.tables if table.name not in TABLE_BY_NAME]
        unused = [table for table in ctes if table.name not in self.referenced]
        if unused and not self.chance(0.2):
            table = self.pick(unused)
        else:
            table = self.pick(list(TABLES) + ctes * 2)
        self.referenced.add(table.name)
        if table.name in used or self.chance(0.4):
            alias = self.fresh(table.name if table.name in TABLE_BY_NAME else "q")
            used.add(alias)
            sep = self.pick([" AS ", " "])
            return f"{table.name}{sep}{alias}", Source(alias, table.columns)
        used.add(table.name)
        return table.name, Source(table.name, table.columns)

    def from_clause(self, depth: int) -> tuple[str, list[Source], list[str]]:
        """FROM text, the sources in scope, and conditions the WHERE clause must add."""
        budget = MAX_LEAVES - self.leaves
        count = self.draw(st.integers(1, max(1, min(3, budget))))
        used: set[str] = set()
        chains: list[str] = []
        scope: list[Source] = []
        deferred: list[tuple[list[Source], Source]] = []
        chain: list[Source] = []
        text = ""
        for i in range(count):
            if i > 0 and self.leaves >= MAX_LEAVES:
                break
            item, source = self.from_item(depth, used)
            if i == 0:
                text, chain = item, [source]
                scope.append(source)
                continue
            style = self.pick(["join", "join", "join", "comma", "cross", "inner"])
            if style == "comma" and not self.has("comma_join"):
                style = "join"
            if style == "cross" and not self.has("cross_join"):
                style = "join"
            previous_scope = list(scope)
            scope.append(source)
            self.took(JOIN_STYLES[style])
            if style == "comma":
                chains.append(text)
                text, chain = item, [source]
                if not self.chance(0.15):  # the join condition goes to WHERE (written below)
                    deferred.append((previous_scope, source))
                else:
                    self.took("join: comma without a condition")
            elif style == "cross":
                text += f" CROSS JOIN {item}"
                chain.append(source)
            else:
                # ON reads only this chain's items (Spark would let it read earlier comma items
                # too, standard SQL would not); bare names must be unique in the whole FROM.
                chain.append(source)
                self.universe = scope
                condition = self.join_condition(chain[:-1], source, chain)
                self.universe = None
                keyword = "JOIN" if style == "join" else "INNER JOIN"
                text += f" {keyword} {item} ON {condition}"
        chains.append(text)
        # WHERE sees the whole FROM: bare names must be unique in all of it.
        where = [self.join_condition(left, source, scope) for left, source in deferred]
        return ", ".join(chains), scope, where

    # ---- SELECT --------------------------------------------------------------------------
    def select_list(
        self, scope: Sequence[Source], shape: Sequence[Kind] | None, unique_names: bool, top: bool
    ) -> tuple[str, tuple[Column, ...]]:
        names: list[str] = []
        columns: list[Column] = []
        items: list[str] = []
        all_columns = [c for s in scope for c in s.columns]

        def add(item: str, column: Column) -> None:
            items.append(item)
            columns.append(column)
            names.append(column.name)

        def item_of(wanted: Kind | None, allow_unaliased: bool) -> None:
            kinds: list[Kind] = ["int", "int", "str"]
            kind = wanted if wanted is not None else self.pick(kinds)
            if not self.chance(0.45):
                ref = self.column_ref(scope, kind)
                if ref is not None:
                    text, column = ref
                    if column.name in names or (unique_names and self.chance(0.15)):
                        alias = self.fresh("o")
                        add(f"{text} AS {alias}", Column(alias, kind))
                    else:
                        add(text, column)
                    return
            text = self.expr(scope, kind)
            if allow_unaliased and self.chance(0.3) and "(" in text and "CAST" not in text:
                # Spark names it after its text; keep at most one such item (names stay distinct).
                self.took("select: unaliased expression")
                add(text, Column(text, kind))
                return
            alias = self.fresh("o")
            add(f"{text} AS {alias}", Column(alias, kind))

        if shape is not None:
            for kind in shape:
                item_of(kind, allow_unaliased=False)
            return ", ".join(items), tuple(columns)

        distinct_names = len({c.name for c in all_columns}) == len(all_columns)
        style = self.pick(["items", "items", "items", "star", "qualified_star"])
        if style != "items" and not self.has("star"):
            style = "items"
        if style == "star" and (distinct_names or not unique_names):
            self.took("select: *")
            return "*", tuple(all_columns)
        if style == "qualified_star":
            chosen = [s for s in scope if s.qualifier is not None and self.chance(0.6)]
            for source in chosen:
                if unique_names and any(c.name in names for c in source.columns):
                    continue
                self.took("select: qualified *")
                items.append(f"{source.qualifier}.*")
                columns.extend(source.columns)
                names.extend(c.name for c in source.columns)
        for i in range(self.draw(st.integers(0 if items else 1, 3))):
            item_of(None, allow_unaliased=top and i == 0)
        return ", ".join(items), tuple(columns)

    def block(
        self, depth: int, shape: Sequence[Kind] | None, unique_names: bool, top: bool = False
    ) -> Relation:
        """One SELECT ... FROM ... [WHERE ...]."""
        from_text, scope, conditions = self.from_clause(depth)
        select, columns = self.select_list(scope, shape, unique_names, top)
        if self.chance(0.5):
            conditions.append(self.pred(scope))
        distinct = "DISTINCT " if self.has("distinct") and self.chance(0.3) else ""
        if distinct:
            self.took("SELECT DISTINCT")
        sql = f"SELECT {distinct}{select} FROM {from_text}"
        if conditions:
            sql += " WHERE " + " AND ".join(
                f"({c})" if " OR " in c and not c.startswith("(") else c for c in conditions
            )
        return Relation(sql, columns)

    def set_operation(self, depth: int, unique_names: bool, top: bool) -> Relation:
        """Two or three branches joined by set operations (INTERSECT binds tighter)."""
        first = self.block(depth, None, unique_names, top=False)
        shape = [c.kind for c in first.columns]
        ops = [op for op in SET_OPERATIONS if self.has(op)]
        sql = first.sql
        branches = 2 if self.leaves >= MAX_LEAVES - 1 else self.draw(st.integers(2, 3))
        if branches == 3:
            self.took("set operation: three branches")
        for _ in range(branches - 1):
            op = SET_OPERATIONS[self.pick(ops)]
            self.took(f"set operation: {op}")
            branch = self.block(depth, shape, unique_names=False)
            text = f"({branch.sql})" if self.chance(0.2) else branch.sql
            if text != branch.sql:
                self.took("set operation: parenthesized branch")
            sql += f" {op} {text}"
        return Relation(sql, first.columns)

    def query(self, depth: int, unique_names: bool, top: bool = False) -> Relation:
        can_union = any(map(self.has, SET_OPERATIONS)) and self.leaves < MAX_LEAVES - 1
        if can_union and self.chance(0.25 if depth == 0 else 0.15):
            return self.set_operation(depth, unique_names, top)
        return self.block(depth, None, unique_names, top)

    def view(self) -> View:
        """A whole view: [WITH ...] query, and sometimes a column list for the view."""
        ctes: list[str] = []
        if self.has("with") and self.chance(0.15):
            for _ in range(self.draw(st.integers(1, 2))):
                if self.leaves >= MAX_LEAVES - 1:
                    break
                body = self.query(1, unique_names=True)
                self.took("WITH")
                name = self.fresh("w")
                ctes.append(f"{name} AS ({body.sql})")
                self.tables.append(Table(name, body.columns))
        column_list = self.has("column_list") and self.chance(0.1)
        body = self.query(0, unique_names=not column_list, top=not column_list)
        sql = (f"WITH {', '.join(ctes)} " if ctes else "") + body.sql
        names = tuple(f"n{i}" for i in range(len(body.columns))) if column_list else ()
        if column_list:
            self.took("column list")
        return View(sql, names, frozenset(self.branches))


# Aggregate calls by argument kind; {x} is the argument. The decimal ones cover Spark's
# decimal SUM/AVG result types; DISTINCT ones are maintained from per-(group, value) counters.
AGGREGATES: dict[Kind, tuple[str, ...]] = {
    "int": (
        "COUNT({x})",
        "SUM({x})",
        "AVG({x})",
        "MIN({x})",
        "MAX({x})",
        "COUNT(DISTINCT {x})",
        "SUM(DISTINCT {x})",
        "AVG(DISTINCT {x})",
        "SUM(DISTINCT CAST({x} AS DECIMAL(6,2)))",
        "SUM(CAST({x} AS DECIMAL(6,2)) / 4)",
        "AVG(CAST({x} AS DECIMAL(6,2)))",
        # averages a plain division of the kept sum would round otherwise (a scale of 4; a
        # sum of 33 integral digits): ``delta/aggregate.decimal_average_sql``
        "AVG(CAST({x} AS DECIMAL(12,0)))",
        "AVG(CAST({x} AS DECIMAL(25,4)) * 3)",
    ),
    "str": ("COUNT({x})", "MIN({x})", "MAX({x})", "COUNT(DISTINCT {x})"),
}


class AggregateViewBuilder(ViewBuilder):
    """Draws an aggregate view: ``SELECT keys, aggregates FROM <joins of the class> [WHERE]
    [GROUP BY keys] [HAVING]``, now and then over a derived table of the class, or nested
    (an aggregate derived table joined with a base table)."""

    def aggregate_call(self, scope: Sequence[Source]) -> tuple[str, Kind]:
        """An aggregate over ``scope`` and its kind."""
        if self.chance(0.2):
            return "COUNT(*)", "int"
        kind: Kind = self.pick(["int", "int", "str"])
        argument = self.expr(scope, kind, 1)
        call = self.pick(AGGREGATES[kind]).format(x=argument)
        numeric = call.startswith(("COUNT", "SUM", "AVG")) or kind == "int"
        return call, "int" if numeric else "str"

    def aggregate_query(self) -> Relation:
        from_text, scope, conditions = self.from_clause(1)
        if self.chance(0.4):
            conditions.append(self.pred(scope))
        keys: dict[str, Kind] = {}
        for _ in range(self.pick([0, 1, 1, 2])):
            kind: Kind = self.pick(["int", "str"])
            key = self.expr(scope, kind, 1)
            if re.fullmatch(r"'\w*'|\d+|NULL", key):  # GROUP BY 3 is a position
                ref = self.column_ref(scope, kind)
                key = ref[0] if ref is not None else f"coalesce({key}, {key})"
            keys.setdefault(key, kind)
        items: list[str] = []
        columns: list[Column] = []
        for key, kind in keys.items():
            alias = self.fresh("k")
            items.append(f"{key} AS {alias}")
            columns.append(Column(alias, kind))
        for _ in range(self.draw(st.integers(1, 3))):
            call, kind = self.aggregate_call(scope)
            if self.chance(0.15) and kind == "int" and not call.startswith("AVG"):
                other, other_kind = self.aggregate_call(scope)
                if other_kind == "int" and not other.startswith(("AVG", "SUM(CAST")):
                    call = f"coalesce({call}, 0) + coalesce({other}, 0)"
            alias = self.fresh("m")
            items.append(f"{call} AS {alias}")
            columns.append(Column(alias, kind))
        sql = f"SELECT {', '.join(items)} FROM {from_text}"
        if conditions:
            sql += " WHERE " + " AND ".join(f"({c})" for c in conditions)
        if keys:
            sql += " GROUP BY " + ", ".join(keys)
        if self.chance(0.3):
            call, kind = self.aggregate_call(scope)
            bound = self.literal("int") if kind == "int" else self.literal("str")
            having = self.pick([f"{call} > {bound}", f"{call} IS NOT NULL", f"{call} <= {bound}"])
            sql += f" HAVING {having}"
        return Relation(sql, tuple(columns))

    def view(self) -> View:
        inner = self.aggregate_query()
        keys = [c for c in inner.columns if c.kind == "int"]
        if keys and self.chance(0.15):  # nested: an aggregate joined with a base table
            table = self.pick(TABLES)
            column = next(c for c in table.columns if c.kind == "int")
            key = self.pick(keys).name
            return View(
                f"SELECT g.*, x.{column.name} AS joined FROM ({inner.sql}) AS g"
                f" JOIN {table.name} AS x ON g.{key} = x.{column.name}"
            )
        return View(inner.sql)


@st.composite
def aggregate_views(draw: Draw) -> View:
    return AggregateViewBuilder(draw).view()


# The scalar subqueries' aggregates by argument kind ({x} is the argument) and result kind.
SCALAR_AGGREGATES: dict[Kind, tuple[tuple[str, Kind], ...]] = {
    "int": (
        ("COUNT(*)", "int"),
        ("COUNT({x})", "int"),
        ("SUM({x})", "int"),
        ("MIN({x})", "int"),
        ("MAX({x})", "int"),
        ("AVG({x})", "int"),
    ),
    "str": (("COUNT({x})", "int"), ("MIN({x})", "str"), ("MAX({x})", "str")),
}
OUTER_JOINS = ("LEFT JOIN", "LEFT OUTER JOIN", "RIGHT JOIN", "FULL OUTER JOIN", "FULL JOIN")


class SubqueryViewBuilder(ViewBuilder):
    """Draws a view with subqueries or outer joins (issue 24) over the base tables, each
    occurrence aliased and every column qualified (a bare name in a subquery would bind to
    its own FROM first, SQL's rule; qualified, the intent is plain):

    - ``WHERE`` conjuncts ``[NOT] EXISTS (...)`` (now and then with a subquery of its own),
      ``x [NOT] IN (SELECT y ...)`` (now and then over an aggregate, uncorrelated) and
      comparisons with scalar subqueries, now and then under ``OR``, and such predicates as
      values of the select list;
    - scalar subqueries (``COUNT(*)``, ``COUNT``, ``SUM``, ``MIN``, ``MAX``, ``AVG``) in the
      select list, and an uncorrelated one in ``HAVING``;
    - correlation by equalities (``=``, ``<=>``), by other comparisons, by a condition on
      the outer row alone besides, or none;
    - ``LEFT``/``RIGHT``/``FULL`` outer joins with extra ``ON`` conditions (over one side or
      both), chains of them, an aggregate above them (``COUNT`` of a padded column), and
      ``LEFT SEMI`` / ``LEFT ANTI`` joins.
    """

    def render_ref(self, scope: Sequence[Source], source: Source, column: Column) -> str:
        return column.name if source.qualifier is None else f"{source.qualifier}.{column.name}"

    def source(self, prefix: str) -> tuple[str, Source]:
        table = self.pick(TABLES)
        alias = self.fresh(prefix)
        return f"{table.name} AS {alias}", Source(alias, table.columns)

    def items(self, scope: Sequence[Source]) -> list[str]:
        """One to three columns of ``scope`` (or expressions over them), aliased ``x<n>``."""
        items = []
        for _ in range(self.draw(st.integers(1, 3))):
            kind: Kind = self.pick(["int", "int", "str"])
            ref = self.column_ref(scope, kind)
            text = ref[0] if ref is not None and not self.chance(0.2) else self.expr(scope, kind)
            items.append(f"{text} AS {self.fresh('x')}")
        return items

    def correlation(self, inner: Source, outer: Sequence[Source]) -> list[str]:
        """The conditions of a subquery's WHERE: a correlation with ``outer`` (an equality,
        another comparison, an equality and a condition on the outer row alone, or none),
        and now and then a condition on ``inner`` alone."""
        style = self.pick(["equi", "equi", "equi_and_outer", "none", "other", "other"])
        self.took(f"correlation: {style}")
        pairs = [
            (ic, source, oc)
            for ic in inner.columns
            for source in outer
            for oc in source.columns
            if ic.kind == oc.kind
        ]
        conditions = []
        if style != "none" and pairs:
            ic, source, oc = self.pick(pairs)
            left, right = f"{inner.qualifier}.{ic.name}", f"{source.qualifier}.{oc.name}"
            if style == "other":
                op = self.pick(["<", "<>", ">="])
            else:
                op = "<=>" if self.chance(0.2) else "="
            conditions.append(f"{left} {op} {right}")
        if style == "equi_and_outer":
            conditions.append(self.pred(outer))
        if self.chance(0.5):
            conditions.append(self.pred([inner]))
        return conditions

    def where(self, conditions: list[str]) -> str:
        return " WHERE " + " AND ".join(f"({c})" for c in conditions) if conditions else ""

    def scalar_subquery(self, outer: Sequence[Source], correlated: bool = True) -> tuple[str, Kind]:
        """A scalar subquery (one aggregate) and its result's kind."""
        text, inner = self.source("i")
        kind: Kind = self.pick(["int", "int", "str"])
        call, result = self.pick(SCALAR_AGGREGATES[kind])
        argument = self.expr([inner], kind, 1)
        self.took(f"scalar: {call.partition('(')[0]}")
        value = call.format(x=argument)
        if self.chance(0.15) and result == "int":
            value = f"coalesce({value}, 0) + 1"  # an expression of the aggregate
        conditions = self.correlation(inner, outer) if correlated else [self.pred([inner])]
        return f"(SELECT {value} FROM {text}{self.where(conditions)})", result

    def subquery_predicate(self, outer: Sequence[Source]) -> str:
        """``[NOT] EXISTS``, ``[NOT] IN`` or a comparison with a scalar subquery."""
        kind = self.pick(["EXISTS", "NOT EXISTS", "IN", "NOT IN", "scalar"])
        self.took(f"subquery: {kind}")
        if kind == "scalar":
            subquery, result = self.scalar_subquery(outer)
            ref = self.column_ref(outer, result)
            if ref is None or self.chance(0.2):
                return f"{subquery} IS NULL"
            return f"{ref[0]} {self.pick(['<', '>=', '=', '<>'])} {subquery}"
        text, inner = self.source("i")
        if kind.endswith("EXISTS"):
            conditions = self.correlation(inner, outer)
            if self.chance(0.2):  # a subquery in the subquery, correlated with its rows
                self.took("nested subquery")
                conditions.append(self.subquery_predicate([inner]))
            return f"{kind} (SELECT {self.pick(['1', '*'])} FROM {text}{self.where(conditions)})"
        value_kind: Kind = self.pick([c.kind for c in inner.columns])
        needle = self.column_ref(outer, value_kind)
        if needle is None:
            needle = (self.literal(value_kind), Column("", value_kind))
        if self.chance(0.15):  # uncorrelated, over an aggregate
            self.took("IN over an aggregate")
            group = self.column_ref([inner], None)
            assert group is not None
            call = "MAX" if self.chance(0.5) else "MIN"
            value = f"{call}({self.expr([inner], value_kind, 1)})"
            return f"{needle[0]} {kind} (SELECT {value} FROM {text} GROUP BY {group[0]})"
        value = self.expr([inner], value_kind, 1)
        conditions = self.correlation(inner, outer)
        return f"{needle[0]} {kind} (SELECT {value} FROM {text}{self.where(conditions)})"

    def filtered_view(self) -> View:
        """``SELECT ... FROM one or two tables WHERE`` conjuncts with subqueries."""
        first, source = self.source("o")
        scope = [source]
        text = first
        if self.chance(0.3):
            second, other = self.source("o")
            text += f" JOIN {second} ON {self.join_condition(scope, other, [source, other])}"
            scope.append(other)
        conditions = [self.subquery_predicate(scope) for _ in range(self.pick([1, 1, 2]))]
        if self.chance(0.25):  # a subquery under OR: a mark join
            self.took("subquery under OR")
            conditions[-1] = f"{self.pred(scope)} OR {conditions[-1]}"
        if self.chance(0.4):
            conditions.insert(0, self.pred(scope))
        distinct = "DISTINCT " if self.chance(0.15) else ""
        return View(
            f"SELECT {distinct}{', '.join(self.items(scope))} FROM {text}{self.where(conditions)}"
        )

    def selected_view(self) -> View:
        """Scalar subqueries in the select list."""
        first, source = self.source("o")
        items = self.items([source])
        for _ in range(self.pick([1, 1, 2])):
            self.took("scalar in the select list")
            subquery, _ = self.scalar_subquery([source], correlated=not self.chance(0.2))
            items.append(f"{subquery} AS {self.fresh('x')}")
        if self.chance(0.3):  # a predicate's value: a mark join
            self.took("predicate subquery in the select list")
            items.append(f"{self.subquery_predicate([source])} AS {self.fresh('x')}")
        conditions = [self.pred([source])] if self.chance(0.3) else []
        return View(f"SELECT {', '.join(items)} FROM {first}{self.where(conditions)}")

    def having_view(self) -> View:
        """An aggregate with an uncorrelated scalar subquery in HAVING."""
        self.took("scalar in HAVING")
        first, source = self.source("o")
        group = self.column_ref([source], None)
        assert group is not None
        subquery, result = self.scalar_subquery([], correlated=False)
        if result == "str":
            subquery = f"coalesce(length({subquery}), 0)"
        return View(
            f"SELECT {group[0]} AS k, COUNT(*) AS n FROM {first} GROUP BY {group[0]}"
            f" HAVING COUNT(*) * 2 >= {subquery}"
        )

    def outer_join_view(self) -> View:
        """A chain of one or two joins, at least one outer, with extra ON conditions now and
        then; sometimes an aggregate above (``COUNT`` of a column padded with NULLs)."""
        first, source = self.source("o")
        scope = [source]
        text = first
        for index in range(self.pick([1, 1, 2])):
            item, other = self.source("o")
            keyword = self.pick(OUTER_JOINS) if index == 0 or self.chance(0.5) else "JOIN"
            self.took(f"join: {keyword.replace(' OUTER', '')}")
            condition = self.join_condition(scope, other, [*scope, other])
            if self.chance(0.4):
                self.took("outer join: extra ON condition")
                condition = (
                    f"{condition} AND {self.pred(self.pick([[other], scope, [*scope, other]]))}"
                )
            text += f" {keyword} {item} ON {condition}"
            scope.append(other)
        if index == 1:
            self.took("outer join: chain")
        if self.chance(0.35):
            self.took("outer join: aggregate above")
            key = self.column_ref(scope[:1], None)
            counted = self.column_ref(scope[1:], None)
            assert key is not None and counted is not None
            return View(
                f"SELECT {key[0]} AS k, COUNT({counted[0]}) AS n, COUNT(*) AS m FROM {text}"
                f" GROUP BY {key[0]}"
            )
        conditions = [self.pred(scope)] if self.chance(0.3) else []
        return View(f"SELECT {', '.join(self.items(scope))} FROM {text}{self.where(conditions)}")

    def semi_view(self) -> View:
        """``LEFT SEMI JOIN`` / ``LEFT ANTI JOIN``: the left side's columns only."""
        first, source = self.source("o")
        item, other = self.source("o")
        keyword = self.pick(["LEFT SEMI JOIN", "LEFT ANTI JOIN"])
        self.took(f"join: {keyword}")
        condition = self.join_condition([source], other, [source, other])
        return View(
            f"SELECT {', '.join(self.items([source]))} FROM {first} {keyword} {item} ON {condition}"
        )

    def view(self) -> View:
        shape = self.pick(["filter", "filter", "select", "outer", "outer", "semi", "having"])
        if shape == "filter":
            drawn = self.filtered_view()
        elif shape == "select":
            drawn = self.selected_view()
        elif shape == "outer":
            drawn = self.outer_join_view()
        elif shape == "semi":
            drawn = self.semi_view()
        else:
            drawn = self.having_view()
        return View(drawn.query, branches=frozenset(self.branches))


@st.composite
def subquery_views(draw: Draw) -> View:
    return SubqueryViewBuilder(draw).view()


@dataclass(frozen=True)
class View:
    query: str
    column_names: tuple[str, ...] = ()  # CREATE MATERIALIZED VIEW v (n0, n1, ...) when set
    # The generator's branches the query took (``ViewBuilder.took``); not part of its value.
    branches: frozenset[str] = field(default=frozenset(), compare=False)

    def create(self, name: str, policy: str = "") -> str:
        columns = f" ({', '.join(self.column_names)})" if self.column_names else ""
        refresh = f" REFRESH {policy}" if policy else ""
        return f"CREATE MATERIALIZED VIEW {name}{columns}{refresh} AS {self.query}"

    def tables(self) -> list[Table]:
        """The base tables the query reads."""
        names = set(re.findall(r"(?:FROM|JOIN|,) (\w+)\b(?![.(])", self.query))
        return [table for table in TABLES if table.name in names]


@st.composite
def views(draw: Draw, features: frozenset[str] = FEATURES) -> View:
    return ViewBuilder(draw, features).view()


# ---- writes ------------------------------------------------------------------------------
def _single_table_scope(table: Table) -> list[Source]:
    return [Source(None, table.columns)]


@st.composite
def writes(draw: Draw, table: Table) -> str:
    """One statement that changes ``table``: its rows, predicates and values at random."""
    builder = ViewBuilder(draw)
    scope = _single_table_scope(table)
    kind = draw(
        st.sampled_from(["insert"] * 4 + ["delete"] * 3 + ["update"] * 3 + ["merge", "copy"])
    )
    if kind == "insert":
        rows = draw(rows_of(table, min_size=1, max_size=3))
        return f"INSERT INTO {table.name} VALUES {values_clause(table, rows)}"
    if kind == "copy":  # duplicates of existing rows
        return f"INSERT INTO {table.name} SELECT * FROM {table.name} WHERE {builder.pred(scope)}"
    if kind == "delete":
        return f"DELETE FROM {table.name} WHERE {builder.pred(scope)}"
    if kind == "update":
        targets = draw(
            st.lists(st.sampled_from(table.columns), min_size=1, max_size=2, unique=True)
        )
        sets = ", ".join(f"{c.name} = {builder.expr(scope, c.kind)}" for c in targets)
        where = f" WHERE {builder.pred(scope)}" if not builder.chance(0.15) else ""
        return f"UPDATE {table.name} SET {sets}{where}"
    # MERGE with a source of distinct keys (a target row never matches two source rows).
    key = next(c for c in table.columns if c.kind == "int")
    other = next(c for c in table.columns if c != key)
    keys = draw(st.lists(st.sampled_from(INTS), min_size=1, max_size=3, unique=True))
    values = [draw(values_of(other.kind)) for _ in keys]
    pairs = {key.name: keys, other.name: values}
    names = [c.name for c in table.columns]
    rows = ", ".join(
        "(" + ", ".join(_typed_lit(c.kind, pairs[c.name][i]) for c in table.columns) + ")"
        for i in range(len(keys))
    )
    source = f"(SELECT * FROM VALUES {rows} AS m({', '.join(names)})) AS src"
    matched = draw(st.sampled_from(["update", "delete", "update_or_delete"]))
    clauses = []
    if matched in ("update", "update_or_delete"):
        condition = f" AND src.{other.name} IS NOT NULL" if matched == "update_or_delete" else ""
        clauses.append(f"WHEN MATCHED{condition} THEN UPDATE SET {other.name} = src.{other.name}")
    if matched in ("delete", "update_or_delete"):
        clauses.append("WHEN MATCHED THEN DELETE")
    if draw(st.booleans()):
        cols = ", ".join(names)
        clauses.append(
            f"WHEN NOT MATCHED THEN INSERT ({cols}) VALUES ({', '.join('src.' + n for n in names)})"
        )
    return (
        f"MERGE INTO {table.name} USING {source} ON {table.name}.{key.name} = src.{key.name} "
        + " ".join(clauses)
    )


@st.composite
def batches(draw: Draw, read: Sequence[Table] = TABLES) -> list[str]:
    """The writes between two refreshes: none now and then, else one to three, mostly to the
    tables in ``read`` (those the view reads; a write to another one changes nothing)."""
    count = draw(st.sampled_from([1, 1, 2, 2, 3, 0]))  # hypothesis favours the first ones
    tables = st.one_of(*[st.sampled_from(list(read) or TABLES)] * 5, st.sampled_from(TABLES))
    return [draw(writes(draw(tables))) for _ in range(count)]


@dataclass
class Step:
    writes: list[str]
    refresh_again: bool  # a second refresh with no change in between


@dataclass
class Scenario:
    """The tables with their first rows, the view, and the stream of write batches."""

    setup: list[str]  # CREATE TABLE r, s, t
    view: View
    steps: list[Step] = field(default_factory=list)
    storage: dict[str, str] = field(default_factory=dict)  # session confs of the view's storage

    def script(self, name: str = "v") -> str:
        """The whole scenario as a SQL script (printed on failure: it reproduces the case)."""
        lines = [f"SET {key} = {value};" for key, value in self.storage.items()]
        lines += [s + ";" for s in self.setup]
        lines.append(self.view.create(name) + ";")
        for step in self.steps:
            lines += [w + ";" for w in step.writes]
            lines.append(f"REFRESH MATERIALIZED VIEW {name};")
            if step.refresh_again:
                lines.append(f"REFRESH MATERIALIZED VIEW {name};")
        return "\n".join(lines)


@st.composite
def scenarios(draw: Draw, view: st.SearchStrategy[View] | None = None) -> Scenario:
    setup = [table.ddl(draw(rows_of(table, max_size=5))) for table in TABLES]
    chosen = draw(view if view is not None else views())
    read = chosen.tables()
    steps = [
        Step(draw(batches(read)), draw(st.integers(0, 99)) >= 80)
        for _ in range(draw(st.integers(1, 3)))
    ]
    return Scenario(setup, chosen, steps, draw(storage_confs()))


@st.composite
def storage_confs(draw: Draw) -> dict[str, str]:
    """How the view is stored: 1-4 buckets, and half the time every touched bucket patched
    (merge-on-read; views this small are otherwise rewritten), its mask compacted at the
    default share or never."""
    confs = {STORAGE_BUCKETS_CONF: str(draw(st.integers(1, 4)))}
    if draw(st.booleans()):
        confs[STORAGE_PATCH_MIN_ROWS.key] = "0"
        confs[STORAGE_MAX_MASKED_SHARE.key] = draw(st.sampled_from(["1", "0.25"]))
    return confs
