"""model/runtime/: see README.md beside this file."""
