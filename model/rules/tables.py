"""A folder's lexical tables and Matryoshka rotation as its graph holds them (what the numpy
recipes read back to compute what the graph computes)."""
import functools
import os

import numpy as np

from model.rules.bm25 import B, K1, bm25_of

OUTPUT = "last_hidden_state"
TABLES = ("lexical.bucket", "lexical.weight", "lexical.k1_plus_1", "lexical.k1_fixed", "lexical.k1_per_length", "matryoshka.rotation")
OPTIONAL_TABLES = ("lexical.canonical",)  # v4.4's stem classes


def read_tables(folder):
    """(bucket, weight, avg_len, rotation) of a folder's v2 lexical part and Matryoshka rotation,
    read from its graph (loaded once), or None."""
    init = graph_initializers(folder)
    if init is None:
        return None
    _, _, avg_len = bm25_of(init)
    return init["lexical.bucket"], init["lexical.weight"], avg_len, init["matryoshka.rotation"].astype(np.float64)


def graph_initializers(folder):
    """The lexical tables and rotation of a folder's graph, or None; loaded once per file version
    (read_tables and read_bm25 both read them)."""
    path = os.path.join(folder, "onnx", "model.onnx")
    stat = os.stat(path)
    return _graph_initializers(os.path.abspath(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _graph_initializers(path, mtime_ns, size):
    import onnx
    from onnx import numpy_helper
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer if t.name in TABLES + OPTIONAL_TABLES}
    return init if all(name in init for name in TABLES) else None


def read_canonical(folder):
    """The stem classes the folder's lexical part reads ids through (model/sparse/stem_classes.py), or None."""
    init = graph_initializers(folder)
    return None if init is None else init.get("lexical.canonical")


def read_bm25(folder):
    """(k1, b) of a folder's lexical part (model/graph/document_form.py may have changed them from K1, B)."""
    init = graph_initializers(folder)
    if init is None:
        return K1, B
    k1, b, _ = bm25_of(init)
    return k1, b
