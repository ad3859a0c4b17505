"""A materialized view outlives its process: create, then read and refresh, then drop, in three.

Each phase is a separate Python process using ``sparkmv.session(<warehouse>)`` on the same
warehouse; they run one after the other (the embedded Derby metastore admits one JVM at a
time). The processes run in an empty working directory, which must stay empty: the catalog
belongs under the warehouse.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import python_env

TIMEOUT = 300
RESULT_MARK = "RESULT "

CHILD = r'''
import json
import sys

import sparkmv

phase, warehouse = sys.argv[1], sys.argv[2]
spark = sparkmv.session(
    warehouse, **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
)


def rows(statement):
    return [list(row) for row in spark.sql(statement).collect()]


def described(view):
    info = spark.sql(f"DESCRIBE MATERIALIZED VIEW EXTENDED {view}").collect()
    return {row.col_name: row.data_type for row in info if row.col_name}


def query_rows(info):
    """The view's query run afresh in its database (the correctness oracle)."""
    spark.catalog.setCurrentDatabase(info["Query Database"])
    return [list(row) for row in spark.sql(info["Query"]).collect()]


result = {}
if phase == "A":
    spark.sql("CREATE TABLE t (k INT, v STRING) USING parquet")
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (2, 'b'), (-1, 'neg')")
    spark.sql("CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t WHERE k > 0")
    result["view"] = rows("SELECT * FROM mv")
elif phase == "B":
    result["show"] = rows("SHOW MATERIALIZED VIEWS")
    result["before"] = rows("SELECT * FROM mv")
    spark.sql("INSERT INTO t VALUES (3, 'c'), (0, 'zero'), (1, 'a')")
    result["refresh"] = rows("REFRESH MATERIALIZED VIEW mv")
    result["view"] = rows("SELECT * FROM mv")
    result["columns"] = spark.table("mv").columns
    result["describe"] = described("mv")
    result["query"] = query_rows(result["describe"])
elif phase == "C":
    result["show"] = rows("SHOW MATERIALIZED VIEWS")
    result["view"] = rows("SELECT * FROM mv")
    result["describe"] = described("mv")
    result["drop"] = rows("DROP MATERIALIZED VIEW mv")
    result["show_after_drop"] = rows("SHOW MATERIALIZED VIEWS")
    result["tables_after_drop"] = sorted(
        row.tableName for row in spark.sql("SHOW TABLES").collect() if not row.isTemporary
    )
    result["base_table"] = rows("SELECT * FROM t")
spark.stop()
print("RESULT " + json.dumps(result, default=str), flush=True)
'''


def run_phase(phase: str, script: Path, warehouse: Path, cwd: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, str(script), phase, str(warehouse)],
        cwd=cwd,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    assert completed.returncode == 0, f"phase {phase} exited {completed.returncode}\n{output}"
    marked = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_MARK)]
    assert len(marked) == 1, f"phase {phase} printed no result\n{output}"
    assert "Traceback" not in completed.stderr, output
    result: dict[str, Any] = json.loads(marked[0][len(RESULT_MARK) :])
    result["_output"] = output
    return result


def bag(rows: list[list[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(row) for row in rows)


def test_view_survives_restarts(tmp_path: Path) -> None:
    script = tmp_path / "phase.py"
    script.write_text(CHILD)
    warehouse = tmp_path / "warehouse"
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    # A: create the base table and the view, then the process ends.
    a = run_phase("A", script, warehouse, cwd)
    assert bag(a["view"]) == bag([[1, "a"], [2, "b"], [2, "b"]]), a["_output"]

    # B: the view is listed, readable and refreshable in a new process.
    b = run_phase("B", script, warehouse, cwd)
    out = b["_output"]
    assert [(row[0], row[1]) for row in b["show"]] == [("default", "mv")], out
    assert bag(b["before"]) == bag(a["view"]), out
    assert len(b["refresh"]) == 1 and b["refresh"][0][0] == "INCREMENTAL", out
    expected = bag([[1, "a"], [2, "b"], [2, "b"], [3, "c"], [1, "a"]])
    assert bag(b["view"]) == expected, out
    assert bag(b["query"]) == bag(b["view"]), out  # the oracle: view == its query, as multisets
    assert b["columns"] == ["k", "v"], out  # no hidden columns leak
    described = b["describe"]
    assert described["Refresh Count"] == "2", out
    assert described["Last Refresh Mode"] == "INCREMENTAL", out
    assert described["Row Count"] == "5", out
    assert described["Base Tables"] == "default.t", out
    storage = Path(described["Storage"].removeprefix("file:"))
    assert storage.is_relative_to(warehouse.resolve()) and storage.exists(), out

    # C: the refreshed contents and counters are still there; DROP works.
    c = run_phase("C", script, warehouse, cwd)
    out = c["_output"]
    assert [(row[0], row[1]) for row in c["show"]] == [("default", "mv")], out
    assert bag(c["view"]) == expected, out
    for key in ("Refresh Count", "Full Refreshes", "Row Count", "Query", "Last Refreshed"):
        assert c["describe"][key] == described[key], f"{key}\n{out}"
    assert c["show_after_drop"] == [], out
    assert c["tables_after_drop"] == ["t"], out
    assert not storage.exists(), out  # DROP removes the view's data too
    assert bag(c["base_table"]) == bag(
        [[1, "a"], [2, "b"], [2, "b"], [-1, "neg"], [3, "c"], [0, "zero"], [1, "a"]]
    ), out

    # The catalog lives under the warehouse, never in the working directory.
    assert (warehouse / "metastore_db").is_dir()
    assert sorted(path.name for path in cwd.iterdir()) == []
