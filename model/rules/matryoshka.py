"""The Matryoshka prefixes: the listed vector sizes a folder's rotation (model/graph/matryoshka.py)
orders so that each prefix is a good vector of its own, and the name of the rotation in the graph.
lexembed.json "dimensions".matryoshka lists them for the server (a request's `dimensions`)."""

PREFIXES = (32, 64, 128, 256, 512, 1024)
ROTATION = "matryoshka.rotation"


def listed_prefixes(width, sizes=PREFIXES):
    """The sizes a folder `width` wide lists (its own width is always served, never listed here)."""
    return [d for d in sizes if d <= width]
