"""The lexical part's rule (BM25 on word pieces): idf over the training split, the saturation of a
term count, the pieces' buckets and signed weights, the parts' shares by length, and the lexical
part of a text in numpy. The graph builder (model/graph/lexical_graph.py) writes these same
constants into the ONNX graph, the sparse vectors (model/rules/sparse_weights.py) and the torch
trainers call saturation() below, and the TypeScript side is checked against this recipe through
tests/fixtures/legal-model-parity.json (model/graph/parity.py). Change a rule here, once.

    l[b] = Σ over the distinct pieces p with bucket(p) = b of  sign(p) · idf(p)^½ · sat(tf_p, L)
    sat(tf, L) = tf·(k1 + 1) / (tf + k1·(1 − b + b·L/avg_len))          k1 1.2, b 0.75
    idf(p) = ln(1 + (N − df + 0.5)/(df + 0.5))   over the training split's unique texts
"""
import hashlib
import json
import os
import time

import numpy as np

from model.common.folder import WORK
from model.common.legal_data import SPECIAL_PIECES, UNUSED_PIECE, data_fingerprint, encode_capped, split_pairs

K1, B = 1.2, 0.75
IDF_POWER = 0.5


def saturation(tf, length, avg_len, k1=K1, b=B):
    """BM25's saturated term count for a text of `length` counted pieces; plain arithmetic, so
    numpy arrays, torch tensors and floats all go through the same rule."""
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))


def graph_constants(k1, b, avg_len):
    """The three constants the graph's lexical part computes saturation() with (bm25_of inverts them)."""
    return {"lexical.k1_plus_1": k1 + 1, "lexical.k1_fixed": k1 * (1 - b), "lexical.k1_per_length": k1 * b / avg_len}


def bm25_of(init):
    """(k1, b, avg_len) the graph's lexical part applies, from its three constants."""
    k1 = float(init["lexical.k1_plus_1"]) - 1
    b = 1 - float(init["lexical.k1_fixed"]) / k1
    return k1, b, k1 * b / float(init["lexical.k1_per_length"])


def canonical_ids(ids, canonical):
    """A text's ids as classes (unchanged without a table)."""
    ids = np.asarray(ids, dtype=np.int64)
    return ids if canonical is None else canonical[ids]


def piece_statistics(tok, data_dir, max_tokens, log=print, canonical=None):
    """(idf per word piece, unique texts, mean pieces per text) over the training split's unique
    texts; special and [unusedN] pieces get idf 0 (they carry no words). With `canonical`
    (model/sparse/stem_classes.py) a stem class is one term: its pieces share the class's document
    frequency. Cached under model/work by the data's and vocabulary's fingerprints (the pass takes ~2 min)."""
    classes = None if canonical is None else hashlib.sha256(np.asarray(canonical, dtype="<i8").tobytes()).hexdigest()
    key = hashlib.sha256(json.dumps([data_fingerprint(data_dir), tok.vocab, max_tokens] + ([classes] if classes else [])).encode()).hexdigest()[:16]
    cache = os.path.join(WORK, f"piece-statistics-{key}.npz")
    if os.path.exists(cache):
        hit = np.load(cache)
        return hit["idf"], int(hit["texts"]), float(hit["avg_len"])
    started = time.time()
    train, _ = split_pairs(data_dir)
    df = np.zeros(len(tok.vocab), dtype=np.float64)
    seen, pieces = set(), 0
    for _, query, text, _ in train:
        for t in (query, text):
            if t in seen:
                continue
            seen.add(t)
            ids = encode_capped(tok, t, max_tokens)
            df[list(set(canonical_ids(ids, canonical).tolist()))] += 1
            pieces += len(ids) - 2
    n = len(seen)
    if canonical is not None:
        df = df[canonical]  # every piece of a class: the class's frequency
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    for piece in SPECIAL_PIECES:
        if piece in tok.ids:
            idf[tok.ids[piece]] = 0.0
    idf[[i for piece, i in tok.ids.items() if UNUSED_PIECE.fullmatch(piece)]] = 0.0
    log(f"idf over {n:,} unique training texts ({time.time() - started:.0f} s)")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    np.savez(cache, idf=idf, texts=n, avg_len=pieces / n)
    return idf, n, pieces / n


class Shares:
    """The parts' shares of the score (transformer, static, lexical), by the text's length: `short`
    at `lengths[0]` word pieces or fewer, `long` at `lengths[1]` or more, linear between. A query of
    a few pieces (a heading, a defined term) carries little term evidence and is matched best by the
    dense parts (held-out split); a question or passage by the lexical part more (dev set)."""

    def __init__(self, long, short=None, lengths=(4, 12)):
        self.long = tuple(long)
        self.short = tuple(short if short is not None else long)
        self.lengths = tuple(lengths)
        if not self.lengths[0] < self.lengths[1]:
            raise SystemExit(f"the short and long lengths must rise, got {self.lengths}")

    def at(self, length):
        """The shares (rows) for texts of these lengths (counted word pieces)."""
        t = np.clip((np.asarray(length, dtype=np.float64) - self.lengths[0]) / (self.lengths[1] - self.lengths[0]), 0, 1)[..., None]
        return (1 - t) * np.asarray(self.short) + t * np.asarray(self.long)

    def record(self):
        return {"long": list(self.long), "short": list(self.short), "lengths": list(self.lengths)}

    @classmethod
    def of(cls, record):
        """From a training.json record: its "shares", or v4's first "weights" (one set, no ramp)."""
        if "shares" in record:
            return cls(record["shares"]["long"], record["shares"]["short"], record["shares"]["lengths"])
        w = record["weights"]
        return cls((w["transformer"], w["static"], w["lexical"]))


def counted_length(ids, weight):
    """The word pieces a text's shares go by: those with a weight (not special, not [unusedN])."""
    return float((weight[np.asarray(ids, dtype=np.int64)] != 0).sum())


def balanced_buckets(idf, buckets, canonical=None):
    """Pieces sorted by idf (rarest first, ties by id) dealt round-robin into the buckets; with
    `canonical`, the classes are dealt (their smallest pieces) and every piece takes its class's."""
    dealt = np.arange(len(idf)) if canonical is None else np.flatnonzero(canonical == np.arange(len(idf)))
    order = dealt[np.argsort(-idf[dealt], kind="stable")]
    bucket = np.zeros(len(idf), dtype=np.int64)
    bucket[order] = np.arange(len(order)) % buckets
    return bucket if canonical is None else bucket[canonical]


def signed_weights(idf, seed, learned=None, canonical=None):
    """sign(p) · idf(p)^½ per piece (or the learned weight, model/train/term_weights.py), the sign
    random (fixed by the seed; a stem class's pieces take its smallest piece's); 0 where idf is 0."""
    sign = np.random.default_rng(seed).choice([-1.0, 1.0], len(idf))
    if canonical is not None:
        sign = sign[canonical]
    magnitude = idf ** IDF_POWER if learned is None else np.where(idf > 0, learned, 0.0)
    return (sign * magnitude).astype(np.float32)


def lexical_rows(ids_list, bucket, weight, avg_len, k1=K1, b=B, canonical=None):
    """Each text's raw lexical part l_raw (before normalisation), one row at a time; with
    `canonical` (the folder's stem classes) each class counts as one piece."""
    buckets = int(bucket.max()) + 1
    for ids in ids_list:
        ids = canonical_ids(ids, canonical)
        length = float((weight[ids] != 0).sum())
        pieces, tf = np.unique(ids, return_counts=True)
        row = np.zeros(buckets)
        np.add.at(row, bucket[pieces], weight[pieces].astype(np.float64) * saturation(tf, length, avg_len, k1, b))
        yield row


def lexical_part(ids_list, bucket, weight, avg_len, k1=K1, b=B, canonical=None):
    """The recipe in numpy (what the graph must compute): unit vectors, one row per text."""
    out = np.zeros((len(ids_list), int(bucket.max()) + 1), dtype=np.float64)
    for row, raw in enumerate(lexical_rows(ids_list, bucket, weight, avg_len, k1, b, canonical)):
        out[row] = raw
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def raw_norms(ids_list, bucket, weight, avg_len, k1, b, canonical=None):
    """|l_raw| per text (the document form's length, model/rules/document_form.py)."""
    return np.array([np.linalg.norm(raw) for raw in lexical_rows(ids_list, bucket, weight, avg_len, k1, b, canonical)])
