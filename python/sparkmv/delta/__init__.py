"""Delta rules: the change of a view derived from the changes of its base tables, as Z-sets
(``docs/architecture.md``), one module per operator, registered in ``rules.RULES``."""
