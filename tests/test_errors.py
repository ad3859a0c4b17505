"""sparkmv's errors answer PySpark's four accessors as Spark's own errors do.

``getCondition()``, ``getSqlState()`` and ``getMessageParameters()`` ask the JVM exception;
``getMessage()`` asks Spark's error-class registry for the class's template
(``SparkThrowableHelper.getMessage``), which the shim extends with sparkmv's classes
(``errors.error_conditions_json``, carried by the jar). Spark Connect and JDBC are covered in
``test_server.py``, an error raised before ``sparkmv.attach`` in ``test_spark_submit.py``.
"""

from __future__ import annotations

import json
import re

import pytest
from pyspark.errors import AnalysisException, PySparkException
from pyspark.errors.exceptions.captured import convert_exception
from pyspark.sql import SparkSession
from sparkmv.bridge import java_exception
from sparkmv.errors import SPARK_DEFINED, ErrorClass, SparkMvError, error_conditions_json

PARAMETER = re.compile(r"\{(\w+)\}")


def sample_error(error_class: ErrorClass) -> SparkMvError:
    """An error of ``error_class`` with every parameter of its template filled."""
    names = PARAMETER.findall(error_class.value.template)
    return SparkMvError(error_class, **{name: f"value of {name}" for name in names})


@pytest.mark.parametrize("error_class", list(ErrorClass), ids=lambda error: error.name)
def test_every_error_class_answers_the_four_accessors(
    spark: SparkSession, error_class: ErrorClass
) -> None:
    error = sample_error(error_class)
    # PySpark's own conversion of a JVM exception, as a failing spark.sql call does it
    captured = convert_exception(java_exception(spark, error))
    assert isinstance(captured, AnalysisException)
    assert captured.getCondition() == error_class.name
    assert captured.getSqlState() == error_class.sql_state
    assert captured.getMessageParameters() == error.params
    message = captured.getMessage()
    assert message.startswith(f"[{error_class.name}] "), message
    assert message.endswith(f" SQLSTATE: {error_class.sql_state}"), message
    if error_class not in SPARK_DEFINED:  # Spark's registry keeps Spark's wording for those
        assert message == str(error)
        assert str(captured).split("\n\nJVM stacktrace:")[0] == str(error)


def test_a_failing_statement_answers_the_four_accessors(spark: SparkSession, db: str) -> None:
    with pytest.raises(PySparkException) as raised:
        spark.sql("REFRESH MATERIALIZED VIEW no_such_view").collect()
    error = raised.value
    assert error.getCondition() == "MATERIALIZED_VIEW_NOT_FOUND"
    assert error.getSqlState() == "42P01"
    assert error.getMessageParameters() == {"name": f"{db}.no_such_view"}
    assert error.getMessage() == (
        f"[MATERIALIZED_VIEW_NOT_FOUND] The materialized view {db}.no_such_view cannot be "
        "found. Check the spelling and the database (SHOW MATERIALIZED VIEWS lists them), or "
        "use IF EXISTS. SQLSTATE: 42P01"
    )


def test_spark_defined_classes_take_sparks_parameters(spark: SparkSession) -> None:
    """The classes Spark itself defines are raised with the parameters of Spark's template,
    and Spark's registry renders them as Spark's own errors."""
    error = SparkMvError(ErrorClass.RECURSION_LEVEL_LIMIT_EXCEEDED, levelLimit=7)
    captured = convert_exception(java_exception(spark, error))
    assert captured.getMessage().startswith(
        "[RECURSION_LEVEL_LIMIT_EXCEEDED] Recursion level limit 7 reached but query has not "
        "exhausted"
    )


def test_the_jars_error_classes_are_those_of_errors_py() -> None:
    conditions = json.loads(error_conditions_json())
    assert set(conditions) == {error.name for error in ErrorClass} - {
        error.name for error in SPARK_DEFINED
    }
    found = conditions["MATERIALIZED_VIEW_NOT_FOUND"]
    assert found["sqlState"] == "42P01"
    assert found["message"][0].startswith("The materialized view <name> cannot be found.")
