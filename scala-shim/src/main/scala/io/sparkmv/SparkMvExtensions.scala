package io.sparkmv

import org.apache.spark.sql.SparkSessionExtensions

import io.sparkmv.analysis.{CaptureTrackedWrites, DropMaterializedViewsWithDatabase, GuardMaterializedViewEntries, PlanRowLevelWrites, RerouteSparkMaterializedView}
import io.sparkmv.bridge.SparkMvErrors
import io.sparkmv.functions.RefreshHistoryFunction
import io.sparkmv.parser.SparkMvParser

/**
 * Entry point: `spark.sql.extensions=io.sparkmv.SparkMvExtensions`.
 *
 * The shim only routes statements to the Python handler (see [[io.sparkmv.bridge.MvHandler]]);
 * every decision about materialized views is made in the `sparkmv` Python package.
 */
class SparkMvExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // errors
    SparkMvErrors.registerWithSpark()
    // parser
    extensions.injectParser((_, delegate) => new SparkMvParser(delegate))
    // analyzer
    extensions.injectResolutionRule(_ => RerouteSparkMaterializedView)
    extensions.injectPostHocResolutionRule(_ => PlanRowLevelWrites)
    extensions.injectPostHocResolutionRule(_ => CaptureTrackedWrites)
    extensions.injectPostHocResolutionRule(GuardMaterializedViewEntries(_))
    extensions.injectPostHocResolutionRule(_ => DropMaterializedViewsWithDatabase)
    // functions
    extensions.injectTableFunction(RefreshHistoryFunction.description)
  }
}
