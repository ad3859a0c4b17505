"""What Spark's own view commands get when they name a materialized view's catalog entry.

A materialized view is a catalog view plus stored rows plus its base tables' change logs;
``DROP VIEW``, ``ALTER VIEW`` and ``CREATE OR REPLACE VIEW`` would change the entry alone and
orphan the rest. The shim's check rule (``GuardMaterializedViewEntries``) refuses them before
they run; this module words the refusal, naming the statement to use instead.
"""

from __future__ import annotations

from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.identifiers import TableName

_REDEFINE = (
    "Use ALTER MATERIALIZED VIEW {name} AS <query> or CREATE OR REPLACE MATERIALIZED VIEW "
    "{name} ... AS <query>."
)
_INSTEAD = {
    "DROP VIEW": "Use DROP MATERIALIZED VIEW {name}.",
    "DROP TABLE": "Use DROP MATERIALIZED VIEW {name}.",
    "CREATE OR REPLACE VIEW": _REDEFINE,
    "ALTER VIEW ... AS": _REDEFINE,
    "ALTER VIEW ... WITH SCHEMA": "Its schema follows its query: " + _REDEFINE,
    "RENAME": "A materialized view cannot be renamed: DROP MATERIALIZED VIEW {name} and "
    "CREATE MATERIALIZED VIEW under the new name.",
    "TBLPROPERTIES": "Give its properties with CREATE OR REPLACE MATERIALIZED VIEW {name} "
    "TBLPROPERTIES (...) AS <query>.",
}


def refusal(command: str, view: TableName) -> SparkMvError:
    """The error for Spark's ``command`` (as the shim names it, e.g. ``ALTER VIEW ... RENAME``)
    on the materialized view ``view``."""
    instead = next(
        (hint for key, hint in _INSTEAD.items() if command == key or command.endswith(key)),
        "Use the MATERIALIZED VIEW statements (see SHOW MATERIALIZED VIEWS, DESCRIBE).",
    )
    return SparkMvError(
        ErrorClass.MATERIALIZED_VIEW_WRONG_COMMAND,
        name=view,
        command=command,
        instead=instead.format(name=view),
    )
