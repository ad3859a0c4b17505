"""Plan stage: choose how a refresh is computed."""
