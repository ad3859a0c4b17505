"""Window functions in the IR (``ir.Window``) and which of them are exact (``analyze/windows``):
pure sqlglot, no Spark; ``test_differential_windows.py`` checks the values."""

from __future__ import annotations

import pytest
from sparkmv.analyze.ir import Filter, Project, Scan, Window, read_columns, walk
from sparkmv.analyze.maintainability import analyze_maintainability
from sparkmv.analyze.query import parse_query
from sparkmv.analyze.windows import tie_sensitive, tie_sensitive_construct
from sqlglot import exp, parse_one
from test_relational import TABLES, build


def windows_of(query: str) -> list[Window]:
    return [node for node in walk(build(query)[0]) if isinstance(node, Window)]


def test_a_select_list_with_window_calls_is_a_window_under_its_projection() -> None:
    root, names = build(
        "SELECT a + lag(a) OVER (PARTITION BY b ORDER BY a) AS d,"
        " lag(a) OVER (PARTITION BY b ORDER BY a) AS l, count(*) OVER (PARTITION BY b, a) AS n"
        " FROM r WHERE a > 0"
    )
    assert names == ["d", "l", "n"]
    assert isinstance(root, Project) and isinstance(root.child, Window)
    window = root.child
    assert isinstance(window.child, Filter) and isinstance(window.child.child, Scan)
    assert len(window.calls) == 2  # the same call twice is computed once
    assert window.outputs == window.child.outputs + window.call_outputs
    # the partition is what the calls share
    assert [key.sql() for key in window.partition] == ['"__c1"']
    assert all(isinstance(e.find(exp.Window), type(None)) for e in root.expressions)


def test_top_k_is_a_filter_over_the_window() -> None:
    root, _ = build(
        "SELECT * FROM (SELECT a, b, row_number() OVER (PARTITION BY b ORDER BY a) AS rn"
        " FROM r) AS q WHERE rn <= 2"
    )
    assert isinstance(root, Project) and isinstance(root.child, Filter)
    assert any(isinstance(node, Window) for node in walk(root))


def test_without_partition_by_the_window_has_no_partition() -> None:
    (window,) = windows_of("SELECT a, rank() OVER (ORDER BY a) AS k FROM r")
    assert window.partition == ()
    (window,) = windows_of(
        "SELECT a, count(*) OVER (PARTITION BY a) AS n, sum(a) OVER (PARTITION BY b) AS s FROM r"
    )
    assert window.partition == ()  # no key shared


@pytest.mark.parametrize(
    ("call", "sensitive"),
    [
        ("rank() OVER (ORDER BY a)", False),
        ("dense_rank() OVER (PARTITION BY b ORDER BY a)", False),
        ("percent_rank() OVER (ORDER BY a)", False),
        ("cume_dist() OVER (ORDER BY a)", False),
        ("sum(a) OVER (PARTITION BY b ORDER BY a)", False),  # RANGE: peers together
        ("count(*) OVER ()", False),
        ("max(a) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)", False),
        ("sum(a) OVER (ORDER BY a RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)", False),
        ("sum(a) OVER (ORDER BY a ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", True),
        ("row_number() OVER (ORDER BY a)", True),
        ("ntile(2) OVER (ORDER BY a)", True),
        ("lag(a) OVER (ORDER BY a)", True),
        ("lead(a, 2, 0) OVER (ORDER BY a)", True),
        ("first_value(a) OVER (ORDER BY a)", True),
        ("last_value(a) IGNORE NULLS OVER (ORDER BY a)", True),
        ("nth_value(a, 2) OVER (ORDER BY a)", True),
    ],
)
def test_which_functions_depend_on_how_ties_are_broken(call: str, sensitive: bool) -> None:
    window = parse_one(f"SELECT {call} FROM r", read="spark").find(exp.Window)
    assert window is not None
    assert tie_sensitive(window) is sensitive


@pytest.mark.parametrize(
    "query",
    [
        # the order covers every column the view reads
        "SELECT a, row_number() OVER (ORDER BY a) AS n FROM r",
        "SELECT a, b, lag(a) OVER (PARTITION BY b ORDER BY a) AS p FROM r",
        # b is read by the WHERE below the window only: it tells no tied rows apart
        "SELECT a, ntile(2) OVER (ORDER BY a) AS n FROM r WHERE b > 0",
        "SELECT * FROM (SELECT a, b, row_number() OVER (PARTITION BY b ORDER BY a DESC) AS rn"
        " FROM r) AS q WHERE rn <= 2",
        # tie-free functions need no total order
        "SELECT a, b, rank() OVER (ORDER BY a) AS k, sum(a) OVER (PARTITION BY b) AS s FROM r",
    ],
)
def test_tie_sensitive_functions_over_a_total_order_are_exact(query: str) -> None:
    assert tie_sensitive_construct(build(query)[0]) == ""


@pytest.mark.parametrize(
    ("query", "function", "columns"),
    [
        ("SELECT a, b, row_number() OVER (ORDER BY a) AS n FROM r", "ROW_NUMBER", "r.b"),
        ("SELECT b, lag(a) OVER (ORDER BY b) AS p FROM r", "LAG", "r.a"),
        # a column of a derived table named by its source, and a filter above the window
        (
            "SELECT x FROM (SELECT a AS x, b, first_value(a) OVER (PARTITION BY a) AS f FROM r)"
            " AS q WHERE q.b > f",
            "FIRST_VALUE",
            "r.b",
        ),
        (
            "SELECT a, b, sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s"
            " FROM r",
            "SUM",
            "r.b",
        ),
        # a column read only by a tie-free call still tells rows apart for the sensitive one
        (
            "SELECT row_number() OVER (PARTITION BY s.b ORDER BY s.b) AS n,"
            " max(s.c) OVER (PARTITION BY s.b) AS m FROM s",
            "ROW_NUMBER",
            "s.c",
        ),
    ],
)
def test_tie_sensitive_functions_over_ties_are_refused_with_the_fix(
    query: str, function: str, columns: str
) -> None:
    reason = tie_sensitive_construct(build(query)[0])
    assert reason.startswith(f"the query uses {function} over an order that can tie rows"), reason
    assert f"({columns})" in reason
    assert "order by columns that make the order total" in reason
    found = analyze_maintainability(parse_query(query, "db"), "db", None, TABLES, False)
    assert not found.incremental and found.reason == reason


@pytest.mark.parametrize(
    ("query", "construct"),
    [
        ("SELECT b, rank() OVER (ORDER BY sum(a)) AS k FROM r GROUP BY b", "aggregate query"),
        ("SELECT sum(count(*)) OVER () AS n FROM r", "aggregate query"),
        ("SELECT collect_list(a) OVER (PARTITION BY b) AS l FROM r", "COLLECT_LIST"),
        ("SELECT stddev(a) OVER (PARTITION BY b) AS l FROM r", "window function"),
        ("SELECT a, (SELECT max(rank() OVER (ORDER BY s.b)) FROM s) AS m FROM r", "subquery"),
        ("SELECT a, rank() OVER w AS k FROM r WINDOW w AS (ORDER BY a)", "WINDOW"),
        ("SELECT sum(a) OVER (PARTITION BY rank() OVER (ORDER BY a)) AS k FROM r", "window"),
    ],
)
def test_windows_the_rules_do_not_cover_are_refused(query: str, construct: str) -> None:
    found = analyze_maintainability(parse_query(query, "db"), "db", None, TABLES, False)
    assert not found.incremental
    assert construct in found.reason, found.reason


def test_a_window_reads_its_keys_order_and_arguments() -> None:
    root, _ = build("SELECT rank() OVER (PARTITION BY s.b ORDER BY s.c) AS k FROM s")
    assert read_columns(root) == {"db.s": {"b", "c"}}
    root, _ = build("SELECT count(*) OVER () AS n FROM s")
    assert read_columns(root) == {"db.s": set()}
