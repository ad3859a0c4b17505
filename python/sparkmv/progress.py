"""The progress line of ``sparkmv sql``: what a long statement is doing, on a terminal.

While a statement runs, a background thread polls Spark's status tracker (the active stages,
each one's tasks done and total) and rewrites one line in place (a carriage return, padded
over the previous text): ``[stage 7: 3/8 tasks, 4.2 s]``. The line appears only once the
statement has run ``spark.sparkmv.shell.progressDelayMs``, is updated every
``spark.sparkmv.shell.progressIntervalMs``, and is blanked before the statement's result is
printed. On a stream that is no terminal (output piped or redirected) nothing is written and
no thread is started. Polling runs no Spark job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

from pyspark.sql import SparkSession

from sparkmv.config import PROGRESS_DELAY_MS, PROGRESS_INTERVAL_MS


@dataclass(frozen=True)
class StageProgress:
    """One active stage as Spark's status tracker reports it."""

    stage_id: int
    completed_tasks: int
    total_tasks: int


Poll = Callable[[], Sequence[StageProgress]]
"""What the progress line shows: the active stages at the moment it is called."""


def status_poll(spark: SparkSession) -> Poll:
    """The active stages of ``spark``'s context, from its status tracker (a stage that ended
    between listing and asking is left out)."""
    tracker = spark.sparkContext.statusTracker()

    def poll() -> list[StageProgress]:
        stages = []
        for stage_id in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                stages.append(StageProgress(stage_id, info.numCompletedTasks, info.numTasks))
        return stages

    return poll


def render(stages: Sequence[StageProgress], elapsed_s: float) -> str:
    """The line's text: each active stage's tasks done/total, then the time elapsed."""
    shown = ", ".join(
        f"stage {s.stage_id}: {s.completed_tasks}/{s.total_tasks} tasks" for s in stages
    )
    return f"[{shown or 'no active stage'}, {elapsed_s:.1f} s]"


@dataclass
class ProgressLine:
    """One line of ``out`` (a terminal) rewritten in place. Invariant: ``width`` is the length
    of the text on the line now (0: the line is blank), so a shorter text overwrites it all."""

    out: TextIO
    width: int = 0

    def show(self, text: str) -> None:
        self.out.write("\r" + text.ljust(self.width))
        self.out.flush()
        self.width = len(text)

    def clear(self) -> None:
        """Blank the line and return to its start (nothing written if it is blank)."""
        if self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()
            self.width = 0


@dataclass
class Progress:
    """The progress line of one statement, started at ``started`` (by ``clock``, seconds).
    ``tick`` updates it once (nothing before ``delay_s`` has elapsed); ``progress`` calls it
    from a background thread."""

    line: ProgressLine
    poll: Poll
    delay_s: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def tick(self) -> None:
        elapsed = self.clock() - self.started
        if elapsed >= self.delay_s:
            self.line.show(render(self.poll(), elapsed))


@contextmanager
def progress(spark: SparkSession, out: TextIO, poll: Poll | None = None) -> Iterator[None]:
    """Show the progress line on ``out`` while the block runs, if ``out`` is a terminal;
    blanked when the block ends, however it ends. ``poll``: what it shows (default: the
    status tracker of ``spark``'s context, ``status_poll``)."""
    if not out.isatty():
        yield
        return
    delay_s = PROGRESS_DELAY_MS.value(spark) / 1000
    interval_s = max(PROGRESS_INTERVAL_MS.value(spark), 10) / 1000
    shown = Progress(ProgressLine(out), poll or status_poll(spark), delay_s)
    done = threading.Event()
    thread = threading.Thread(
        target=_keep_showing, args=(shown, done, interval_s), name="sparkmv-progress", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()  # the thread writes no more: the line can be blanked safely
        shown.line.clear()


def _keep_showing(shown: Progress, done: threading.Event, interval_s: float) -> None:
    """``tick`` every ``interval_s`` from ``delay_s`` on, until ``done``. A failed poll (the
    session stopping) ends the line, never the statement."""
    if done.wait(shown.delay_s):
        return
    while not done.is_set():
        try:
            shown.tick()
        except Exception:  # the statement's own outcome is what the shell reports
            return
        done.wait(interval_s)
