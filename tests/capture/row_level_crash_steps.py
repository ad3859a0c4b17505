"""Child-process steps for ``test_row_level_crash.py`` (run as a script, not collected).

``python row_level_crash_steps.py <warehouse> <step>``: step ``setup+N`` creates the
tracked table (with no crash point armed), then goes on as step ``N``; step ``N`` first checks
the outcome of the previous crashed statement (if any), then runs statement ``N`` (the crash
point comes from ``SPARKMV_CRASH_AT``). The state the check needs — the rows and log version
before the statement — is kept in ``state.json``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import sparkmv
from sparkmv.capture.tracking import Tracking
from sparkmv.catalog.views import ViewCatalog
from sparkmv.faults import disarmed
from sparkmv.identifiers import TableName
from sparkmv.zset import WEIGHT

Row = tuple[int, str, int | None]

MERGE_SOURCE = [(3, "m", 1), (7, "n", 5)]
STATEMENTS = [
    "DELETE FROM t WHERE k = 1",
    "UPDATE t SET v = 'u', p = 2 WHERE k = 2",
    "MERGE INTO t USING (SELECT * FROM VALUES (3, 'm', 1), (7, 'n', 5) AS b(k, v, p)) AS s "
    "ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    "DELETE FROM t WHERE k = 4 OR p IS NULL",
]


def expected_after(statement: int, rows: list[Row]) -> list[Row]:
    """What each statement does to the rows (the model the table is checked against)."""
    if statement == 0:
        return [r for r in rows if r[0] != 1]
    if statement == 1:
        return [(k, "u", 2) if k == 2 else (k, v, p) for k, v, p in rows]
    if statement == 2:
        source = {k: (k, v, p) for k, v, p in MERGE_SOURCE}
        merged = [(k, source[k][1], p) if k in source else (k, v, p) for k, v, p in rows]
        return merged + [row for k, row in source.items() if k not in {r[0] for r in rows}]
    return [r for r in rows if r[0] != 4 and r[2] is not None]


def main(warehouse: str, step: str) -> None:
    spark = sparkmv.session(warehouse)
    state_file = Path(warehouse) / "state.json"
    catalog = ViewCatalog(spark)
    tracking = Tracking(spark, catalog)
    table = catalog.resolve(TableName("t"))

    def rows() -> list[Row]:
        return sorted((tuple(r) for r in spark.table("t").collect()), key=repr)  # type: ignore[misc]

    if step.startswith("setup+"):  # one process sets up and runs the first statement
        step = step.removeprefix("setup+")
        with disarmed():
            spark.sql("CREATE TABLE t (k INT, v STRING, p INT) USING parquet PARTITIONED BY (p)")
            spark.sql("INSERT INTO t SELECT id, 'x', IF(id = 9, NULL, id % 3) FROM range(10)")
            spark.sql("CREATE MATERIALIZED VIEW v AS SELECT p, count(*) AS n FROM t GROUP BY p")
    index, point = int(step.split(":")[0]), step.split(":")[1]
    previous = json.loads(state_file.read_text()) if state_file.exists() else None
    if previous is not None:
        check(spark, tracking, table, previous, rows())
    log = tracking.state(table).log
    assert log is not None
    state = {"rows": rows(), "version": log.current_version(), "index": index, "point": point}
    state_file.write_text(json.dumps(state))
    spark.sql(STATEMENTS[index]).collect()
    print("NOT CRASHED")
    spark.stop()


def check(spark, tracking, table, previous, now) -> None:  # type: ignore[no-untyped-def]
    """The table is as before or as after the crashed statement; the log agrees with it."""
    before = [tuple(r) for r in previous["rows"]]
    after = expected_after(previous["index"], before)
    swapped = previous["point"] in ("row_level.after_swap", "row_level.after_commit")
    expected = after if swapped else before
    assert Counter(now) == Counter(expected), (previous, now)
    log = tracking.state(table).log
    reason = log.reconcile(tracking.files(table), writer=True)
    assert reason == "", reason  # recovered precisely: no resynchronisation needed
    assert not list((Path(log.root.removeprefix("file:")) / "pending").glob("*.json"))
    changes = Counter(
        {
            tuple(r[:-1]): r[WEIGHT]
            for r in log.net_changes(previous["version"], log.current_version()).collect()
        }
    )
    difference = Counter(now)
    difference.subtract(Counter(before))
    assert changes == Counter({k: n for k, n in difference.items() if n}), changes
    refreshed = spark.sql("REFRESH MATERIALIZED VIEW v").first()
    assert "outside" not in refreshed.reason, refreshed.reason
    view = Counter(tuple(r) for r in spark.table("v").collect())
    query = Counter(tuple(r) for r in spark.sql("SELECT p, count(*) FROM t GROUP BY p").collect())
    assert view == query, (view, query)
    print("CHECKED", previous["index"], previous["point"])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
