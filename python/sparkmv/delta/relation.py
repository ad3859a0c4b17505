"""Z-sets as Spark SQL text: how the delta rules compose a view's value and change.

A ``Relation`` is a Z-set (its columns and the weight ``WEIGHT``) given as a Spark
SQL query over temporary views of one refresh's inputs — or as a DataFrame. The rules of
select, project, join and union compose SQL text (a term of a join's change is one
``SELECT … FROM (…) JOIN (…) ON …``), so that the whole change of a view is analyzed by
Spark once, from one ``spark.sql`` call. Built with PySpark's DataFrame API instead, every
column, alias and join is a py4j round trip and an analysis of the plan built so far: a
refresh of a 32-table view cost 12,000 round trips, most of its time.

A rule that must compute a Z-set now (the keys of the groups a change touches, a DISTINCT's
consolidated change: each read twice, ``zset.materialized``) reads ``frame``; its result
becomes SQL again as a temporary view. The views are registered under names no user picks
(``__sparkmv_<hex>_<n>``) and dropped when the engine closes: a DataFrame built from them keeps
their plans (Spark inlines a temporary view when it analyzes a query), so it outlives them.
"""

from __future__ import annotations

import itertools
import uuid

from pyspark.sql import DataFrame, SparkSession

from sparkmv import frames
from sparkmv.identifiers import quote_identifier
from sparkmv.zset import WEIGHT

WEIGHT_SQL = quote_identifier(WEIGHT)


class TempViews:
    """The temporary views one engine registered, each DataFrame once."""

    _prefixes = itertools.count()

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._prefix = f"__sparkmv_{uuid.uuid4().hex[:12]}_{next(self._prefixes)}"
        self._names: dict[int, tuple[DataFrame, str]] = {}  # by id of the DataFrame kept

    def name_of(self, frame: DataFrame) -> str:
        """The (quoted) name of a temporary view of ``frame``."""
        known = self._names.get(id(frame))
        if known is None:
            name = f"{self._prefix}_{len(self._names)}"
            frame.createOrReplaceTempView(name)
            known = (frame, name)
            self._names[id(frame)] = known
        return quote_identifier(known[1])

    def drop(self) -> None:
        if not self._names:
            return
        # None of these views is cached itself, but a cached input's plan may be under one.
        frames.drop_temp_views(self.spark, [name for _, name in self._names.values()])
        self._names.clear()


class Relation:
    """A Z-set as a Spark SQL query (``sql``) or a DataFrame (``frame``), either made from
    the other when first asked for."""

    def __init__(
        self, views: TempViews, sql: str | None = None, frame: DataFrame | None = None
    ) -> None:
        if sql is None and frame is None:
            raise ValueError("a relation needs a query or a DataFrame")
        self._views = views
        self._sql = sql
        self._frame = frame

    @property
    def sql(self) -> str:
        """A query whose rows are this Z-set's (columns, then ``WEIGHT``)."""
        if self._sql is None:
            assert self._frame is not None
            self._sql = f"SELECT * FROM {self._views.name_of(self._frame)}"
        return self._sql

    @property
    def frame(self) -> DataFrame:
        if self._frame is None:
            assert self._sql is not None
            self._frame = frames.sql(self._views.spark, self._sql)
        return self._frame

    def subquery(self, alias: str) -> str:
        """This relation in a FROM clause, as ``alias``."""
        return f"({self.sql}) AS {quote_identifier(alias)}"


def renamed_sql(relation: Relation, sources: tuple[str, ...], outputs: tuple[str, ...]) -> str:
    """``relation``'s columns ``sources`` renamed to ``outputs`` (positionally), then the weight."""
    return f"SELECT {renamed(sources, outputs)}, {WEIGHT_SQL} FROM {relation.subquery('r')}"


def renamed(sources: tuple[str, ...], outputs: tuple[str, ...]) -> str:
    """A select list of the columns ``sources`` named ``outputs`` (positionally)."""
    pairs = zip(sources, outputs, strict=True)
    return ", ".join(f"{quote_identifier(s)} AS {quote_identifier(o)}" for s, o in pairs)


def consolidated_sql(relation: Relation, columns: list[str]) -> str:
    """``zset.consolidate`` in SQL: equal rows grouped, weights summed, zero sums dropped."""
    return consolidated_from(relation.subquery("c"), columns)


def consolidated_from(source: str, columns: list[str]) -> str:
    """``consolidated_sql`` of the FROM item ``source`` (its ``columns`` and the weight)."""
    names = ", ".join(quote_identifier(c) for c in columns)
    total = f"SUM({WEIGHT_SQL})"
    selected = f"{names}, {total}" if columns else total
    grouped = f" GROUP BY {names}" if columns else ""
    return f"SELECT {selected} AS {WEIGHT_SQL} FROM {source}{grouped} HAVING {total} <> 0"


def net_change(logged: DataFrame, read: set[str] | None, as_logged: bool = False) -> DataFrame:
    """A base table's net change ΔR from its ``logged`` rows (a Z-set): consolidated, with
    the columns the view does not read (``read``; None: all are read) set to NULL first, so
    that an update's pre- and post-image that differ only there cancel (a readily ignorable
    update, Hanson §1 after Buneman–Clemons). One SQL statement.

    ``as_logged``: not consolidated, because no two logged rows can cancel (every one weighs
    +1, ``VersionedChanges.inserts_only``) or because the view sums its change
    (``aggregate_view.sums_its_change``). The delta rules are exact over any representation
    of a Z-set (``delta/engine.py``); consolidating would only merge equal copies or cancel
    rows that add zero anyway, at the cost of a shuffle in the refresh's job. The unread
    columns are NULL either way (the rules read ``R_old`` with them NULL)."""
    spark = logged.sparkSession
    wanted = None if read is None else {name.lower() for name in read}  # names ignore case
    fields = [field for field in logged.schema.fields if field.name != WEIGHT]
    columns = [
        quote_identifier(field.name)
        if wanted is None or field.name.lower() in wanted
        else f"CAST(NULL AS {field.dataType.simpleString()}) AS {quote_identifier(field.name)}"
        for field in fields
    ]
    if as_logged:
        every = wanted is None or all(field.name.lower() in wanted for field in fields)
        return logged if every else frames.select(logged, [*columns, WEIGHT_SQL])
    views = TempViews(spark)
    try:
        selected = ", ".join([*columns, WEIGHT_SQL])
        rows = Relation(views, sql=f"SELECT {selected} FROM {views.name_of(logged)}")
        return frames.sql(spark, consolidated_sql(rows, [field.name for field in fields]))
    finally:
        views.drop()
