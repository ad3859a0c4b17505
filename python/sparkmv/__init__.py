"""sparkmv: incremental materialized views for Apache Spark.

import sparkmv
spark = sparkmv.session()      # local Spark + extension + persistent catalog
sparkmv.attach(spark)          # for a session built elsewhere with the extension conf
sparkmv.jar_path()             # the extension jar, for --jars
sparkmv.serve(spark)           # JDBC and Spark Connect servers until Ctrl-C (see serve)
"""

from sparkmv.config import EXTENSION_CLASS
from sparkmv.errors import ErrorClass, SparkMvError
from sparkmv.jar import jar_path
from sparkmv.server import Servers, serve
from sparkmv.spark_session import attach, session

__version__ = "0.1.0"

__all__ = [
    "EXTENSION_CLASS",
    "ErrorClass",
    "Servers",
    "SparkMvError",
    "attach",
    "jar_path",
    "serve",
    "session",
]
