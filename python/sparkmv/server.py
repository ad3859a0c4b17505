"""``serve()``: a JDBC (Thrift) and a Spark Connect server in the driver that holds the bridge.

Both are Spark's own (``HiveThriftServer2`` and ``SparkConnectService``, in pyspark's wheel),
started over py4j in this process's JVM, so every client's materialized view statements reach
this process's handler; each runs in the client's own session (``bridge.Handler.context_of``).
Clients' sessions get ``config.SERVER_SESSION_CONF``: errors reach them as Spark errors (class,
message, SQLSTATE), not as JVM stack traces.

Access: both servers listen on ``host`` (loopback unless told otherwise). The Spark Connect
server can require a pre-shared token (Spark's own ``spark.connect.authenticate.token``:
clients connect to ``sc://host:port/;token=...``), the JDBC server a user name and password
from a password file (HiveServer2's ``CUSTOM`` authentication with the shim's
``PasswordFileAuthenticator``). A server on a non-loopback address without them gets a
warning: anyone who reaches it runs any statement as this application.

Shutdown (SIGINT, SIGTERM, or ``Servers.stop``): the Spark Connect server stops accepting
calls, the handler refuses new statements (SERVER_SHUTTING_DOWN), and the statements sparkmv is
running (a refresh, a captured write) get up to ``grace_seconds`` to finish; a second signal
cuts the wait short. Then both servers stop, cancelling what still runs: such a statement fails
whole, since refreshes and copy-on-write writes commit in one metastore call. (The JDBC server
keeps listening during the wait: stopping its listener interrupts the threads its statements
run in.)

Schedules: ``serve`` also starts the scheduler (``commands/scheduler.py``), which refreshes the
views that have a ``SCHEDULE EVERY`` or ``TARGET LAG`` in this process, in the application's
own session; ``Servers.stop`` stops it first (it ends after the refresh it is running).
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import SparkSession

from sparkmv.bridge import running
from sparkmv.commands.scheduler import Scheduler
from sparkmv.config import (
    CONNECT_BIND_ADDRESS_CONF,
    CONNECT_PORT,
    CONNECT_PORT_CONF,
    CONNECT_TOKEN_CONF,
    CONNECT_TOKEN_ENV,
    EXTENSION_CLASS,
    PASSWORD_FILE_AUTHENTICATOR_CLASS,
    SERVER_APPLICATION_CONF,
    SERVER_HOST,
    SERVER_SESSION_CONF,
    SERVER_SHUTDOWN_GRACE_SECONDS,
    THRIFT_AUTHENTICATION_CONF,
    THRIFT_BIND_HOST_CONF,
    THRIFT_CUSTOM_AUTHENTICATION_CLASS_CONF,
    THRIFT_PORT,
    THRIFT_PORT_CONF,
    session_conf,
)
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.jar import jar_path
from sparkmv.jvm import StaticMethods, helper
from sparkmv.spark_session import ensure_attached

THRIFT = "JDBC (Thrift)"
CONNECT = "Spark Connect"
_THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
_CONNECT_PACKAGE = "org.apache.spark.sql.connect.service"
_CONNECT_SERVICE = "SparkConnectService"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_SIGNAL_POLL_SECONDS = 0.2
_DRIVER_EXIT_WAIT_SECONDS = 10.0
_RESULT_FETCH_SECONDS = 1.0


@dataclass
class Servers:
    """The servers ``serve`` started in ``spark``'s JVM (a port of 0: that one is off)."""

    spark: SparkSession
    thrift_port: int
    connect_port: int
    host: str = SERVER_HOST
    thrift: Any = None  # the JVM's HiveThriftServer2
    thrift_authenticated: bool = False
    connect_authenticated: bool = False
    scheduler: Scheduler | None = None  # the views' scheduler, while it runs
    stopped: bool = field(default=False, init=False)

    def urls(self) -> list[tuple[str, str]]:
        """``(server, url)`` of each running server, for its clients."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        found = []
        if self.thrift is not None:
            found.append((THRIFT, f"jdbc:hive2://{host}:{self.thrift_port}"))
        if self.connect_port:
            found.append((CONNECT, f"sc://{host}:{self.connect_port}"))
        return found

    def announcements(self) -> list[str]:
        """What ``serve`` prints once the servers accept clients (``announcements``)."""
        authenticated = {THRIFT: self.thrift_authenticated, CONNECT: self.connect_authenticated}
        return announcements(
            self.host, [(name, url, authenticated[name]) for name, url in self.urls()]
        )

    def stop(
        self,
        grace_seconds: float = SERVER_SHUTDOWN_GRACE_SECONDS,
        cut_short: Callable[[], bool] = lambda: False,
        out: TextIO | None = None,
    ) -> None:
        """Refuse new statements, let sparkmv's running ones finish (at most
        ``grace_seconds``, while ``cut_short()`` is false), then stop both servers.

        The Spark session stays up (the caller owns it); the handler accepts statements
        again once the servers are gone.
        """
        if self.stopped:
            return
        self.stopped = True
        if self.connect_port:
            _connect_service(self.spark).server().shutdown()  # running calls go on
        running.refuse_new(True)
        try:
            if self.scheduler is not None:  # no scheduled refresh starts from now on
                self.scheduler.stop(timeout=grace_seconds)
                self.scheduler = None
            _let_running_finish(grace_seconds, cut_short, out)
            self._stop_servers()
        finally:
            running.refuse_new(False)

    def _stop_servers(self) -> None:
        """Stop both servers: their sessions close, and what still runs is cancelled."""
        if self.thrift is not None:
            self.thrift.stop()
        if self.connect_port:
            jvm: Any = self.spark._jvm
            _connect_class(self.spark).stop(jvm.scala.Option.empty(), jvm.scala.Option.empty())


_REQUIRED = {
    THRIFT: ("user name and password required", "--password-file"),
    CONNECT: ("token required: sc://host:port/;token=...", "--token-file"),
}


def announcements(host: str, running: Sequence[tuple[str, str, bool]]) -> list[str]:
    """A line per running server ``(name, url, authenticated)``: its URL and what it requires;
    then, on a ``host`` that is not loopback, a warning per server that anyone who reaches
    it may use."""
    lines = [
        f"{name} server on {url}" + (f" ({_REQUIRED[name][0]})" if authenticated else "")
        for name, url, authenticated in running
    ]
    if not is_loopback(host):
        lines.extend(
            f"warning: the {name} server listens on {host} without authentication: anyone "
            f"who reaches it runs any statement as this application ({_REQUIRED[name][1]} "
            "requires credentials)"
            for name, _, authenticated in running
            if not authenticated
        )
    return lines


def _let_running_finish(
    grace_seconds: float, cut_short: Callable[[], bool], out: TextIO | None
) -> None:
    """Wait for the statements sparkmv is running, then a moment for their clients to fetch
    the results (a JDBC client fetches them with calls of its own once the statement ran)."""
    if not running.count:
        return
    _say(
        out,
        f"waiting up to {grace_seconds:.0f} s for {running.count} running statement(s); "
        "Ctrl-C again stops them now",
    )
    if not running.wait_until_idle(grace_seconds, cut_short):
        _say(out, f"stopping {running.count} running statement(s)")
        return
    deadline = time.monotonic() + _RESULT_FETCH_SECONDS
    while time.monotonic() < deadline and not cut_short():
        time.sleep(_SIGNAL_POLL_SECONDS)


def serve(
    spark: SparkSession,
    thrift_port: int = THRIFT_PORT,
    connect_port: int = CONNECT_PORT,
    *,
    host: str = SERVER_HOST,
    token: str | None = None,
    password_file: str | os.PathLike[str] | None = None,
    block: bool = True,
    grace_seconds: float = SERVER_SHUTDOWN_GRACE_SECONDS,
    out: TextIO = sys.stdout,
    schedule: bool = True,
) -> Servers:
    """Start a JDBC (Thrift) server on ``thrift_port`` and a Spark Connect server on
    ``connect_port`` (0 turns one off) in ``spark``'s driver, both listening on ``host``
    (loopback by default; ``"0.0.0.0"``: every IPv4 interface), and print a line with each
    one's URL once it accepts clients.

    ``token``: Spark Connect clients must pass it (``sc://host:port/;token=...``).
    ``password_file``: JDBC clients must log in with a user name and password listed in it
    (one ``user:password`` per line; read at every login). On a non-loopback ``host``, a
    server without them gets a printed warning.

    ``schedule``: run the scheduler too (``commands/scheduler.py``), which refreshes the views
    that have a ``SCHEDULE EVERY`` or ``TARGET LAG``; stopped with the servers.

    With ``block`` (the default; main thread only), serve until SIGINT (Ctrl-C) or SIGTERM,
    then stop the servers (``Servers.stop``) and return; stopping the session is the
    caller's. Without, return at once: call ``stop()`` on the result.

    ``spark`` must have the sparkmv extension and ``config.SERVER_APPLICATION_CONF``:
    ``sparkmv.session(warehouse, **SERVER_APPLICATION_CONF)`` (it is attached if it was not).
    Raises SERVER_NEEDS_APPLICATION_CONF without that conf, SERVER_NEEDS_DRIVER_CLASS_PATH for
    a JDBC server in an application that loaded the shim from ``--jars`` only, and
    SERVER_START_FAILED when a port cannot be used and SERVER_CREDENTIALS_UNUSABLE for a
    password file without credentials (nothing is left running then).
    """
    if block and threading.current_thread() is not threading.main_thread():
        raise ValueError(
            "serve(block=True) waits for signals, which only the main thread "
            "gets; elsewhere call serve(block=False) and stop() the result"
        )
    ensure_attached(spark)
    _require_application_conf(spark)
    if thrift_port:
        _require_shim_on_class_path(spark)
    _set_client_session_defaults(spark)
    servers = Servers(spark, thrift_port, connect_port, host)
    try:
        if thrift_port:
            servers.thrift = _start_thrift(spark, thrift_port, host, password_file)
            servers.thrift_authenticated = password_file is not None or _thrift_authenticates(spark)
        if connect_port:
            _start_connect(spark, connect_port, host, token)
            servers.connect_authenticated = token is not None or _connect_authenticates(spark)
    except BaseException:
        servers.connect_port = 0  # the last to start: it did not
        servers.stop(grace_seconds=0)
        raise
    if schedule:
        servers.scheduler = Scheduler(spark)
        servers.scheduler.start()
    for line in servers.announcements():
        _say(out, line)
    if block:
        serve_until_signalled(servers, grace_seconds, out)
    return servers


def serve_until_signalled(servers: Servers, grace_seconds: float, out: TextIO) -> None:
    """Block until SIGINT or SIGTERM, then stop ``servers``; a second signal cuts the wait
    for running statements short. Raises SPARK_DRIVER_EXITED if the driver's JVM exits
    before a signal came (killed, out of memory, ...); one that the signal stopped too (sent
    to the whole process group) is a stop."""
    spark = servers.spark
    with _counting_signals() as received:
        while not received():
            if not driver_alive(spark):
                raise _driver_exited(spark)
            time.sleep(_SIGNAL_POLL_SECONDS)
        _say(out, "stopping")
        try:
            servers.stop(grace_seconds, cut_short=lambda: received() > 1, out=out)
        except (Py4JError, OSError):
            if driver_alive(spark, wait_seconds=_DRIVER_EXIT_WAIT_SECONDS):
                raise
            _say(out, f"the Spark driver's JVM stopped first (exit code {_exit_code(spark)})")
    _say(out, "stopped")


def driver_alive(spark: SparkSession, wait_seconds: float = 0.0) -> bool:
    """Whether the driver's JVM still runs, waiting up to ``wait_seconds`` for it to end (no
    py4j call: the JVM process PySpark started; True for one it did not start)."""
    gateway: Any = spark.sparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        return True
    try:
        process.wait(wait_seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


def _driver_exited(spark: SparkSession) -> SparkMvError:
    return SparkMvError(ErrorClass.SPARK_DRIVER_EXITED, code=_exit_code(spark))


def _exit_code(spark: SparkSession) -> int:
    """The exit code of the driver's JVM, which has exited (negative: killed by a signal)."""
    gateway: Any = spark.sparkContext._gateway
    code: int = gateway.proc.returncode
    return code


@contextmanager
def _counting_signals() -> Iterator[Callable[[], int]]:
    """SIGINT and SIGTERM counted instead of acted on, for the block; yields the count.

    The handlers only count: Python runs them in the main thread between any two bytecodes,
    where raising (KeyboardInterrupt) could cut a py4j call in half.
    """
    count = [0]

    def handle(signum: int, frame: FrameType | None) -> None:
        count[0] += 1

    previous = {number: signal.signal(number, handle) for number in _STOP_SIGNALS}
    try:
        yield lambda: count[0]
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _set_client_session_defaults(spark: SparkSession) -> None:
    """``SERVER_SESSION_CONF`` for the sessions the servers create from now on (each takes
    the application's conf), unless the application's conf sets a key already."""
    conf: Any = spark.sparkContext._conf  # the JVM SparkContext's own SparkConf
    for key, value in SERVER_SESSION_CONF.items():
        if not conf.contains(key):
            conf.set(key, value)


def _require_application_conf(spark: SparkSession) -> None:
    """Refuse to serve clients that would not see each other's writes
    (``config.SERVER_APPLICATION_CONF`` says why)."""
    for key, value in SERVER_APPLICATION_CONF.items():
        actual = spark.conf.get(key, None)
        if actual != value:
            raise SparkMvError(
                ErrorClass.SERVER_NEEDS_APPLICATION_CONF,
                key=key,
                value=value,
                actual="not set" if actual is None else actual,
                reason="each client has a session of its own, and a session would not see "
                "the tables as other sessions changed them",
            )


def _require_shim_on_class_path(spark: SparkSession) -> None:
    """Refuse a JDBC server whose first ended session would break sparkmv: the shim must be
    on the driver's class path (``config.DRIVER_CLASS_PATH_CONF`` says why)."""
    jvm: Any = spark._jvm
    class_file = EXTENSION_CLASS.replace(".", "/") + ".class"
    if jvm.java.lang.ClassLoader.getSystemClassLoader().getResource(class_file) is None:
        raise SparkMvError(ErrorClass.SERVER_NEEDS_DRIVER_CLASS_PATH, jar=jar_path())


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``localhost``, ``127.0.0.1``,
    ``::1``): only this machine reaches a server bound there."""
    try:
        found = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(
        ipaddress.ip_address(str(address[4][0]).split("%")[0]).is_loopback for address in found
    )


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The Spark Connect token kept in the file at ``path`` (its first line), so that it
    shows in no command line; SERVER_CREDENTIALS_UNUSABLE if unreadable or empty."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as error:
        detail = error.strerror or str(error)
        raise _unusable(f"token file {path}", detail, "--token-file") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise _unusable(f"token file {path}", "its first line is empty", "--token-file")
    return token


def _unusable(what: str, detail: str, option: str) -> SparkMvError:
    hints = {
        "--token-file": "Give a file whose first line is the token (--token-file).",
        "--password-file": "Give a file of user:password lines (--password-file).",
    }
    return SparkMvError(
        ErrorClass.SERVER_CREDENTIALS_UNUSABLE, what=what, detail=detail, hint=hints[option]
    )


def _start_thrift(
    spark: SparkSession, port: int, host: str, password_file: str | os.PathLike[str] | None
) -> Any:
    """HiveThriftServer2 on ``host:port``, listening when this returns, checking logins
    against ``password_file`` if one is given; its settings are read from the session conf
    as it starts."""
    server_class = helper(spark, _THRIFT_SERVER_CLASS)
    conf = {THRIFT_PORT_CONF: str(port), THRIFT_BIND_HOST_CONF: host}
    if password_file is not None:
        _use_password_file(spark, os.fspath(password_file))
        conf[THRIFT_AUTHENTICATION_CONF] = "CUSTOM"
        conf[THRIFT_CUSTOM_AUTHENTICATION_CLASS_CONF] = PASSWORD_FILE_AUTHENTICATOR_CLASS
    try:
        with session_conf(spark, conf):
            return server_class.startWithSparkSession(spark._jsparkSession, False)
    except Py4JJavaError as error:
        raise _start_failed(THRIFT, host, port, "--thrift-port", error) from None


def _use_password_file(spark: SparkSession, path: str) -> None:
    """Point the shim's authenticator at ``path``, and HiveServer2 at the authenticator.

    HiveServer2 looks the class up, and builds it, with a fresh ``HiveConf`` of its own
    (``CustomAuthenticationProviderImpl``), not the server's: it sees the JVM's system
    properties, where the class name is set, and no path, which the authenticator keeps."""
    try:
        helper(spark, PASSWORD_FILE_AUTHENTICATOR_CLASS).use(path)
    except Py4JJavaError as error:
        raise _unusable(
            f"password file {path}", _root_cause(error.java_exception), "--password-file"
        ) from None
    jvm: Any = spark._jvm
    jvm.java.lang.System.setProperty(
        THRIFT_CUSTOM_AUTHENTICATION_CLASS_CONF, PASSWORD_FILE_AUTHENTICATOR_CLASS
    )


def _thrift_authenticates(spark: SparkSession) -> bool:
    """Whether the application's conf gives HiveServer2 an authentication of its own."""
    for key in (THRIFT_AUTHENTICATION_CONF, f"spark.hadoop.{THRIFT_AUTHENTICATION_CONF}"):
        mode = spark.conf.get(key, None)
        if mode is not None and mode.upper() != "NONE":
            return True
    return False


def _connect_authenticates(spark: SparkSession) -> bool:
    """Whether Spark Connect has a token from the application's conf or the environment."""
    conf: Any = spark.sparkContext._conf
    return bool(conf.contains(CONNECT_TOKEN_CONF) or os.environ.get(CONNECT_TOKEN_ENV))


def _start_connect(spark: SparkSession, port: int, host: str, token: str | None) -> None:
    """SparkConnectService on ``host:port``, requiring ``token`` if one is given, listening
    when this returns; its settings are read from the application's conf as it starts."""
    conf: Any = spark.sparkContext._conf
    conf.set(CONNECT_PORT_CONF, str(port))
    conf.set(CONNECT_BIND_ADDRESS_CONF, host)
    if token is not None:
        conf.set(CONNECT_TOKEN_CONF, token)
    try:
        _connect_class(spark).start(spark._jsc.sc())
    except Py4JJavaError as error:
        raise _start_failed(CONNECT, host, port, "--connect-port", error) from None


def _start_failed(
    server: str, host: str, port: int, option: str, error: Py4JJavaError
) -> SparkMvError:
    return SparkMvError(
        ErrorClass.SERVER_START_FAILED,
        server=server,
        address=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        detail=_root_cause(error.java_exception),
        option=option,
    )


def _root_cause(throwable: Any) -> str:
    """The innermost cause's message, e.g. ``Address already in use``."""
    while throwable.getCause() is not None:
        throwable = throwable.getCause()
    return str(throwable.getMessage() or throwable.getClass().getSimpleName()).rstrip(".")


def _connect_class(spark: SparkSession) -> StaticMethods:
    """``SparkConnectService``'s static methods (start, stop)."""
    return helper(spark, f"{_CONNECT_PACKAGE}.{_CONNECT_SERVICE}")


def _connect_service(spark: SparkSession) -> Any:
    """The ``SparkConnectService`` object itself: its gRPC server has no static accessor."""
    return getattr(helper(spark, f"{_CONNECT_PACKAGE}.{_CONNECT_SERVICE}$"), "MODULE$")


def _say(out: TextIO | None, message: str) -> None:
    if out is not None:
        print(f"sparkmv: {message}", file=out, flush=True)
