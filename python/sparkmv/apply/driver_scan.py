"""The stored rows a change hits, found by the driver in a local snapshot's files.

A patch finds, in each bucket it patches, the stored rows equal to a row of ΔV on the
merge's key columns, with their positions (file name, row index) for the new snapshot's
mask. Spark finds them with a job that reads and hashes every stored row of those buckets;
its statement's planning and its scheduling cost about as much again. When the snapshot is
on a file system the driver reads and the buckets are small (the caller decides), the
driver reads their files itself with pyarrow, whose reader decodes the columns several times
faster than that job's scan, and keeps the rows a probe matches:

    hits = { (r, file, i) : r the i-th row of a file of the buckets, r[K] ∈ probes }

where ``K`` are the probes' columns and ``∈`` compares NULL equal to NULL (the merge's
``GROUP BY`` equality). Only columns whose values compare exactly may be probed
(``zset.EXACT_TYPES``: equal values, equal representations); the caller leaves the others
out, which makes the hits a superset, as the key hashes' are.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from sparkmv.apply.snapshot import FILE_COLUMN
from sparkmv.decoded_files import decoded, read_in_parallel
from sparkmv.stored_columns import BUCKET_COLUMN


def rows_hit(
    directory: str, files: dict[int, list[str]], probes: pa.Table, schema: pa.Schema
) -> pa.Table:
    """The rows of the parquet ``files`` (names per bucket, under ``directory``'s
    ``mv_bucket=k/``) equal to a row of ``probes`` on every column of ``probes``, NULL equal
    to NULL. ``schema``: the stored columns (``probes``' among them, of the same types),
    then ``BUCKET_COLUMN``, ``FILE_COLUMN`` and ``ROW_COLUMN`` (the row's index in its
    file); the rows come in it.

    The files are read in parallel, each narrowed at once to the rows whose value in the
    probes' most varied column is a probe's (``is_in``: a hash set of the probes' values);
    with several columns, those candidates are then matched whole (``_matching``)."""
    if not probes.num_rows:
        return schema.empty_table()
    first, *others = sorted(
        probes.column_names, key=lambda column: -pc.count_distinct(probes[column]).as_py()
    )
    located = [(bucket, name) for bucket, names in sorted(files.items()) for name in sorted(names)]
    values = probes[first].combine_chunks()

    def candidates(file: tuple[int, str]) -> pa.Table:
        bucket, name = file
        return _candidates(directory, bucket, name, first, values, schema)

    parts = read_in_parallel(located, candidates)
    hits = pa.concat_tables([schema.empty_table(), *parts])
    return _matching(hits, probes) if others else hits


def _candidates(
    directory: str, bucket: int, name: str, column: str, values: pa.Array, schema: pa.Schema
) -> pa.Table:
    """The rows of one file (``name``, of ``bucket``) whose ``column`` holds one of
    ``values`` (NULL one of them when ``values`` has NULL), in ``schema``: with their
    bucket, this file's name and their index in it."""
    stored = pa.schema(list(schema)[:-3])
    table = decoded(os.path.join(directory, f"{BUCKET_COLUMN}={bucket}", name), stored)
    wanted = pc.is_in(table[column], value_set=values, skip_nulls=False)
    rows = pc.cast(pc.indices_nonzero(wanted), pa.int64())
    found = table.take(rows)
    count = found.num_rows
    return pa.table(
        [
            *found.columns,
            pa.repeat(pa.scalar(bucket, schema.field(BUCKET_COLUMN).type), count),
            pa.repeat(pa.scalar(name, schema.field(FILE_COLUMN).type), count),
            rows,
        ],
        schema=schema,
    )


def _matching(rows: pa.Table, probes: pa.Table) -> pa.Table:
    """The ``rows`` equal to a row of ``probes`` on all its columns, NULL equal to NULL:
    each column's values of both sides encoded by one dictionary (NULL its own entry), the
    codes joined."""
    if not rows.num_rows:
        return rows
    codes = []
    for column in probes.column_names:
        values = pa.concat_arrays([*rows[column].chunks, *probes[column].chunks])
        codes.append(pc.dictionary_encode(values, null_encoding="encode").indices)
    names = [f"k{i}" for i in range(len(codes))]
    at = pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), rows.num_rows))
    left = pa.table([*(c.slice(0, rows.num_rows) for c in codes), at], [*names, "at"])
    right = pa.table([c.slice(rows.num_rows) for c in codes], names)
    matched = left.join(right, keys=names, join_type="left semi")["at"]
    return rows.take(pc.subtract(matched, 1))
