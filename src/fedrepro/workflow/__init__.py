"""Build plumbing: what a workflow job does around the library (jobs), code dependencies, the cost plan."""
