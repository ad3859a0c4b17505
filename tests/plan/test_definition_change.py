"""Which definition changes are derived from the old contents, and how (no Spark)."""

from __future__ import annotations

import pytest
import sqlglot
from sparkmv.analyze.maintainability import qualified
from sparkmv.plan.definition_change import Derivation, derivation

COLUMNS = {"db.t": ("a", "b", "c"), "db.u": ("a", "d")}


def derive(old: str, new: str) -> Derivation | None:
    def tree(query: str) -> sqlglot.exp.Expr:
        return qualified(sqlglot.parse_one(query, read="spark"), "db", COLUMNS)

    return derivation(tree(old), tree(new))


def test_a_conjunct_added_filters_the_stored_rows() -> None:
    found = derive("SELECT a, b FROM t WHERE a > 0", "SELECT a, b FROM t WHERE a > 0 AND b < 5")
    assert found is not None and found.added_query is None
    assert found.select_list == ("`__sparkmv_old`.`a` AS a", "`__sparkmv_old`.`b` AS b")
    assert found.filter == "(`__sparkmv_old`.`b` < 5)"
    assert "1 conjunct(s) added" in found.change


def test_columns_dropped_and_computed_columns_added_read_the_stored_columns() -> None:
    found = derive(
        "SELECT a, b + 1 AS b1, c FROM t", "SELECT b + 1 AS b1, upper(c) AS cu, a * 2 AS a2 FROM t"
    )
    assert found is not None and found.filter is None and found.added_query is None
    assert found.select_list == (
        "`__sparkmv_old`.`b1` AS b1",
        "UPPER(`__sparkmv_old`.`c`) AS cu",
        "`__sparkmv_old`.`a` * 2 AS a2",
    )
    assert found.change == "the select list rewritten over the stored columns"


def test_a_conjunct_removed_adds_the_rows_it_excluded() -> None:
    found = derive("SELECT a, b FROM t WHERE a > 0 AND b < 5", "SELECT a, b FROM t WHERE a > 0")
    assert found is not None and found.filter is None and found.added_query is not None
    assert found.added_query == (
        "SELECT `t`.`a` AS `a`, `t`.`b` AS `b` FROM `db`.`t` AS `t`"
        " WHERE `t`.`a` > 0 AND NOT COALESCE(`t`.`b` < 5, FALSE)"
    )
    assert "removed" in found.change


def test_a_join_added_joins_the_stored_rows() -> None:
    found = derive(
        "SELECT a, b FROM t WHERE a > 0",
        "SELECT t.a, u.d FROM t LEFT JOIN u ON t.b = u.a WHERE t.a > 0 AND u.d IS NULL",
    )
    assert found is not None and found.added_query is None and found.joined is not None
    assert (found.joined.table, found.joined.alias, found.joined.kind) == ("db.u", "u", "left")
    assert found.joined.condition == "`__sparkmv_old`.`b` = `u`.`a`"
    assert found.select_list == ("`__sparkmv_old`.`a` AS a", "`u`.`d` AS d")
    assert found.filter == "(`u`.`d` IS NULL)"
    assert "a left join of db.u added" in found.change


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a column the old view does not keep
        ("SELECT a FROM t", "SELECT a, b FROM t"),
        ("SELECT a FROM t WHERE a > 0", "SELECT a FROM t WHERE a > 0 AND b > 0"),
        # another FROM clause; a join on a column the old view does not keep; a right join;
        # a join added while a conjunct is removed
        ("SELECT a FROM t", "SELECT u.a FROM u"),
        ("SELECT a FROM t", "SELECT t.a FROM t JOIN u ON t.b = u.a"),
        ("SELECT a FROM t", "SELECT t.a FROM t RIGHT JOIN u ON t.a = u.a"),
        ("SELECT a FROM t WHERE a > 0", "SELECT t.a FROM t JOIN u ON t.a = u.a"),
        # grouping, DISTINCT, windows, a limit
        ("SELECT a, b FROM t", "SELECT a, count(*) AS n FROM t GROUP BY a"),
        ("SELECT a FROM t", "SELECT DISTINCT a FROM t"),
        ("SELECT a, b FROM t", "SELECT a, rank() OVER (ORDER BY b) AS r FROM t"),
        ("SELECT a FROM t", "SELECT a FROM t LIMIT 3"),
        # conjuncts removed while the select list changes; conjuncts replaced
        ("SELECT a, b FROM t WHERE a > 0", "SELECT a FROM t"),
        ("SELECT a FROM t WHERE a > 0", "SELECT a FROM t WHERE a > 1"),
        # a subquery in the new conjunct
        ("SELECT a FROM t", "SELECT a FROM t WHERE a IN (SELECT a FROM u)"),
    ],
)
def test_other_changes_are_recomputed(old: str, new: str) -> None:
    assert derive(old, new) is None
