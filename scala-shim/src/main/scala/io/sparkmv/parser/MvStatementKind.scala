package io.sparkmv.parser

import java.util.Locale

/**
 * The statement kinds the shim claims, recognised by a cheap look at the leading words
 * (comments skipped, case and whitespace ignored) before any real parsing.
 */
object MvStatementKind {
  val Create = "CREATE"
  val Refresh = "REFRESH"
  val Drop = "DROP"
  val Alter = "ALTER"
  val Describe = "DESCRIBE"
  val Show = "SHOW"
  val ShowRefreshes = "SHOW_REFRESHES"
  val Explain = "EXPLAIN"

  private val ExplainModes = Set("EXTENDED", "FORMATTED", "CODEGEN", "COST", "LOGICAL")

  /** The kind of an MV statement, or None for every other statement. */
  def of(sqlText: String): Option[String] = {
    val words = leadingWords(sqlText, 6)
    kindOfWords(words).orElse {
      words match {
        case "EXPLAIN" :: mode :: rest if ExplainModes.contains(mode) =>
          kindOfWords(rest).map(_ => Explain)
        case "EXPLAIN" :: rest => kindOfWords(rest).map(_ => Explain)
        case _ => None
      }
    }
  }

  private def kindOfWords(words: List[String]): Option[String] = words match {
    case "CREATE" :: "MATERIALIZED" :: "VIEW" :: _ => Some(Create)
    case "CREATE" :: "OR" :: "REPLACE" :: "MATERIALIZED" :: "VIEW" :: _ => Some(Create)
    case "REFRESH" :: "MATERIALIZED" :: "VIEW" :: _ => Some(Refresh)
    case "DROP" :: "MATERIALIZED" :: "VIEW" :: _ => Some(Drop)
    case "ALTER" :: "MATERIALIZED" :: "VIEW" :: _ => Some(Alter)
    case ("DESCRIBE" | "DESC") :: "MATERIALIZED" :: "VIEW" :: _ => Some(Describe)
    case "SHOW" :: "MATERIALIZED" :: "VIEWS" :: _ => Some(Show)
    case "SHOW" :: "MATERIALIZED" :: "VIEW" :: "REFRESHES" :: _ => Some(ShowRefreshes)
    case _ => None
  }

  /**
   * Up to `limit` leading bare words, upper-cased, skipping whitespace, `--` line comments and
   * (nested) bracketed comments. Stops at the first character that is not part of a word.
   */
  def leadingWords(sqlText: String, limit: Int): List[String] = {
    val words = List.newBuilder[String]
    var count = 0
    var i = 0
    val n = sqlText.length
    var stop = false
    while (!stop && count < limit && i < n) {
      val c = sqlText.charAt(i)
      if (c.isWhitespace) {
        i += 1
      } else if (sqlText.startsWith("--", i)) {
        while (i < n && sqlText.charAt(i) != '\n') i += 1
      } else if (sqlText.startsWith("/*", i)) {
        i = skipBracketedComment(sqlText, i)
      } else if (Character.isLetter(c)) {
        val start = i
        while (i < n && (Character.isLetterOrDigit(sqlText.charAt(i)) || sqlText.charAt(i) == '_')) {
          i += 1
        }
        words += sqlText.substring(start, i).toUpperCase(Locale.ROOT)
        count += 1
      } else {
        stop = true
      }
    }
    words.result()
  }

  private def skipBracketedComment(sqlText: String, from: Int): Int = {
    var depth = 0
    var i = from
    val n = sqlText.length
    while (i < n) {
      if (sqlText.startsWith("/*", i)) {
        depth += 1
        i += 2
      } else if (sqlText.startsWith("*/", i)) {
        depth -= 1
        i += 2
        if (depth == 0) return i
      } else {
        i += 1
      }
    }
    n
  }
}
