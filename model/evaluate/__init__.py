"""model/evaluate/: see README.md beside this file."""
