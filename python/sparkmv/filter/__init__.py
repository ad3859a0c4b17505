"""Irrelevance filters: which changed rows cannot affect a view (Blakeley §4)."""
