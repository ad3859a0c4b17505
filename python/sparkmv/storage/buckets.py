"""The storage bucket of a row: Spark's ``xxhash64`` of its key columns, modulo the buckets.

A bucketed snapshot keeps each row in directory ``mv_bucket=k`` with

    k = pmod(xxhash64(key columns of EXACT_TYPES), buckets)     (0 when none is hashable)

computed by Spark for every row it writes (``bucket_sql``): a full refresh's snapshot, a
refresh's ΔV, its merged rows. Only the exactly comparable types are hashed, so rows equal
on the key columns (as a merge compares them) always share a bucket.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from sparkmv.identifiers import quote_identifier
from sparkmv.zset import EXACT_TYPES


def key_hash_sql(schema: T.StructType, columns: Sequence[str]) -> str | None:
    """SQL for a 64-bit hash of a row's ``columns`` of hashable types (rows equal on
    ``columns`` hash equally); None when none of them is hashable."""
    hashed = hashed_columns(schema, columns)
    return f"xxhash64({', '.join(map(quote_identifier, hashed))})" if hashed else None


def bucket_sql(schema: T.StructType, columns: Sequence[str], buckets: int) -> str:
    """SQL for the bucket of a row of ``schema``: the ``key_hash_sql`` of its ``columns``
    modulo ``buckets`` (0 when none of them is hashable)."""
    hashed = key_hash_sql(schema, columns)
    return "CAST(0 AS INT)" if hashed is None else f"CAST(pmod({hashed}, {buckets}) AS INT)"


def hashed_columns(schema: T.StructType, columns: Sequence[str]) -> list[str]:
    """Those of ``columns`` whose type ``key_hash_sql`` hashes (``EXACT_TYPES``)."""
    types = {field.name: field.dataType for field in schema.fields}
    return [c for c in columns if isinstance(types[c], EXACT_TYPES)]
