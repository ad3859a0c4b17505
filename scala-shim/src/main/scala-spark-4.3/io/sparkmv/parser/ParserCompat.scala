package io.sparkmv.parser

import org.apache.spark.sql.catalyst.parser.{ParserInterface, SqlStatementSplitResult, TemporalIdentifier}

/**
 * The part of Spark 4.3's `ParserInterface` that Spark 4.2's lacks, delegated as the rest of
 * [[SparkMvParser]] is. This directory (`scala-spark-4.3`) is compiled only against a 4.3
 * pyspark (`sparkmv.jar` picks it); `scala-spark-4.2` holds this trait for 4.2.
 */
trait ParserCompat extends ParserInterface {
  protected def delegate: ParserInterface

  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
  override def splitStatements(sqlText: String): SqlStatementSplitResult =
    delegate.splitStatements(sqlText)
}
