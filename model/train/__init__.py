"""model/train/: see README.md beside this file."""
