"""The sparse vectors' rule (POST /v1/embeddings/sparse; src/embedder/sparse.ts applies the same):
the unhashed lexical weights, word pairs (model/sparse/word_pairs.py) and query neighbours
(model/sparse/query_neighbours.py), and the readers of lexembed.json's "sparse" entry."""
import base64

import numpy as np

from model.rules.bm25 import B, K1, canonical_ids, saturation


def sparse_vector(ids, idf, avg_len, k1=K1, b=B, weighting="tf", weight=None, canonical=None, bigrams=None, expansion=None):
    """The unhashed weights (src/embedder/sparse.ts's rule): (indices ascending, values). weighting
    tf: the saturated tf; idf: times the model's term weight (`weight`, read_sparse_weight);
    relative: times that weight ÷ idf (for a store that multiplies in the corpus's own idf). With
    `canonical` (read_sparse_canonical) a stem class is one index, its smallest piece. With
    `bigrams` (read_sparse_bigrams, v4.5) each pair of neighbouring counted pieces whose second
    starts a word adds β · saturated pair count (times the geometric mean of the two pieces'
    factors for idf and relative) at index V + ((a·V + c) mod slots), after every piece index.
    With `expansion` (read_sparse_expansion, v4.6; pass it for queries only) each counted piece p
    proposes its listed neighbours n, and a neighbour the text does not hold gets the largest
    α · sim(p, n) · sat(tf_p) (× n's factor for idf and relative) among its proposers."""
    ids = canonical_ids(ids, canonical)
    ids = ids[idf[ids] > 0]
    pieces, tf = np.unique(ids, return_counts=True)
    saturate = lambda t: saturation(t, len(ids), avg_len, k1, b)  # noqa: E731
    # the weighting's factor for counted pieces (idf > 0 by now)
    if weighting == "idf":
        factor = lambda p: weight[p]  # noqa: E731
    elif weighting == "relative":
        factor = lambda p: weight[p] / idf[p]  # noqa: E731
    elif weighting == "tf":
        factor = None
    else:
        raise ValueError(f"unknown weighting {weighting!r}")
    saturated = saturate(tf)
    values = saturated * (1.0 if factor is None else factor(pieces))
    if expansion is not None and len(pieces):
        pieces, values = expand_query(pieces, saturated, values, expansion, factor)
    if bigrams is None or len(ids) < 2:
        return pieces, values
    vocab = len(idf)
    first, second = ids[:-1], ids[1:]
    keep = ~bigrams["continuation"][second]
    pairs, count = np.unique(first[keep] * vocab + second[keep], return_counts=True)
    pair_values = bigrams["weight"] * saturate(count)
    if factor is not None:
        pair_values = pair_values * np.sqrt(factor(pairs // vocab) * factor(pairs % vocab))
    slots, at = np.unique(vocab + pairs % bigrams["slots"], return_inverse=True)
    slot_values = np.zeros(len(slots))
    np.add.at(slot_values, at, pair_values)
    return np.concatenate([pieces, slots]), np.concatenate([values, slot_values])


def expand_query(pieces, saturated, values, expansion, factor):
    """The pieces and values with the listed neighbours of each piece added (sparse_vector's rule)."""
    sources, targets, similarities = expansion["sources"], expansion["targets"], expansion["similarities"]
    first, last = np.searchsorted(sources, pieces, "left"), np.searchsorted(sources, pieces, "right")
    best = {}
    for k in range(len(pieces)):
        for e in range(first[k], last[k]):
            n = int(targets[e])
            value = expansion["weight"] * float(similarities[e]) * saturated[k]
            if value > best.get(n, 0.0):
                best[n] = value
    held = set(pieces.tolist())
    added = np.array(sorted(n for n in best if n not in held), dtype=pieces.dtype)
    if not len(added):
        return pieces, values
    added_values = np.array([best[n] for n in added.tolist()]) * (1.0 if factor is None else factor(added))
    order = np.argsort(np.concatenate([pieces, added]), kind="stable")
    return np.concatenate([pieces, added])[order], np.concatenate([values, added_values])[order]


def read_sparse_expansion(settings):
    """lexembed.json "sparse".expansion (model/sparse/query_neighbours.py) as {"weight", "sources",
    "targets", "similarities"}, or None where the folder has none."""
    entry = settings["sparse"].get("expansion")
    if entry is None:
        return None
    table = lambda name, kind: np.frombuffer(base64.b64decode(entry[name]), dtype=kind)  # noqa: E731
    return {"weight": float(entry["weight"]), "sources": table("sources", "<i4").astype(np.int64),
            "targets": table("targets", "<i4").astype(np.int64), "similarities": table("similarities", "<f4").astype(np.float64)}


def sparse_vocabulary_size(settings):
    """What sparse indices lie below: the vocabulary, plus the word-pair slots where the folder has them."""
    sparse = settings["sparse"]
    return len(read_sparse_table(settings)[0]) + (sparse["bigrams"]["slots"] if "bigrams" in sparse else 0)


def read_sparse_bigrams(settings):
    """lexembed.json "sparse".bigrams (model/sparse/word_pairs.py) as {"weight", "slots", "continuation"
    (a bool per piece: it continues a word, "##…")}, or None where the folder has none."""
    entry = settings["sparse"].get("bigrams")
    if entry is None:
        return None
    vocab = len(read_sparse_table(settings)[0])
    bits = np.unpackbits(np.frombuffer(base64.b64decode(entry["continuations"]), dtype=np.uint8), bitorder="little")
    return {"weight": float(entry["weight"]), "slots": int(entry["slots"]), "continuation": bits[:vocab].astype(bool)}


def read_sparse_table(settings):
    """idf and avg_len from lexembed.json's "sparse" entry (idf as base64 little-endian float32)."""
    sparse = settings["sparse"]
    return np.frombuffer(base64.b64decode(sparse["idf"]), dtype="<f4"), float(sparse["avg_len"])


def read_sparse_canonical(settings):
    """The stem classes (model/sparse/stem_classes.py) of lexembed.json's "sparse" entry (base64
    little-endian int32, the class's smallest piece per piece), or None where it has none."""
    encoded = settings["sparse"].get("canonical")
    return None if encoded is None else np.frombuffer(base64.b64decode(encoded), dtype="<i4").astype(np.int64)


def read_sparse_weight(settings):
    """The model's term weight per piece: the learned table (model/train/term_weights.py, squared)
    where the folder has one, else idf."""
    sparse = settings["sparse"]
    return np.frombuffer(base64.b64decode(sparse.get("weight", sparse["idf"])), dtype="<f4").astype(np.float64)
