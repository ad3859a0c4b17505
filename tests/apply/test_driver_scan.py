"""``driver_scan.rows_hit``: the stored rows a change hits, found by the driver, equal the
rows a probe matches on its columns, NULL equal to NULL, each with its position."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sparkmv import decoded_files
from sparkmv.apply import driver_scan
from sparkmv.apply.snapshot import FILE_COLUMN, ROW_COLUMN
from sparkmv.stored_columns import BUCKET_COLUMN

STORED = pa.schema([("c0", pa.int32()), ("c1", pa.string()), ("c2", pa.decimal128(12, 2))])
SCHEMA = pa.schema(
    [*STORED, (BUCKET_COLUMN, pa.int32()), (FILE_COLUMN, pa.string()), (ROW_COLUMN, pa.int64())]
)

Row = tuple[int | None, str | None, Decimal | None]

rows = st.tuples(
    st.one_of(st.none(), st.integers(0, 3)),
    st.one_of(st.none(), st.sampled_from(["a", "b", ""])),
    st.one_of(st.none(), st.sampled_from([Decimal("0.00"), Decimal("1.50")])),
)


def write_files(directory: Path, files: list[list[Row]]) -> dict[int, list[str]]:
    """Each list of rows as one parquet file, of bucket ``i % 2``."""
    names: dict[int, list[str]] = {}
    for i, stored in enumerate(files):
        bucket = i % 2
        (directory / f"{BUCKET_COLUMN}={bucket}").mkdir(exist_ok=True)
        name = f"part-{i}.parquet"
        table = pa.Table.from_pylist(
            [dict(zip(STORED.names, r, strict=True)) for r in stored], schema=STORED
        )
        # several row groups: a file's rows come in several chunks
        pq.write_table(table, directory / f"{BUCKET_COLUMN}={bucket}" / name, row_group_size=5)
        names.setdefault(bucket, []).append(name)
    return names


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(st.lists(rows, max_size=12), min_size=1, max_size=4),
    probes=st.lists(rows, max_size=6),
    columns=st.sampled_from([["c0"], ["c1"], ["c0", "c1"], ["c0", "c1", "c2"], ["c2", "c0"]]),
)
def test_the_rows_a_probe_matches_are_found_with_their_positions(
    tmp_path_factory: object, files: list[list[Row]], probes: list[Row], columns: list[str]
) -> None:
    directory = tmp_path_factory.mktemp("snapshot")  # type: ignore[attr-defined]
    names = write_files(directory, files)
    index = [STORED.names.index(c) for c in columns]
    probe_table = pa.table(
        [pa.array([p[i] for p in probes], STORED.field(i).type) for i in index], columns
    )
    found = driver_scan.rows_hit(str(directory), names, probe_table, SCHEMA)
    assert found.schema == SCHEMA
    wanted = {tuple(p[i] for i in index) for p in probes}
    expected = sorted(
        (
            (*row, i % 2, f"part-{i}.parquet", position)
            for i, stored in enumerate(files)
            for position, row in enumerate(stored)
            if tuple(row[i] for i in index) in wanted
        ),
        key=repr,
    )
    assert sorted((tuple(r.values()) for r in found.to_pylist()), key=repr) == expected


def test_a_stored_file_is_decoded_once_and_known_through_its_hard_links(tmp_path: Path) -> None:
    """A later snapshot hard-links the files it keeps: the same file, not read again. A
    copy is another file; past the bound the least recently used is dropped."""
    for snapshot in ("one", "two", "three"):
        (tmp_path / snapshot).mkdir()
    first = write_files(tmp_path / "one", [[(1, "a", None), (2, None, Decimal("1.50"))]])
    other = write_files(tmp_path / "two", [[], [(3, "c", Decimal("0.00"))]])
    stored = tmp_path / "one" / f"{BUCKET_COLUMN}=0" / first[0][0]
    linked = tmp_path / "three" / first[0][0]
    linked.hardlink_to(stored)
    copied = tmp_path / "three" / "part-copied.parquet"
    copied.write_bytes(stored.read_bytes())
    cache = decoded_files.StoredFiles(max_bytes=1 << 20)
    table = cache.read(str(stored), STORED)
    assert table.to_pylist() == [
        {"c0": 1, "c1": "a", "c2": None},
        {"c0": 2, "c1": None, "c2": Decimal("1.50")},
    ]
    assert cache.read(str(linked), STORED) is table
    assert cache.read(str(copied), STORED) is not table  # another file, equal rows
    small = decoded_files.StoredFiles(max_bytes=table.nbytes)
    table = small.read(str(stored), STORED)
    assert small.read(str(linked), STORED) is table
    third = small.read(str(tmp_path / "two" / f"{BUCKET_COLUMN}=1" / other[1][0]), STORED)
    assert third.to_pylist() == [{"c0": 3, "c1": "c", "c2": Decimal("0.00")}]
    assert small.read(str(stored), STORED) is not table  # dropped for the third
