// For users who build the shim with sbt; nothing in this repository needs sbt
// (`make jar` compiles it offline with the Scala compiler shipped in pyspark's wheel).
ThisBuild / scalaVersion := "2.13.18"
ThisBuild / organization := "io.sparkmv"
ThisBuild / version := "0.1.0"

lazy val shim = (project in file("scala-shim"))
  .settings(
    name := "sparkmv-shim",
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % "4.3.0" % "provided",
      "org.apache.spark" %% "spark-catalyst" % "4.3.0" % "provided",
      "org.apache.spark" %% "spark-hive-thriftserver" % "4.3.0" % "provided"
    ),
    // The error classes the jar carries, written from their one definition,
    // python/sparkmv/errors.py (which needs only the standard library), as sparkmv.jar does.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "io" / "sparkmv" / "error-conditions.json"
      val errors = (ThisBuild / baseDirectory).value / "python" / "sparkmv" / "errors.py"
      val script =
        "import importlib.util, sys; " +
          "spec = importlib.util.spec_from_file_location('errors', sys.argv[1]); " +
          "errors = sys.modules['errors'] = importlib.util.module_from_spec(spec); " +
          "spec.loader.exec_module(errors); " +
          "sys.stdout.write(errors.error_conditions_json())"
      val python = sys.env.getOrElse("PYTHON", "python3")
      IO.write(out, scala.sys.process.Process(Seq(python, "-c", script, errors.toString)).!!)
      Seq(out)
    }.taskValue
  )
