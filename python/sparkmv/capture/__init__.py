"""Capture stage: what changed in a base table between two versions (docs/architecture.md).

``source.ChangeSource`` is the reader interface every refresh uses; ``change_log.ChangeLog``
is the first source: a differential file per base table (Hanson §2.2), one numbered commit per
captured write, read back as net changes ``ΔR`` for any version range ``(a, b]``.
"""
