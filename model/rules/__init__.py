"""model/rules/: see README.md beside this file."""
