"""sparkmv in an application launched by spark-submit, as the README documents it.

    spark-submit --jars $(sparkmv jar) \
        --conf spark.sql.extensions=io.sparkmv.SparkMvExtensions app.py

with ``sparkmv.attach(spark)`` in the app. One spark-submit run (a JVM start costs seconds)
covers both the session before ``attach`` (MV statements fail, saying how to attach) and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark
import pytest
from conftest import python_env
from sparkmv.config import EXTENSION_CLASS

TIMEOUT = 300
RESULT_MARK = "RESULT "
SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARKMV = Path(sys.executable).parent / "sparkmv"

APP = r"""
import json

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

import sparkmv

spark = SparkSession.builder.getOrCreate()
result = {}

# Before attach: the extension is there, the Python handler is not.
before = {}
for statement in ("CREATE MATERIALIZED VIEW early AS SELECT 1 AS x", "SHOW MATERIALIZED VIEWS"):
    try:
        spark.sql(statement).collect()
        before[statement] = {"error": None}
    except PySparkException as error:
        before[statement] = {
            "type": type(error).__name__,
            "condition": error.getCondition(),
            "sqlstate": error.getSqlState(),
            "text": str(error).split("\n\nJVM stacktrace:")[0],
        }
        before[statement]["parameters"] = error.getMessageParameters()
        try:
            before[statement]["getMessage"] = error.getMessage()
        except Exception as failure:  # a broken getMessage is reported, not fatal
            before[statement]["getMessage_failed"] = str(failure).splitlines()[0][:300]
result["before_attach"] = before
result["tables_before_attach"] = [row.tableName for row in spark.sql("SHOW TABLES").collect()]

sparkmv.attach(spark)
for statement in (
    "CREATE TABLE t (a INT, b STRING) USING parquet",
    "INSERT INTO t VALUES (1, 'x'), (2, 'y')",
    "CREATE MATERIALIZED VIEW v AS SELECT a, b FROM t WHERE a > 1",
    "INSERT INTO t VALUES (3, 'z'), (0, 'no')",
):
    spark.sql(statement).collect()
result["refresh"] = [list(row) for row in spark.sql("REFRESH MATERIALIZED VIEW v").collect()]
result["rows"] = [list(row) for row in spark.sql("SELECT * FROM v ORDER BY a").collect()]
result["views"] = [row.viewName for row in spark.sql("SHOW MATERIALIZED VIEWS").collect()]
spark.stop()
print("RESULT " + json.dumps(result), flush=True)
"""


def spark_submit_command() -> list[str]:
    script = SPARK_HOME / "bin" / "spark-submit"
    assert script.is_file(), f"{script} is missing from the pyspark package"
    return [str(script)] if os.access(script, os.X_OK) else ["bash", str(script)]


def sparkmv_jar() -> str:
    """What ``$(sparkmv jar)`` expands to."""
    completed = subprocess.run(
        [str(SPARKMV), "jar"], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout.strip()


@pytest.fixture(scope="module")
def app_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("spark_submit")
    app = root / "app.py"
    app.write_text(APP)
    cwd = root / "cwd"
    cwd.mkdir()
    env = python_env()
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["PYSPARK_PYTHON"] = sys.executable
    command = [
        *spark_submit_command(),
        "--master",
        "local[2]",
        "--jars",
        sparkmv_jar(),
        "--conf",
        f"spark.sql.extensions={EXTENSION_CLASS}",
        "--conf",
        f"spark.sql.warehouse.dir={root / 'warehouse'}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        "spark.ui.enabled=false",
        str(app),
    ]
    completed = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = (
        f"$ {' '.join(command)}\nexit code {completed.returncode}\n"
        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    )
    assert completed.returncode == 0, output
    marked = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_MARK)]
    assert len(marked) == 1, output
    result: dict[str, Any] = json.loads(marked[0][len(RESULT_MARK) :])
    result["_output"] = output
    result["_stderr"] = completed.stderr
    result["_cwd_files"] = sorted(path.name for path in cwd.iterdir())
    return result


def test_attached_application_maintains_views(app_run: dict[str, Any]) -> None:
    out = app_run["_output"]
    assert app_run["rows"] == [[2, "y"], [3, "z"]], out
    assert len(app_run["refresh"]) == 1 and app_run["refresh"][0][0] == "INCREMENTAL", out
    assert app_run["views"] == ["v"], out
    assert "Traceback" not in app_run["_stderr"], out
    assert app_run["_cwd_files"] == [], out  # the warehouse conf is honoured; no Derby here


def test_without_attach_mv_statements_say_how_to_attach(app_run: dict[str, Any]) -> None:
    out = app_run["_output"]
    for statement, failure in app_run["before_attach"].items():
        assert failure.get("condition") == "MATERIALIZED_VIEW_HANDLER_NOT_ATTACHED", (
            f"{statement}\n{out}"
        )
        assert failure["sqlstate"] == "55000", out
        assert "sparkmv.attach(spark)" in failure["text"], out
        assert failure["text"].startswith("[MATERIALIZED_VIEW_HANDLER_NOT_ATTACHED]"), out
    # The failed CREATE left nothing behind.
    assert app_run["tables_before_attach"] == [], out


def test_error_get_message(app_run: dict[str, Any]) -> None:
    """PySpark's getMessage() renders the shim's error by Spark's registry, to which the shim
    added sparkmv's classes, before any Python handler was attached."""
    for failure in app_run["before_attach"].values():
        assert "getMessage_failed" not in failure, failure.get("getMessage_failed")
        assert failure["getMessage"] == failure["text"], failure
        assert failure["parameters"] == {}, failure
