"""Delta rules: the change of a view derived from the changes of its base tables (DESIGN §4,
§6), one module per operator, registered in ``rules.RULES``."""
