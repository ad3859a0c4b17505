"""The shim's JVM helper objects, looked up once per Spark context.

py4j resolves a class by name with a round trip, and each attribute of a class (a static
method) with another one, at every use; a refresh calls the catalog and file-system
helpers dozens of times. ``helper(spark, name)`` returns the class with its static methods
cached.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


class StaticMethods:
    """A JVM class whose static methods are looked up once each."""

    def __init__(self, jvm_class: Any) -> None:
        self._class = jvm_class
        self._methods: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        method = self._methods.get(name)
        if method is None:
            method = getattr(self._class, name)
            self._methods[name] = method
        return method


_helpers: dict[tuple[int, str], tuple[Any, StaticMethods]] = {}  # by JavaSparkContext


def helper(spark: SparkSession, class_name: str) -> StaticMethods:
    """The JVM class ``class_name`` (fully qualified) of ``spark``'s context."""
    context: Any = spark._jsc
    key = (id(context), class_name)
    known = _helpers.get(key)
    if known is None or known[0] is not context:
        jvm: Any = spark._jvm
        known = (context, StaticMethods(getattr(jvm, class_name)))
        _helpers[key] = known
    return known[1]
