"""model/export/: see README.md beside this file."""
