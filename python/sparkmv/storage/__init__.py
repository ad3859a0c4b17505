"""Storage: a view's snapshots, their hash buckets and masks, and the names of its stored
columns."""
