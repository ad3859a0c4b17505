"""Can a view's query be maintained incrementally? (DESIGN §6)

The incremental engine (delta rules per operator) is not part of this release, so every
query is maintainable only by full refresh; the reason says so, and the planner uses it to
pick FULL under AUTO and to refuse INCREMENTAL.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkmv.analyze.query import ParsedQuery


@dataclass(frozen=True)
class Maintainability:
    incremental: bool
    reason: str


def analyze_maintainability(query: ParsedQuery) -> Maintainability:
    if query.tree is None:
        return Maintainability(
            False, "sqlglot cannot parse the query, so its deltas cannot be derived"
        )
    return Maintainability(
        False, "incremental maintenance is not available in this release of sparkmv"
    )
