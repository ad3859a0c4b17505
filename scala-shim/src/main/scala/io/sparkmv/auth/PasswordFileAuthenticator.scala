package io.sparkmv.auth

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}
import java.security.MessageDigest

import scala.jdk.CollectionConverters._

import javax.security.sasl.AuthenticationException
import org.apache.hive.service.auth.PasswdAuthenticationProvider

/**
 * The JDBC (Thrift) server's check of a user name and password against a password file, as
 * HiveServer2's `hive.server2.authentication=CUSTOM` calls it
 * (`hive.server2.custom.authentication.class`): one `user:password` per line, `#` comments
 * and blank lines ignored. The file is read at every login, so a changed file applies to the
 * next connection. HiveServer2 looks the class up and builds it with a fresh `HiveConf` of its
 * own, not the server's, so the class name is a JVM system property and the file's path is
 * set here, per JVM, before the server starts ([[PasswordFileAuthenticator.use]];
 * `sparkmv.server` sets both).
 */
class PasswordFileAuthenticator extends PasswdAuthenticationProvider {
  override def Authenticate(user: String, password: String): Unit = {
    val file = PasswordFileAuthenticator.file.getOrElse(
      throw new AuthenticationException("no password file is set: every login is refused"))
    val users =
      try PasswordFileAuthenticator.read(file)
      catch { case unreadable: IllegalArgumentException =>
        throw new AuthenticationException(unreadable.getMessage)
      }
    val expected = users.get(user)
    val given = Option(password).getOrElse("").getBytes(UTF_8)
    // Compared in constant time; an unknown user is compared too, so both take as long.
    val matches = MessageDigest.isEqual(expected.getOrElse("").getBytes(UTF_8), given)
    if (expected.isEmpty || !matches) {
      throw new AuthenticationException("wrong user name or password")
    }
  }
}

object PasswordFileAuthenticator {
  @volatile private var file: Option[Path] = None

  /**
   * Check logins against the password file at `path` from now on. Throws
   * IllegalArgumentException, saying why, if it cannot be read or holds no `user:password`.
   */
  def use(path: String): Unit = {
    val candidate = Paths.get(path).toAbsolutePath
    if (read(candidate).isEmpty) {
      throw new IllegalArgumentException(s"$candidate holds no user:password line")
    }
    file = Some(candidate)
  }

  private def read(path: Path): Map[String, String] = {
    if (!Files.isReadable(path)) {
      throw new IllegalArgumentException(s"$path cannot be read")
    }
    Files.readAllLines(path, UTF_8).asScala.iterator
      .map(_.strip)
      .filter(line => line.nonEmpty && !line.startsWith("#"))
      .map { line =>
        val colon = line.indexOf(':')
        if (colon <= 0) {
          throw new IllegalArgumentException(s"a line of $path is not user:password")
        }
        line.substring(0, colon) -> line.substring(colon + 1)
      }
      .toMap
  }
}
