"""model/sparse/: see README.md beside this file."""
