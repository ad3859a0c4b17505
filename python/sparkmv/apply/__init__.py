"""Apply stage: write a view's new contents and make them visible atomically."""
