"""model/data/: see README.md beside this file."""
