package io.sparkmv.parser

import org.apache.spark.sql.catalyst.parser.ParserInterface

/**
 * Spark 4.2's `ParserInterface` has no methods beyond those [[SparkMvParser]] delegates
 * itself (no `parseTemporalTableIdentifier`, no `splitStatements`: those are 4.3's, delegated
 * in `scala-spark-4.3`), so on 4.2 this trait adds nothing. It exists so that SparkMvParser
 * is one source for both lines; `sparkmv.jar` compiles this directory only against a 4.2
 * pyspark.
 */
trait ParserCompat extends ParserInterface {
  protected def delegate: ParserInterface
}
