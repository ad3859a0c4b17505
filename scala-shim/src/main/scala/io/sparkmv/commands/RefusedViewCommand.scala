package io.sparkmv.commands

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.execution.command.LeafRunnableCommand

import io.sparkmv.bridge.MvHandlerRegistry

/**
 * Spark's own `command` (e.g. "DROP VIEW") on the materialized view `view`, refused when run
 * (see `io.sparkmv.analysis.GuardMaterializedViewEntries`).
 */
case class RefusedViewCommand(command: String, view: TableIdentifier) extends LeafRunnableCommand {
  override def run(sparkSession: SparkSession): Seq[Row] =
    throw MvHandlerRegistry.viewCommandRefused(command, view.database.orNull, view.table)
}
