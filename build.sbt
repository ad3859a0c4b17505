// For users who build the shim with sbt; nothing in this repository needs sbt
// (`make jar` compiles it offline with the Scala compiler shipped in pyspark's wheel).
ThisBuild / scalaVersion := "2.13.18"
ThisBuild / organization := "io.sparkmv"
ThisBuild / version := "0.1.0"

// The Spark to build against (`sbt -Dspark.version=4.2.0 package` for the 4.2 line). Its line
// (major.minor) picks the line-specific sources, src/main/scala-spark-<line>, as sparkmv.jar does.
val sparkVersion = sys.props.getOrElse("spark.version", "4.3.0")
val sparkLine = sparkVersion.split('.').take(2).mkString(".")

lazy val shim = (project in file("scala-shim"))
  .settings(
    name := "sparkmv-shim",
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % "provided",
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % "provided",
      "org.apache.spark" %% "spark-hive-thriftserver" % sparkVersion % "provided"
    ),
    Compile / unmanagedSourceDirectories +=
      baseDirectory.value / "src" / "main" / s"scala-spark-$sparkLine",
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
