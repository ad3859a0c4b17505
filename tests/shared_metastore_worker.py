"""A child process of ``test_shared_metastore.py``: one SparkSession on the shared PostgreSQL
metastore, running the commands the test sends, one JSON object a line on stdin, and
answering each with one line ``@@ <JSON>`` on stdout (Spark logs to stderr).

``python shared_metastore_worker.py WAREHOUSE METASTORE_URL``
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import sparkmv
from sparkmv.catalog.metadata import MvMetadata
from sparkmv.catalog.views import ViewCatalog
from sparkmv.identifiers import TableName
from sparkmv.storage import snapshot


def outcome(spark: Any, sql: str) -> dict[str, Any]:
    """The rows of ``sql``, or its error's class and message."""
    try:
        rows = spark.sql(sql).collect()
    except Exception as error:
        found = re.search(r"\[([A-Z_]+)\]", str(error))
        return {"error": str(error).splitlines()[0], "class": found.group(1) if found else None}
    return {"rows": [[value for value in row] for row in rows]}


def main() -> None:
    warehouse, url = sys.argv[1], sys.argv[2]
    spark = sparkmv.session(warehouse, metastore_url=url, metastore_user="postgres")
    catalog = ViewCatalog(spark)
    held: dict[str, MvMetadata] = {}

    def handle(command: dict[str, Any]) -> Any:
        op = command["op"]
        if op == "sql":
            return outcome(spark, command["sql"])
        if op == "script":  # commands one after the other (each statement its own commit)
            return [handle(step) for step in command["steps"]]
        if op == "meta":
            view = catalog.get(TableName(command["view"], "default"))
            return {
                "refreshes": view.stats.refreshes,
                "rows_inserted": view.stats.rows_inserted,
                "rows_deleted": view.stats.rows_deleted,
                "row_count": view.row_count,
                "consumed": {t: p.version for t, p in view.consumed_versions.items()},
            }
        if op == "hold":  # read the view's metadata now, to commit it later
            held[command["view"]] = catalog.get(TableName(command["view"], "default"))
            return {"token": held[command["view"]].commit_token}
        if op == "commit_held":
            view = held.pop(command["view"])
            try:
                catalog.commit(view, snapshot.view_text(view))
            except Exception as error:
                found = re.search(r"\[([A-Z_]+)\]", str(error))
                return {"class": found.group(1) if found else None, "error": str(error)}
            return {"committed": True}
        raise ValueError(f"unknown command {op}")

    print("@@ " + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        print("@@ " + json.dumps(handle(json.loads(line)), default=str), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
