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
    )
  )
