package io.sparkmv.bridge

import py4j.{GatewayServer, PythonClient}

/**
 * The JVM's end of py4j's connections to Python.
 *
 * py4j writes a response through an 8 KiB `BufferedWriter`, so a longer one leaves in several
 * writes. With Nagle's algorithm on (py4j leaves it on), the last, partial write waits for the
 * acknowledgement of the ones before it, and the Python end delays that acknowledgement
 * (Linux: 40 ms). A response of 8-64 KiB then takes about 45 ms more than a shorter one: the
 * facts of a refresh, for instance, once its base tables hold a few dozen files.
 */
object Py4jSockets {

  /**
   * Turns Nagle's algorithm off on the connection the calling JVM thread calls Python back
   * over, if py4j keeps one per thread (`PythonClient`, PySpark's pinned-thread mode). Called
   * from a handler, the calling thread is the one that called the handler, and the handler's
   * own calls into the JVM come in over that same connection. Returns whether there was one.
   */
  def noDelay(gatewayServer: AnyRef): Boolean = gatewayServer match {
    case server: GatewayServer =>
      server.getCallbackClient match {
        case client: PythonClient =>
          Option(client.getPerThreadConnection).exists { connection =>
            connection.getSocket.setTcpNoDelay(true)
            true
          }
        case _ => false
      }
    case _ => false
  }
}
