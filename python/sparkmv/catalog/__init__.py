"""Catalog stage: view metadata and counters as ``sparkmv.`` table properties of the view."""
