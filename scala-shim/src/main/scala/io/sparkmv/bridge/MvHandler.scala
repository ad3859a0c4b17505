package io.sparkmv.bridge

/**
 * Implemented in Python (`sparkmv.bridge.Handler`) and registered over py4j.
 *
 * Both methods either return their result or return a `Throwable` that the shim rethrows:
 * the Python side turns its own errors into [[SparkMvException]]s and hands back the original
 * Java exception of a failing nested Spark call, so error classes survive the round trip.
 */
trait MvHandler {
  /** Result schema of a statement as a DDL string ("" for none); cheap, no side effects. */
  def resultSchema(kind: String, sqlText: String): AnyRef

  /**
   * Runs a statement in `session`, the session that runs it (a JDBC connection or a Spark
   * Connect client has its own: current database, SQL conf): its rows as a JSON array of
   * arrays in the declared schema, or a `Throwable`.
   */
  def execute(kind: String, sqlText: String, session: org.apache.spark.sql.SparkSession): AnyRef

  /**
   * Around a write to a tracked table: phase "BEFORE" returns a token (a `String`); phase
   * "AFTER" gets that token back once the write succeeded and records it in the change log,
   * phase "ABORT" once it failed, and records nothing.
   */
  def captureWrite(phase: String, database: String, table: String, detail: String): AnyRef

  /**
   * Runs a DELETE, UPDATE or MERGE on `database.table` in `session` from its plan of row
   * changes (`io.sparkmv.capture.RowLevelChanges`; null when `unsupported` says why there is
   * none): the result rows as JSON, or a `Throwable`. `assigned`: the columns an UPDATE
   * assigns; `clearedKeys`: what a DELETE's condition proves about the table after it
   * (`io.sparkmv.capture.ClearedKeys`, JSON; "" for nothing).
   */
  def rowLevelWrite(
      kind: String,
      database: String,
      table: String,
      changes: org.apache.spark.sql.DataFrame,
      unsupported: String,
      assigned: java.util.List[String],
      clearedKeys: String,
      session: org.apache.spark.sql.SparkSession): AnyRef

  /**
   * The error (a `Throwable`) for Spark's own `command` (e.g. "DROP VIEW") naming the
   * materialized view `database.view`, which that command would orphan.
   */
  def viewCommandRefused(command: String, database: String, view: String): AnyRef
}

/** The JVM-wide handler, set by `sparkmv.attach(spark)`. */
object MvHandlerRegistry {
  @volatile private var current: Option[MvHandler] = None
  @volatile private var tracking: Option[String] = None
  @volatile private var viewMarker: Option[String] = None

  /**
   * Attach `handler`; writes to tables carrying the property `trackingKey` are captured, and
   * views carrying `viewMarkerKey` are materialized views.
   */
  def register(handler: MvHandler, trackingKey: String, viewMarkerKey: String): Unit = {
    current = Some(handler)
    tracking = Some(trackingKey)
    viewMarker = Some(viewMarkerKey)
  }
  def unregister(): Unit = { current = None; tracking = None; viewMarker = None }
  def isRegistered: Boolean = current.isDefined

  /** The table property that marks a tracked table, while a handler is attached. */
  def trackingProperty: Option[String] = tracking

  /** The view property that marks a materialized view, while a handler is attached. */
  def viewMarkerProperty: Option[String] = viewMarker

  def viewCommandRefused(command: String, database: String, view: String): Throwable =
    handler.viewCommandRefused(command, database, view).asInstanceOf[Throwable]

  def captureWrite(phase: String, database: String, table: String, detail: String): String =
    rethrowOr(handler.captureWrite(phase, database, table, detail)).asInstanceOf[String]

  def rowLevelWrite(
      kind: String,
      database: String,
      table: String,
      changes: org.apache.spark.sql.DataFrame,
      unsupported: String,
      assigned: Seq[String],
      clearedKeys: String,
      session: org.apache.spark.sql.SparkSession): String = {
    import scala.jdk.CollectionConverters._
    rethrowOr(
      handler.rowLevelWrite(
        kind, database, table, changes, unsupported, assigned.asJava, clearedKeys, session))
      .asInstanceOf[String]
  }

  def resultSchema(kind: String, sqlText: String): String =
    rethrowOr(handler.resultSchema(kind, sqlText)).asInstanceOf[String]

  def execute(kind: String, sqlText: String, session: org.apache.spark.sql.SparkSession): AnyRef =
    rethrowOr(handler.execute(kind, sqlText, session))

  private def rethrowOr(result: AnyRef): AnyRef = result match {
    case t: Throwable => throw t
    case other => other
  }

  private def handler: MvHandler = current.getOrElse(
    throw SparkMvErrors.exception("MATERIALIZED_VIEW_HANDLER_NOT_ATTACHED"))
}
