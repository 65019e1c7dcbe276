"""The document form's rule (model/graph/document_form.py writes it into the graph; its module
docstring has the why): a document's lexical part keeps its length, g = min(|l_raw| / c, g_max),
a slack component keeps every vector's norm Mx (then ÷ Mx), and the last SPREAD components are
turned by a normalised Hadamard matrix in both forms. served_form is the served vectors in numpy,
which the parity fixture (model/graph/parity.py) and the dev-set evaluation read."""
import numpy as np

from model.rules.bm25 import raw_norms

MARKER = "[unused1]"
SPREAD = 64  # the last components the slack is spread over (inside the last Matryoshka block)


def max_norm2(max_lexical_share, g_max):
    """Mx², the largest |d|² a document's vector can reach (its lexical part at g_max)."""
    return 1 + max_lexical_share * (g_max ** 2 - 1)


def document_scale(raw, c, g_max):
    """g per document: its |l_raw| relative to the typical document's c, at most g_max."""
    return np.minimum(raw / c, g_max)


def hadamard(n):
    """The n × n Hadamard matrix (Sylvester's, n a power of 2) ÷ √n: symmetric, orthogonal, every entry ±1/√n."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    if h.shape[0] != n:
        raise ValueError(f"{n} is not a power of 2")
    return h / np.sqrt(n)


def spread(vectors):
    """The served layout's last step (numpy): the last SPREAD components times hadamard(SPREAD)."""
    out = np.array(vectors, dtype=np.float64)
    out[:, -SPREAD:] = out[:, -SPREAD:] @ hadamard(SPREAD)
    return out


def form_constants(record):
    """(c, g_max, Mx²) of a folder's training record (its "document_form" and shares)."""
    form = record["document_form"]
    max_lexical = max(record["shares"]["long"][2], record["shares"]["short"][2])
    return form["c"], form["g_max"], max_norm2(max_lexical, form["g_max"])


def served_form(record, ids, bucket, weight, avg_len, k1, b, dense, lexical, rotation, document, canonical=None):
    """The served vectors in numpy (the graph's arithmetic): `dense` the dense parts times their
    shares' roots, `lexical` the unit lexical part times its share's root, `rotation` the
    Matryoshka M, `canonical` the lexical part's stem classes (or None); the document form when
    `document`, else the query form. Rows unit length."""
    if not document:
        out = np.concatenate([dense, lexical], axis=1) @ rotation
        out[:, -1] = 0.0
        return spread(out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12))  # the embedder normalises
    c, g_max, m_x2 = form_constants(record)
    g = document_scale(raw_norms(ids, bucket, weight, avg_len, k1, b, canonical), c, g_max)
    head = (np.concatenate([dense, lexical * g[:, None]], axis=1) @ rotation)[:, :-1]
    slack = np.sqrt(np.maximum(m_x2 - (head ** 2).sum(1), 0))
    return spread(np.concatenate([head, slack[:, None]], axis=1) / np.sqrt(m_x2))
