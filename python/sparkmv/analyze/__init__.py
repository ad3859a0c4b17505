"""Analyze stage: check a view's query and decide how it can be maintained."""
