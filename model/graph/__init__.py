"""model/graph/: see README.md beside this file."""
