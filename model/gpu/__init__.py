"""model/gpu/: see README.md beside this file."""
