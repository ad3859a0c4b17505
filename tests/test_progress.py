"""The progress line of ``sparkmv sql`` (``sparkmv/progress.py``): on a terminal, the active
stages' tasks done/total and the time elapsed, rewritten in place and blanked when the
statement ends; nothing at all when the output is piped. Driven with injected status
snapshots and an injected clock: no sleeping, no timing assertions."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest
from conftest import session_confs
from pyspark.sql import SparkSession
from sparkmv.config import PROGRESS_DELAY_MS
from sparkmv.progress import Progress, ProgressLine, StageProgress, progress, render, status_poll
from sparkmv.shell import Shell


class Terminal(io.StringIO):
    """What the shell writes to, as a terminal would receive it."""

    def isatty(self) -> bool:
        return True


def screen(text: str) -> str:
    """The line a terminal shows after ``text``: each carriage return goes back to the line's
    start, and what follows overwrites what was there."""
    shown: list[str] = []
    column = 0
    for char in text:
        if char == "\r":
            column = 0
            continue
        if column < len(shown):
            shown[column] = char
        else:
            shown.append(char)
        column += 1
    return "".join(shown)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_render_names_each_active_stage_and_the_time() -> None:
    stages = [StageProgress(7, 3, 8), StageProgress(9, 0, 4)]
    assert render(stages, 4.25) == "[stage 7: 3/8 tasks, stage 9: 0/4 tasks, 4.2 s]"
    assert render([], 0.04) == "[no active stage, 0.0 s]"


def test_the_line_is_rewritten_in_place_and_cleared() -> None:
    out = Terminal()
    snapshots: Iterator[list[StageProgress]] = iter(
        [[StageProgress(12, 1, 200)], [StageProgress(12, 150, 200)], [StageProgress(13, 2, 4)]]
    )
    clock = Clock()
    shown = Progress(ProgressLine(out), lambda: next(snapshots), delay_s=1.0, clock=clock)
    clock.now += 0.5
    shown.tick()  # before the delay: nothing, and the status is not even polled
    assert out.getvalue() == ""
    clock.now += 0.5
    shown.tick()
    assert screen(out.getvalue()) == "[stage 12: 1/200 tasks, 1.0 s]"
    clock.now += 1.5
    shown.tick()
    assert screen(out.getvalue()) == "[stage 12: 150/200 tasks, 2.5 s]"
    shown.tick()  # a shorter text overwrites all of the longer one
    assert screen(out.getvalue()).rstrip() == "[stage 13: 2/4 tasks, 2.5 s]"
    assert "\n" not in out.getvalue()
    shown.line.clear()
    assert screen(out.getvalue()).strip() == "" and out.getvalue().endswith("\r")
    written = out.getvalue()
    shown.line.clear()  # a blank line is not written again
    assert out.getvalue() == written


def test_a_statement_on_a_terminal_shows_the_line_until_it_ends(spark: SparkSession) -> None:
    out = Terminal()
    polled = threading.Event()

    def poll() -> list[StageProgress]:
        polled.set()
        return [StageProgress(3, 1, 2)]

    with session_confs(spark, {PROGRESS_DELAY_MS.key: "0"}), progress(spark, out, poll):
        assert polled.wait(60)  # the statement still runs while the line is shown
    assert "[stage 3: 1/2 tasks, " in out.getvalue()
    assert screen(out.getvalue()).strip() == ""  # blanked at the end
    assert not [t for t in threading.enumerate() if t.name == "sparkmv-progress"]


def test_a_quick_statement_shows_no_line(spark: SparkSession) -> None:
    out = Terminal()
    with session_confs(spark, {PROGRESS_DELAY_MS.key: str(24 * 3600 * 1000)}):
        assert Shell(spark, out).run("SELECT count(*) AS n FROM range(10)")
    assert "\r" not in out.getvalue() and "10" in out.getvalue()


def test_piped_output_gets_no_progress(spark: SparkSession) -> None:
    out = io.StringIO()  # not a terminal
    threads = threading.active_count()
    with session_confs(spark, {PROGRESS_DELAY_MS.key: "0"}), progress(spark, out):
        assert threading.active_count() == threads  # no thread polls
        spark.range(1000).selectExpr("sum(id)").collect()
    assert out.getvalue() == ""
    assert Shell(spark, out).run("SELECT sum(id) AS s FROM range(1000)")
    assert "\r" not in out.getvalue() and "499500" in out.getvalue()


def test_status_poll_reads_sparks_status_tracker(spark: SparkSession) -> None:
    assert status_poll(spark)() == []  # between statements no stage is active


@pytest.mark.parametrize("text", ["a\rb", "abc\rx"])
def test_screen_overwrites_like_a_terminal(text: str) -> None:
    assert screen(text) == {"a\rb": "b", "abc\rx": "xbc"}[text]
