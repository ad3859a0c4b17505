"""Crash points for recovery tests: ``SPARKMV_CRASH_AT=<point>`` kills the process there.

The kill is ``os._exit`` (no cleanup, no finally blocks), as close to a power cut as a test
can get from inside the process. Unset in normal use, where a checkpoint costs one lookup.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

CRASH_AT_ENV = "SPARKMV_CRASH_AT"
CRASH_EXIT_CODE = 137


def checkpoint(point: str) -> None:
    """Die here if the environment asks for a crash at ``point``."""
    if os.environ.get(CRASH_AT_ENV) == point:
        os._exit(CRASH_EXIT_CODE)


@contextmanager
def disarmed() -> Iterator[None]:
    """Run a block with no crash point armed (a test's set-up or check before the step that
    is meant to die), then re-arm whatever the environment held."""
    point = os.environ.pop(CRASH_AT_ENV, None)
    try:
        yield
    finally:
        if point is not None:
            os.environ[CRASH_AT_ENV] = point
