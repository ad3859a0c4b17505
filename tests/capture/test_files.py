"""Where copy-on-write keeps a table's versions (``capture/files.py``): which directories are
version directories, which a retired file's removal may take with it."""

from __future__ import annotations

import pytest
from sparkmv.capture.files import unit_base, version_dir_of

ROOT = "file:/w/db.db/t"


@pytest.mark.parametrize(
    ("path", "directory"),
    [
        (f"{ROOT}/_sparkmv_0123456789ab/part-0.parquet", f"{ROOT}/_sparkmv_0123456789ab"),
        (f"{ROOT}/_sparkmv_0a1b/p=1/q=x/part-0.parquet", f"{ROOT}/_sparkmv_0a1b"),
        (f"{ROOT}/part-0.parquet", None),  # never written copy-on-write
        (f"{ROOT}/p=1/part-0.parquet", None),
        (f"{ROOT}/_sparkmv_0a1b/nested/part-0.parquet", None),  # not a partition directory
        ("file:/w/_sparkmv_logs/db/t-1a2b/preserved/9f/000000-part-0.parquet", None),  # a link
        ("file:/w/_sparkmv_logs/db/p=1/part-0.parquet", None),
        (f"{ROOT}/_sparkmv_staging-0a1b/part-0.parquet", None),
        (f"{ROOT}/_sparkmv_empty-0a1b/part-0.parquet", None),
    ],
)
def test_a_retired_files_version_directory(path: str, directory: str | None) -> None:
    assert version_dir_of(path) == directory


def test_a_tables_root_is_its_location_above_a_version_directory() -> None:
    assert unit_base(f"{ROOT}/_sparkmv_0123456789ab/") == ROOT
    assert unit_base(ROOT) == ROOT
    assert unit_base("file:/w/_sparkmv_logs") == "file:/w/_sparkmv_logs"
