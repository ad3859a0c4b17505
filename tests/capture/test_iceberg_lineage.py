"""``iceberg_source.Lineage``: which ranges of sequence numbers an Iceberg table's metadata lets
a refresh read from its changelog scan (pure: Iceberg's metadata JSON in, reasons out)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sparkmv.capture.iceberg_source import Lineage


def snapshot(
    number: int,
    parent: int | None,
    schema: int = 0,
    deletes: int = 0,
    operation: str = "append",
    **sizes: int,
) -> dict[str, Any]:
    """A snapshot of sequence number ``number`` whose id is ``100 + number``; ``sizes``: its
    summary's ``total_files_size`` and the like, spelt with underscores."""
    summary = {"operation": operation, "total-delete-files": str(deletes)}
    summary.update({key.replace("_", "-"): str(value) for key, value in sizes.items()})
    entry: dict[str, Any] = {
        "sequence-number": number,
        "snapshot-id": 100 + number,
        "schema-id": schema,
        "summary": summary,
    }
    if parent is not None:
        entry["parent-snapshot-id"] = 100 + parent
    return entry


def metadata(*snapshots: dict[str, Any]) -> dict[str, Any]:
    """Table metadata whose current snapshot is the last of ``snapshots``."""
    return {
        "format-version": 2,
        "current-snapshot-id": snapshots[-1]["snapshot-id"],
        "snapshots": list(snapshots),
    }


def lineage(found: Lineage | str) -> Lineage:
    assert isinstance(found, Lineage), found
    return found


def test_a_table_without_snapshots_is_at_version_0() -> None:
    empty = lineage(Lineage.of({"format-version": 2, "current-snapshot-id": -1}))
    assert empty.version == 0 and empty.complete


def test_a_chain_of_appends_reads_every_range() -> None:
    chain = lineage(Lineage.of(metadata(snapshot(1, None), snapshot(2, 1), snapshot(3, 2))))
    assert chain.version == 3
    assert all(chain.problem(start, 3) == "" for start in range(3))


def test_a_rolled_back_snapshot_is_no_ancestor() -> None:
    """2 was rolled back to 1, then 3 committed on 1: a view that read 2 reads afresh."""
    rolled = lineage(Lineage.of(metadata(snapshot(1, None), snapshot(2, 1), snapshot(3, 1))))
    assert "no longer an ancestor" in rolled.problem(2, 3)
    assert rolled.problem(1, 3) == ""


def test_expired_snapshots_end_the_lineage() -> None:
    """Snapshots 1 and 2 expired: 3's parent is gone, so nothing before 3 can be read."""
    expired = lineage(Lineage.of(metadata(snapshot(3, 2), snapshot(4, 3))))
    assert not expired.complete
    assert "were expired" in expired.problem(0, 4)
    assert "no longer an ancestor" in expired.problem(2, 4)
    assert expired.problem(3, 4) == ""


def test_delete_files_in_a_range_or_at_its_start_are_refused() -> None:
    mor = lineage(
        Lineage.of(
            metadata(
                snapshot(1, None),
                snapshot(2, 1, deletes=1, operation="delete"),
                snapshot(3, 2, operation="overwrite"),  # removed the file and its deletes
                snapshot(4, 3),
            )
        )
    )
    assert "delete files" in mor.problem(1, 2)
    assert "delete files" in mor.problem(2, 3)  # 3 removed rows of a file 2 has deletes of
    assert mor.problem(3, 4) == ""


def test_a_schema_change_in_a_range_is_refused() -> None:
    evolved = lineage(Lineage.of(metadata(snapshot(1, None), snapshot(2, 1, schema=1))))
    assert "schema changed" in evolved.problem(1, 2)
    assert "schema changed" in evolved.problem(0, 2)
    assert evolved.problem(2, 2) == ""


def test_format_version_1_has_no_versions() -> None:
    found = Lineage.of({"format-version": 1, "snapshots": [], "current-snapshot-id": -1})
    assert isinstance(found, str) and "format-version 1" in found


@given(st.lists(st.booleans(), min_size=1, max_size=8), st.data())
def test_a_range_is_readable_exactly_when_its_snapshots_are_clean(
    deletes: list[bool], data: st.DataObject
) -> None:
    """Over a linear lineage, ``(a, b]`` is readable iff no snapshot of ``[a, b]`` (``a`` only
    when a snapshot) has delete files."""
    entries = [
        snapshot(n, n - 1 if n > 1 else None, deletes=int(d)) for n, d in enumerate(deletes, 1)
    ]
    chain = lineage(Lineage.of(metadata(*entries)))
    end = len(deletes)
    start = data.draw(st.integers(0, end - 1))
    clean = not any(deletes[max(start, 1) - 1 : end])
    assert (chain.problem(start, end) == "") == clean


def test_sizes_come_from_the_snapshot_summaries() -> None:
    """The table's bytes are its current snapshot's ``total-files-size``; a range's change
    reads the data files its snapshots added and removed, a compaction's none, and a
    rolled-back snapshot's sequence number is in no range."""
    sized = lineage(
        Lineage.of(
            metadata(
                snapshot(1, None, added_files_size=100, total_files_size=100),
                snapshot(2, 1, added_files_size=30, removed_files_size=100, total_files_size=30),
                snapshot(4, 2, added_files_size=5, total_files_size=35),  # 3 was rolled back
                snapshot(
                    5,
                    4,
                    operation="replace",
                    added_files_size=33,
                    removed_files_size=35,
                    total_files_size=33,
                ),
            )
        )
    )
    assert sized.table_bytes() == 33
    assert sized.change_bytes(0, 5) == 235
    assert sized.change_bytes(1, 4) == 135
    assert sized.change_bytes(4, 5) == 0


def test_a_summary_without_sizes_sizes_nothing() -> None:
    assert lineage(Lineage.of(metadata(snapshot(1, None)))).table_bytes() is None
    empty = lineage(Lineage.of({"format-version": 2, "current-snapshot-id": -1}))
    assert empty.table_bytes() == 0
