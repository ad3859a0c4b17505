"""``delta_source.DeltaCommit``: what a refresh reads of one Delta commit file (pure: the
file's JSON lines in, its operation and the bytes its change rows are read from out)."""

from __future__ import annotations

import json
from typing import Any

from sparkmv.capture.delta_source import DeltaCommit


def commit_file(*actions: dict[str, Any]) -> str:
    return "\n".join(json.dumps(action) for action in actions) + "\n"


def data_file(kind: str, size: int | None, data_change: bool = True) -> dict[str, Any]:
    file: dict[str, Any] = {"path": f"part-{kind}-{size}.parquet", "dataChange": data_change}
    if size is not None:
        file["size"] = size
    return {kind: file}


def info(operation: str) -> dict[str, Any]:
    return {"commitInfo": {"operation": operation, "timestamp": 0}}


def test_an_append_reads_its_added_files() -> None:
    text = commit_file(info("WRITE"), data_file("add", 100), data_file("add", 20))
    assert DeltaCommit.parse(3, text, reads_cdc=True) == DeltaCommit(3, "WRITE", 120)


def test_the_change_data_feed_reads_cdc_files_where_the_commit_wrote_some() -> None:
    """A copy-on-write DELETE with the feed on: the removed and rewritten files, and the cdc
    file of the deleted rows, which is all ``table_changes`` reads of it."""
    text = commit_file(
        info("DELETE"), data_file("remove", 100), data_file("add", 90), data_file("cdc", 7)
    )
    assert DeltaCommit.parse(4, text, reads_cdc=True).change_bytes == 7
    assert DeltaCommit.parse(4, text, reads_cdc=False).change_bytes == 190


def test_a_compaction_reads_nothing() -> None:
    text = commit_file(
        info("OPTIMIZE"),
        data_file("remove", 50, data_change=False),
        data_file("remove", 50, data_change=False),
        data_file("add", 95, data_change=False),
    )
    assert DeltaCommit.parse(5, text, reads_cdc=True) == DeltaCommit(5, "OPTIMIZE", 0)


def test_a_file_without_a_size_is_not_guessed() -> None:
    text = commit_file(info("DELETE"), data_file("remove", None))
    assert DeltaCommit.parse(6, text, reads_cdc=True).change_bytes is None


def test_a_commit_without_commit_info_has_no_operation() -> None:
    commit = DeltaCommit.parse(7, commit_file(data_file("add", 10)), reads_cdc=True)
    assert commit == DeltaCommit(7, "", 10)
