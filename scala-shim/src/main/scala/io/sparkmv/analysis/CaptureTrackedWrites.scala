package io.sparkmv.analysis

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand

import io.sparkmv.bridge.MvHandlerRegistry
import io.sparkmv.commands.CapturedWriteCommand

/**
 * Post-hoc resolution (after Spark's DataSourceAnalysis): file writes to tracked tables run
 * inside a [[CapturedWriteCommand]]. The check is one property lookup on the table the plan
 * already carries; writes to other tables are untouched.
 */
object CaptureTrackedWrites extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = MvHandlerRegistry.trackingProperty match {
    case None => plan
    case Some(_) if plan.exists(_.isInstanceOf[CapturedWriteCommand]) => plan // wrapped already
    case Some(key) =>
      // Bottom-up, so the wrapper's own child is not visited again.
      plan.transformUp {
        case write: InsertIntoHadoopFsRelationCommand
            if write.catalogTable.exists(_.properties.contains(key)) =>
          CapturedWriteCommand(write)
      }
  }
}
