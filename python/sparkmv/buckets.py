"""The storage bucket of a row: Spark's ``xxhash64`` of its key columns, modulo the buckets.

A bucketed snapshot keeps each row in directory ``mv_bucket=k`` with

    k = pmod(xxhash64(key columns of EXACT_TYPES), buckets)     (0 when none is hashable)

Spark computes it for the rows it writes (``bucket_sql``); the driver, for the rows it writes
itself (``bucket_of``), with the same function: Spark's ``XxHash64`` (seed 42), which hashes
each non-NULL value in turn into the running hash (a NULL leaves it as it is) as

    BOOLEAN                 the INT 1 or 0
    TINYINT/SMALLINT/INT    its 4 bytes, little-endian;  DATE: its days since the epoch so
    BIGINT                  its 8 bytes
    DECIMAL(p, s)           p ≤ 18: the BIGINT of its unscaled value; else the unscaled
                            value's two's-complement bytes, big-endian, fewest (Java's
                            ``BigInteger.toByteArray``)
    STRING (binary), BINARY its bytes (UTF-8)

each by XXH64 (Collet's xxHash, 64 bits) seeded with the hash so far. Timestamps (hashed as
their microseconds) are not computed here: ``bucket_of`` refuses what it does not compute.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from sparkmv.parse.statements import quote_identifier
from sparkmv.zset import EXACT_TYPES

SEED = 42
_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_MAX_LONG_DIGITS = 18
_EPOCH = datetime.date(1970, 1, 1)


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


class UnhashedTypeError(Exception):
    """A value of a type ``bucket_of`` does not compute Spark's hash of."""


def bucket_of(values: Sequence[object], types: Sequence[T.DataType], buckets: int) -> int:
    """The bucket ``bucket_sql`` gives a row whose hashed columns (``hashed_columns``, in
    order) hold ``values`` of ``types``. Raises ``UnhashedTypeError`` for a timestamp."""
    if not values:
        return 0
    return xxhash64(values, types) % buckets  # Python's % of a positive modulus is pmod


def xxhash64(values: Sequence[object], types: Sequence[T.DataType]) -> int:
    """Spark's ``xxhash64(values…)`` (module docstring), a signed 64-bit integer."""
    hashers = [_hasher(data_type) for data_type in types]
    return _row_hash(values, hashers)


def row_hashes(table: pa.Table, types: Sequence[T.DataType]) -> list[int]:
    """Spark's ``xxhash64`` of each row of ``table``, whose columns hold values of
    ``types`` in order (as ``xxhash64``)."""
    hashers = [_hasher(data_type) for data_type in types]
    columns = [column.to_pylist() for column in table.columns]
    if not columns:
        return [_row_hash((), [])] * table.num_rows
    return [_row_hash(values, hashers) for values in zip(*columns, strict=True)]


_Hasher = Callable[[Any, int], int]
"""A value's hash seeded with the hash so far."""


def _row_hash(values: Sequence[object], hashers: Sequence[_Hasher]) -> int:
    hashed = SEED
    for value, hasher in zip(values, hashers, strict=True):
        if value is not None:
            hashed = hasher(value, hashed)
    return hashed - (1 << 64) if hashed >> 63 else hashed


def _hasher(data_type: T.DataType) -> _Hasher:
    """How a non-NULL value of ``data_type`` is hashed (module docstring)."""
    if isinstance(data_type, T.BooleanType):
        return lambda value, seed: _hash_int(1 if value else 0, seed)
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType)):
        return _hash_int
    if isinstance(data_type, T.DateType):
        return lambda value, seed: _hash_int((value - _EPOCH).days, seed)
    if isinstance(data_type, T.LongType):
        return _hash_long
    if isinstance(data_type, T.DecimalType):
        return partial(_hash_decimal, scale=data_type.scale, precision=data_type.precision)
    if isinstance(data_type, T.StringType):
        return lambda value, seed: _hash_bytes(value.encode(), seed)
    if isinstance(data_type, T.BinaryType):
        return _hash_bytes
    raise UnhashedTypeError(data_type.simpleString())


def _hash_decimal(value: decimal.Decimal, seed: int, scale: int, precision: int) -> int:
    unscaled = int(value.scaleb(scale))
    if precision <= _MAX_LONG_DIGITS:
        return _hash_long(unscaled, seed)
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return _hash_bytes(unscaled.to_bytes(length, "big", signed=True), seed)


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _mix(hashed: int) -> int:
    hashed ^= hashed >> 33
    hashed = (hashed * _P2) & _MASK
    hashed ^= hashed >> 29
    hashed = (hashed * _P3) & _MASK
    return hashed ^ (hashed >> 32)


def _round(accumulated: int, word: int) -> int:
    return (_rotl((accumulated + word * _P2) & _MASK, 31) * _P1) & _MASK


def _hash_int(value: int, seed: int) -> int:
    hashed = (seed + _P5 + 4) & _MASK
    hashed ^= ((value & 0xFFFFFFFF) * _P1) & _MASK
    return _mix((_rotl(hashed, 23) * _P2 + _P3) & _MASK)


def _hash_long(value: int, seed: int) -> int:
    hashed = (seed + _P5 + 8) & _MASK
    hashed ^= _round(0, value & _MASK)
    return _mix((_rotl(hashed, 27) * _P1 + _P4) & _MASK)


def _hash_bytes(data: bytes, seed: int) -> int:
    """XXH64 of ``data`` seeded with ``seed``."""
    length, offset = len(data), 0
    if length >= 32:
        lanes = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK]
        while offset <= length - 32:
            for lane in range(4):
                word = int.from_bytes(data[offset + 8 * lane : offset + 8 * lane + 8], "little")
                lanes[lane] = _round(lanes[lane], word)
            offset += 32
        hashed = (
            _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
        ) & _MASK
        for lane in lanes:
            hashed = ((hashed ^ _round(0, lane)) * _P1 + _P4) & _MASK
    else:
        hashed = (seed + _P5) & _MASK
    hashed = (hashed + length) & _MASK
    while offset <= length - 8:
        hashed ^= _round(0, int.from_bytes(data[offset : offset + 8], "little"))
        hashed = (_rotl(hashed, 27) * _P1 + _P4) & _MASK
        offset += 8
    if offset + 4 <= length:
        hashed ^= (int.from_bytes(data[offset : offset + 4], "little") * _P1) & _MASK
        hashed = (_rotl(hashed, 23) * _P2 + _P3) & _MASK
        offset += 4
    while offset < length:
        hashed ^= (data[offset] * _P5) & _MASK
        hashed = (_rotl(hashed, 11) * _P1) & _MASK
        offset += 1
    return _mix(hashed)
