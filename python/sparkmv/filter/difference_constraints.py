"""Satisfiability of conjunctions of difference constraints, and what they imply.

Blakeley §4 (after Rosenkrantz–Hunt): a conjunction of atoms ``x op y + c`` and ``x op c``
(``op`` in ``<, ≤, =, ≥, >``) is normalised to constraints ``v − u ≤ w`` (``x = y + c`` is
two of them; ``x op c`` compares ``x`` with a node ``ZERO`` whose value is 0). Each is an edge
``u → v`` of weight ``w``; the conjunction is satisfiable iff the graph has no negative
cycle, found by Floyd–Warshall's shortest paths (``D[u][u] < 0``).

Domains: the paper assumes integers and turns ``x < c`` into ``x ≤ c − 1``. That is exact
only where every variable of the atom is integral (the caller says so). Elsewhere a weight
carries a *strict* flag instead: ``(c, <)`` is tighter than ``(c, ≤)``, a sum is strict if
either part is, and a cycle is negative when it weighs ``< 0`` or ``(0, <)``. Over the reals
this decides satisfiability exactly; for a domain embedded in them (decimals, dates, strings
ordered as bytes) an unsatisfiable answer is still exact and a satisfiable one may not be —
which can only keep a tuple, never drop a relevant one.

Constants of ordered non-numeric types (strings, dates) are nodes of their own, compared
only by order (weights ``(0, ≤)`` or ``(0, <)``); their order is checked by the caller of
``Closure.implied`` (``irrelevance.py``), not encoded as edges.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Weight:
    """The bound of ``v − u ≤ value`` (``< value`` when ``strict``)."""

    value: Fraction
    strict: bool = False

    def __add__(self, other: Weight) -> Weight:
        return Weight(self.value + other.value, self.strict or other.strict)

    def tighter_than(self, other: Weight) -> bool:
        if self.value != other.value:
            return self.value < other.value
        return self.strict and not other.strict

    def negative(self) -> bool:
        """A cycle of this weight cannot be satisfied: ``0 ≤ w`` (``0 < w``) is false."""
        return self.value < 0 or (self.value == 0 and self.strict)


@dataclass(frozen=True)
class Constraint:
    """``later − earlier ≤ weight``: an edge ``earlier → later``."""

    earlier: Hashable
    later: Hashable
    weight: Weight


class Closure:
    """All shortest paths of a satisfiable constraint graph: ``bound(u, v)`` is the tightest
    ``v − u ≤ w`` the constraints imply (None: no bound)."""

    def __init__(self, distances: dict[Hashable, dict[Hashable, Weight]]) -> None:
        self._distances = distances

    def bound(self, earlier: Hashable, later: Hashable) -> Weight | None:
        return self._distances.get(earlier, {}).get(later)


def close(constraints: Iterable[Constraint]) -> Closure | None:
    """Floyd–Warshall over the constraints' graph; None when it has a negative cycle (the
    conjunction is unsatisfiable)."""
    distances: dict[Hashable, dict[Hashable, Weight]] = {}
    for constraint in constraints:
        row = distances.setdefault(constraint.earlier, {})
        distances.setdefault(constraint.later, {})
        known = row.get(constraint.later)
        if known is None or constraint.weight.tighter_than(known):
            row[constraint.later] = constraint.weight
    nodes = list(distances)
    for via in nodes:
        into_via = distances[via]
        for start in nodes:
            first = distances[start].get(via)
            if first is None:
                continue
            row = distances[start]
            for end, second in list(into_via.items()):
                through = first + second
                known = row.get(end)
                if known is None or through.tighter_than(known):
                    row[end] = through
    if any((row.get(node) or Weight(Fraction(0))).negative() for node, row in distances.items()):
        return None
    return Closure(distances)
