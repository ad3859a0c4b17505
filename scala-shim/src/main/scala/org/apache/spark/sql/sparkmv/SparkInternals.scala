package org.apache.spark.sql.sparkmv

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic
import org.apache.spark.sql.connector.catalog.{CatalogManager, CatalogPlugin}

/** The only places the shim needs Spark's `private[sql]` API. */
object SparkInternals {

  /**
   * A DataFrame over an analyzed plan. Row-level commands hand such DataFrames to Python,
   * which never sees Catalyst expressions.
   */
  def ofRows(spark: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(spark.asInstanceOf[classic.SparkSession], plan)

  def isSessionCatalog(catalog: CatalogPlugin): Boolean =
    catalog.name == CatalogManager.SESSION_CATALOG_NAME
}
