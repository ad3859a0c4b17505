package io.sparkmv.testing

/**
 * TEST ONLY. On Spark 4.1, which has no changelog API (`TableCatalog.loadChangelog` is Spark
 * 4.2's), `testcat` is a plain `VersionedCatalog`: the class exists so that the tests' session
 * registers the same catalogs on every line; the tests that read its changelog are skipped on
 * 4.1 (`versioned_catalog.requires_changelog`).
 */
class ChangelogCatalog extends VersionedCatalog
