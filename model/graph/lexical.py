"""Adds the lexical part (v2) to a hybrid or static legal-2-embedder folder: exact word-piece
matches weighted as BM25 weighs terms, hashed into ~1,152 signed buckets and computed inside the
ONNX graph, so a dense vector carries the keyword evidence the learned parts blur. The served
vector becomes

    v = [sqrt(wt)·t/|t| , sqrt(ws)·s/|s| , sqrt(wl)·l/|l|] · M      wt + ws + wl = 1

whose dot products are wt·cos_transformer + ws·cos_static + wl·cos_lexical (M is orthogonal: it
keeps every dot product). The shares depend on the text's length in word pieces (Shares): --weights
from 12 pieces up (questions, passages: dev set 0.2/0.2/0.6), --short-weights up to 4 (a heading or
a defined term, where the held-out split's headings are matched best by the dense parts:
0.4/0.6/0), linear between; a pair's score then weighs each part by sqrt(w_query · w_document). M starts as the identity; model/matryoshka.py then orders it so every
listed prefix of the vector is a good vector of its own. The transformer and static parts are the
folder's own (only rescaled), so nothing is retrained.

The lexical part of one text (its word-piece ids after truncation, special tokens weighing 0):

    l[b] = Σ over the distinct pieces p with bucket(p) = b of  sign(p) · idf(p)^½ · sat(tf_p, L)
    sat(tf, L) = tf·(k1 + 1) / (tf + k1·(1 − b + b·L/avg_len))          k1 1.2, b 0.75

L: the text's word pieces, avg_len: their mean over the training texts. lexembed.json "sparse"
carries idf, k1, b and avg_len, so a server can also answer the unhashed weights as a sparse vector
(POST /v1/embeddings/sparse). A query's and a
document's weights multiply, so a matched piece scores idf·sat_query·sat_document: BM25's idf
once, its saturation and length norm on both sides. idf(p) = ln(1 + (N − df + 0.5)/(df + 0.5))
over the unique texts (queries and documents) of the legal-pairs training split: never the
held-out split, never the dev set. Buckets are dealt by idf rank modulo the bucket count (every
bucket gets pieces of every rarity) and each piece gets a random sign (seeded), so pieces that
share a bucket cancel on average instead of adding up.

Measured on the dev set (model/evaluate_dev.py), the lexical part alone: v1 (384 buckets of
sqrt(Σ idf²)) 0.440; v2 with 1,152 buckets 0.576; unhashed 0.616 (BM25 0.647).

The graph uses Gather, Equal, Cast, MatMul, ReduceSum, Div, Mul, Add, Sqrt, Max, Expand and Concat
(opset 14), so every runtime that serves the hybrid serves this; the term counts are an Equal over
the text's ids against themselves (L² comparisons, ~262k at 512 tokens).

    python3 model/add_lexical.py --hybrid models/legal-2-embedder --data ../shared/data/legal-pairs \
        --buckets 1152 --weights 0.2,0.2,0.6 --replace
    python3 model/add_lexical.py --model models/legal-2-embedder-static --data ../shared/data/legal-pairs \
        --buckets 1152 --weights 0,0.3,0.7 --replace

A static folder (export_static.py: masked token vectors out of the graph) gets its summed vector
normalised inside the graph first. --replace strips a lexical part an earlier version added (v1
or v2) before adding this one. Weights and bucket count were chosen on the dev set; see the model
card. The folder is rewritten in place.
"""
import argparse
import base64
import functools
import hashlib
import json
import math
import os
import time

import numpy as np

from legal_data import SPECIAL_PIECES, UNUSED_PIECE, data_fingerprint, encode_capped, split_pairs
from stem_classes import canonical_ids, classes_record, stem_classes

OUTPUT = "last_hidden_state"
K1, B = 1.2, 0.75
IDF_POWER = 0.5
RECIPE = "bm25-pieces-v2"
STEM_RECIPE = "bm25-stem-classes-v3"  # --stems: whole-word pieces counted by Snowball stem class


def piece_statistics(tok, data_dir, max_tokens, log=print, canonical=None):
    """(idf per word piece, unique texts, mean pieces per text) over the training split's unique
    texts; special and [unusedN] pieces get idf 0 (they carry no words). With `canonical`
    (model/stem_classes.py) a stem class is one term: its pieces share the class's document
    frequency. Cached under model/work by the data's and vocabulary's fingerprints (the pass takes ~2 min)."""
    classes = None if canonical is None else hashlib.sha256(np.asarray(canonical, dtype="<i8").tobytes()).hexdigest()
    key = hashlib.sha256(json.dumps([data_fingerprint(data_dir), tok.vocab, max_tokens] + ([classes] if classes else [])).encode()).hexdigest()[:16]
    cache = os.path.join(os.path.dirname(os.path.abspath(__file__)), "work", f"piece-statistics-{key}.npz")
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
    """sign(p) · idf(p)^½ per piece (or the learned weight, model/train_term_weights.py), the sign
    random (fixed by the seed; a stem class's pieces take its smallest piece's); 0 where idf is 0."""
    sign = np.random.default_rng(seed).choice([-1.0, 1.0], len(idf))
    if canonical is not None:
        sign = sign[canonical]
    magnitude = idf ** IDF_POWER if learned is None else np.where(idf > 0, learned, 0.0)
    return (sign * magnitude).astype(np.float32)


def read_term_weights(path, idf, canonical=None):
    """The learned weight per piece (model/train_term_weights.py's .npz), checked against this
    vocabulary's idf (the run's idf must be the one this folder's pieces get) and stem classes."""
    saved = np.load(path)
    weight = saved["weight"].astype(np.float64)
    if weight.shape != idf.shape or not np.allclose(saved["idf"], idf):
        raise SystemExit(f"{path} was learned for another vocabulary or training split "
                         f"({weight.shape[0]} pieces; this folder has {idf.shape[0]}): run model/train_term_weights.py for it")
    learned_classes = saved["canonical"] if "canonical" in saved.files else None
    if (learned_classes is None) != (canonical is None) or (canonical is not None and not np.array_equal(learned_classes, canonical)):
        raise SystemExit(f"{path} was learned {'with' if learned_classes is not None else 'without'} stem classes and this run is "
                         f"{'with' if canonical is not None else 'without'} them: pass --stems to both scripts or to neither")
    if not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise SystemExit(f"{path} holds negative or non-finite weights")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return weight, int(saved["step"]), digest


def lexical_part(ids_list, bucket, weight, avg_len, k1=K1, b=B, canonical=None):
    """The recipe in numpy (what the graph must compute): unit vectors, one row per text; with
    `canonical` (the folder's stem classes, read_canonical) each class counts as one piece."""
    buckets = int(bucket.max()) + 1
    out = np.zeros((len(ids_list), buckets), dtype=np.float64)
    for row, ids in enumerate(ids_list):
        ids = canonical_ids(ids, canonical)
        length = float((weight[ids] != 0).sum())
        pieces, tf = np.unique(ids, return_counts=True)
        sat = tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))
        np.add.at(out[row], bucket[pieces], weight[pieces].astype(np.float64) * sat)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


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
    norm = k1 * (1 - b + b * len(ids) / avg_len)
    saturate = lambda t: t * (k1 + 1) / (t + norm)  # noqa: E731
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
    """lexembed.json "sparse".expansion (model/sparse_expansion.py) as {"weight", "sources",
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
    """lexembed.json "sparse".bigrams (model/sparse_bigrams.py) as {"weight", "slots", "continuation"
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
    """The stem classes (model/stem_classes.py) of lexembed.json's "sparse" entry (base64
    little-endian int32, the class's smallest piece per piece), or None where it has none."""
    encoded = settings["sparse"].get("canonical")
    return None if encoded is None else np.frombuffer(base64.b64decode(encoded), dtype="<i4").astype(np.int64)


def read_sparse_weight(settings):
    """The model's term weight per piece: the learned table (model/train_term_weights.py, squared)
    where the folder has one, else idf."""
    sparse = settings["sparse"]
    return np.frombuffer(base64.b64decode(sparse.get("weight", sparse["idf"])), dtype="<f4").astype(np.float64)


def strip_lexical(graph_model):
    """Removes a lexical part (and the Matryoshka rotation) an earlier run added, leaving the dense
    graph whose output is OUTPUT again. Returns whether there was one."""
    g = graph_model.graph
    ours = lambda name: name.startswith(("lexical.", "matryoshka."))
    if not any(ours(t.name) for t in g.initializer):
        return False
    added = [n for n in g.node if any(ours(o) or o == OUTPUT for o in n.output)]
    outside = {i.name for i in g.input} | {t.name for t in g.initializer}
    # the one tensor the added nodes read that the dense graph made (named by whichever script wrote it)
    dense = {i for n in added for i in n.input if i and not ours(i) and i != OUTPUT and i not in outside}
    if len(dense) != 1:
        raise SystemExit(f"cannot find the dense graph's output under the lexical part (candidates: {sorted(dense)})")
    dense = dense.pop()
    keep = [n for n in g.node if n not in added]
    del g.node[:]
    g.node.extend(keep)
    keep_init = [t for t in g.initializer if not ours(t.name)]
    del g.initializer[:]
    g.initializer.extend(keep_init)
    for node in g.node:
        for k, name in enumerate(node.output):
            if name == dense:
                node.output[k] = OUTPUT
        for k, name in enumerate(node.input):  # model/document_form.py's repaired ids
            if name == "lexical.document.input_ids":
                node.input[k] = "input_ids"
    return True


def add_to_graph(graph_model, bucket, weight, avg_len, parts, shares, normalise_dense=False, canonical=None):
    """Renames the graph's output to dense_hidden and appends the lexical part, the text's shares
    and the (identity) Matryoshka rotation after it. A hybrid's output is its unit parts per token
    (each times the square root of the share export_hybrid.py gave it), so their mean over the mask
    is the dense vector; a static model's is its masked token vectors, whose sum is made a unit
    vector here first. `parts` (3 × width) maps the three shares' square roots onto the components
    (undoing export_hybrid.py's); `shares` is a Shares. The vector is computed once per text and
    expanded over its tokens (lexembed mean-pools them). With `canonical` (model/stem_classes.py)
    the lexical part reads each id as its stem class's smallest piece (one Gather in front)."""
    from onnx import TensorProto, helper, numpy_helper  # onnx only where a graph is written (tests need numpy alone)
    g = graph_model.graph
    producers = [n for n in g.node if OUTPUT in n.output]
    if len(producers) != 1:
        raise SystemExit(f"the graph has no single node producing {OUTPUT}: not a model/export_hybrid.py folder")
    producer = producers[0]
    producer.output[list(producer.output).index(OUTPUT)] = "dense_hidden"
    buckets = int(bucket.max()) + 1
    width = parts.shape[1]
    inits = {
        "lexical.parts": parts.astype(np.float32),
        "lexical.short": np.asarray(shares.short, dtype=np.float32),
        "lexical.delta": np.asarray(shares.long, dtype=np.float32) - np.asarray(shares.short, dtype=np.float32),
        "lexical.length0": np.array(shares.lengths[0], dtype=np.float32),
        "lexical.length_span": np.array(shares.lengths[1] - shares.lengths[0], dtype=np.float32),
        "lexical.zero": np.array(0.0, dtype=np.float32),
        "lexical.one": np.array(1.0, dtype=np.float32),
        "lexical.bucket": bucket.astype(np.int64),
        "lexical.weight": weight.astype(np.float32),
        "lexical.counted": (weight != 0).astype(np.float32),
        "lexical.range": np.arange(buckets, dtype=np.int64),
        "lexical.k1_plus_1": np.array(K1 + 1, dtype=np.float32),
        "lexical.k1_fixed": np.array(K1 * (1 - B), dtype=np.float32),
        "lexical.k1_per_length": np.array(K1 * B / avg_len, dtype=np.float32),
        "lexical.eps": np.array(1e-12, dtype=np.float32),
        "lexical.axis_last": np.array([-1], dtype=np.int64),
        "lexical.axis_one": np.array([1], dtype=np.int64),
        "lexical.axis_two": np.array([2], dtype=np.int64),
        "lexical.width": np.array([width], dtype=np.int64),
        "matryoshka.rotation": np.eye(width, dtype=np.float32),
    }
    if canonical is not None:
        inits["lexical.canonical"] = np.asarray(canonical, dtype=np.int64)
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    n = helper.make_node
    ids = "lexical.ids" if canonical is not None else "input_ids"  # what the term counts and tables read
    if canonical is not None:
        g.node.append(n("Gather", ["lexical.canonical", "input_ids"], [ids]))
    # The sum over tokens as mask · vectors (MatMul): its result does not depend on how much
    # padding the batch adds (ReduceSum's does, in the last bit), so a text's vector is the same
    # in every batch (lexembed embed --shard relies on that).
    g.node.extend([
        n("Cast", ["attention_mask"], ["lexical.mask"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["lexical.mask", "lexical.axis_one"], ["lexical.mask_row"]),  # B×1×L
        n("MatMul", ["lexical.mask_row", "dense_hidden"], ["lexical.dense_sum"]),  # B×1×D
    ])
    if normalise_dense:
        g.node.extend([
            *unit_nodes(n, "lexical.dense_sum", "lexical.dense_"),
            n("Identity", ["lexical.dense_unit"], ["lexical.dense"]),
        ])
    else:  # each token's row is already its text's unit parts ÷ the mean's norm: the mean is the vector
        g.node.extend([
            n("ReduceSum", ["lexical.mask_row", "lexical.axis_last"], ["lexical.count"], keepdims=1),
            n("Div", ["lexical.dense_sum", "lexical.count"], ["lexical.dense"]),
        ])
    g.node.extend([
        # tf of each position's piece: how many of the text's positions hold the same id
        n("Unsqueeze", [ids, "lexical.axis_two"], ["lexical.ids_col"]),  # B×L×1
        n("Unsqueeze", [ids, "lexical.axis_one"], ["lexical.ids_row"]),  # B×1×L
        n("Equal", ["lexical.ids_col", "lexical.ids_row"], ["lexical.same_bool"]),
        n("Cast", ["lexical.same_bool"], ["lexical.same"], to=TensorProto.FLOAT),  # B×L×L
        n("Mul", ["lexical.same", "lexical.mask_row"], ["lexical.same_kept"]),
        n("ReduceSum", ["lexical.same_kept", "lexical.axis_last"], ["lexical.tf3"], keepdims=1),  # B×L×1
        n("Squeeze", ["lexical.tf3", "lexical.axis_last"], ["lexical.tf"]),  # B×L
        # L: the text's counted pieces; K = k1·(1 − b + b·L/avg_len)
        n("Gather", ["lexical.counted", ids], ["lexical.ids_counted"]),
        n("Mul", ["lexical.ids_counted", "lexical.mask"], ["lexical.counted_kept"]),
        n("ReduceSum", ["lexical.counted_kept", "lexical.axis_last"], ["lexical.length"], keepdims=1),  # B×1
        n("Mul", ["lexical.length", "lexical.k1_per_length"], ["lexical.k_length"]),
        n("Add", ["lexical.k_length", "lexical.k1_fixed"], ["lexical.k"]),
        # each position carries weight·(k1 + 1)/(tf + K): its piece's positions sum to weight·sat(tf)
        n("Add", ["lexical.tf", "lexical.k"], ["lexical.denominator"]),
        n("Div", ["lexical.k1_plus_1", "lexical.denominator"], ["lexical.share"]),
        n("Gather", ["lexical.weight", ids], ["lexical.ids_weight"]),
        n("Mul", ["lexical.ids_weight", "lexical.mask"], ["lexical.weight_kept"]),
        n("Mul", ["lexical.weight_kept", "lexical.share"], ["lexical.token_weight"]),
        # into the buckets: token weights (B×1×L) · one-hot buckets (B×L×N)
        n("Gather", ["lexical.bucket", ids], ["lexical.ids_bucket"]),
        n("Unsqueeze", ["lexical.ids_bucket", "lexical.axis_last"], ["lexical.ids_bucket3"]),
        n("Equal", ["lexical.ids_bucket3", "lexical.range"], ["lexical.onehot_bool"]),
        n("Cast", ["lexical.onehot_bool"], ["lexical.onehot"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["lexical.token_weight", "lexical.axis_one"], ["lexical.token_weight3"]),
        n("MatMul", ["lexical.token_weight3", "lexical.onehot"], ["lexical.sums"]),  # B×1×N
        *unit_nodes(n, "lexical.sums", "lexical."),
        # the text's shares: short + t·(long − short), t = clip((L − length0)/span, 0, 1)
        n("Sub", ["lexical.length", "lexical.length0"], ["lexical.over"]),
        n("Div", ["lexical.over", "lexical.length_span"], ["lexical.ramp"]),
        n("Clip", ["lexical.ramp", "lexical.zero", "lexical.one"], ["lexical.t"]),  # B×1
        n("Mul", ["lexical.t", "lexical.delta"], ["lexical.shift"]),  # B×3
        n("Add", ["lexical.short", "lexical.shift"], ["lexical.shares"]),
        n("Sqrt", ["lexical.shares"], ["lexical.roots"]),
        n("Unsqueeze", ["lexical.roots", "lexical.axis_one"], ["lexical.roots3"]),  # B×1×3
        n("MatMul", ["lexical.roots3", "lexical.parts"], ["lexical.scales"]),  # B×1×W
        n("Concat", ["lexical.dense", "lexical.unit"], ["lexical.joined"], axis=-1),  # B×1×W
        n("Mul", ["lexical.joined", "lexical.scales"], ["matryoshka.parts"]),
        n("MatMul", ["matryoshka.parts", "matryoshka.rotation"], ["matryoshka.vector"]),
        n("Shape", ["input_ids"], ["lexical.ids_shape"]),
        n("Concat", ["lexical.ids_shape", "lexical.width"], ["lexical.tokens_shape"], axis=0),
        n("Expand", ["matryoshka.vector", "lexical.tokens_shape"], [OUTPUT]),
    ])
    del g.value_info[:]
    for output in g.output:
        dims = output.type.tensor_type.shape.dim
        if len(dims) == 3:
            dims[2].Clear()
            dims[2].dim_param = "hidden"


def unit_nodes(n, x, prefix):
    """x / max(|x|, eps) over the last axis, as nodes whose outputs are named prefix + squares,
    norm2, norm_raw, norm and unit."""
    return [
        n("Mul", [x, x], [prefix + "squares"]),
        n("ReduceSum", [prefix + "squares", "lexical.axis_last"], [prefix + "norm2"], keepdims=1),
        n("Sqrt", [prefix + "norm2"], [prefix + "norm_raw"]),
        n("Max", [prefix + "norm_raw", "lexical.eps"], [prefix + "norm"]),
        n("Div", [x, prefix + "norm"], [prefix + "unit"]),
    ]


def parse_weights(text):
    try:
        wt, ws, wl = (float(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"--weights wants three numbers 'transformer,static,lexical' (e.g. 0.2,0.2,0.6), got {text!r}")
    if min(wt, ws, wl) < 0 or abs(wt + ws + wl - 1) > 1e-6:
        raise SystemExit(f"--weights must be three non-negative shares that sum to 1, got {text!r}")
    return wt, ws, wl


def read_tables(folder):
    """(bucket, weight, avg_len, rotation) of a folder's v2 lexical part and Matryoshka rotation,
    read from its graph (loaded once), or None."""
    init = graph_initializers(folder)
    if init is None:
        return None
    _, _, avg_len = bm25_of(init)
    return init["lexical.bucket"], init["lexical.weight"], avg_len, init["matryoshka.rotation"].astype(np.float64)


TABLES = ("lexical.bucket", "lexical.weight", "lexical.k1_plus_1", "lexical.k1_fixed", "lexical.k1_per_length", "matryoshka.rotation")
OPTIONAL_TABLES = ("lexical.canonical",)  # v4.4's stem classes


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
    """The stem classes the folder's lexical part reads ids through (model/stem_classes.py), or None."""
    init = graph_initializers(folder)
    return None if init is None else init.get("lexical.canonical")


def bm25_of(init):
    """(k1, b, avg_len) the graph's lexical part applies, from its three constants."""
    k1 = float(init["lexical.k1_plus_1"]) - 1
    b = 1 - float(init["lexical.k1_fixed"]) / k1
    return k1, b, k1 * b / float(init["lexical.k1_per_length"])


def read_bm25(folder):
    """(k1, b) of a folder's lexical part (model/document_form.py may have changed them from K1, B)."""
    init = graph_initializers(folder)
    if init is None:
        return K1, B
    k1, b, _ = bm25_of(init)
    return k1, b


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hybrid", "--model", dest="folder", required=True,
                   help="hybrid (model/export_hybrid.py) or static (model/export_static.py) model folder, rewritten in place")
    p.add_argument("--data", required=True, help="the legal-pairs folder (idf from its training split)")
    p.add_argument("--buckets", type=int, default=1152, help="width of the lexical part (default 1152)")
    p.add_argument("--weights", help="shares transformer,static,lexical (default: hybrid 0.2,0.2,0.6; static 0,0.3,0.7)")
    p.add_argument("--short-weights", help="shares for texts of at most the short length (default: hybrid 0.4,0.6,0; static 0,1,0)")
    p.add_argument("--short-lengths", default="4,12", help="word pieces 'short,long': the short shares up to the first, --weights from the second, "
                   "linear between (default 4,12)")
    p.add_argument("--replace", action="store_true", help="strip a lexical part an earlier run added first")
    p.add_argument("--strip", action="store_true", help="only strip the lexical part (and Matryoshka rotation): the dense folder again, "
                   "e.g. before model/rebuild_hybrid.py swaps its static table")
    p.add_argument("--seed", type=int, default=0, help="seed of the pieces' signs (default 0)")
    p.add_argument("--term-weights", help="the pieces' weights learned by model/train_term_weights.py (.npz) in place of "
                   "idf^½ (the graph's table and lexembed.json's sparse table)")
    p.add_argument("--stems", action="store_true", help="count the whole-word pieces of one Snowball stem as one term "
                   "(model/stem_classes.py; the graph and the sparse table carry the classes)")
    p.add_argument("--id", help="the new model id (default: the folder's id with its lexical suffix replaced by '-lexical2')")
    args = p.parse_args()
    import onnx
    from tokenizer_files import load_tokenizer
    if args.buckets < 8:
        raise SystemExit(f"--buckets must be at least 8, got {args.buckets}")

    def read_json(name):
        with open(os.path.join(args.folder, name)) as f:
            return json.load(f)

    def write_json(name, value):
        with open(os.path.join(args.folder, name), "w") as f:
            json.dump(value, f, indent=2, default=str)
            f.write("\n")

    training, settings, config = read_json("training.json"), read_json("lexembed.json"), read_json("config.json")
    static = config.get("num_hidden_layers", 0) == 0
    record = training if static else training["hybrid"]  # where the folder's mix is written down
    graph_path = os.path.join(args.folder, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    width = config["hidden_size"]
    if args.strip:
        if "lexical" not in record:
            raise SystemExit(f"{args.folder} has no lexical part to strip")
        strip_lexical(graph_model)
        onnx.checker.check_model(graph_model)
        onnx.save(graph_model, graph_path)
        width -= record.pop("lexical")["buckets"]
        record.pop("matryoshka", None)
        record.pop("weights", None)
        record.pop("shares", None)
        record.pop("document_form", None)  # model/document_form.py's nodes went with the lexical part
        config["hidden_size"] = width
        write_json("config.json", config)
        settings["dimensions"] = {"default": width, "max": width}
        settings["pooling"] = "mean"
        settings.pop("sparse", None)
        settings.pop("document_form", None)
        write_json("lexembed.json", settings)
        write_json("training.json", training)
        print(f"{args.folder}: lexical part stripped, {width} dimensions")
        return
    if "lexical" in record:
        if not args.replace:
            raise SystemExit(f"{args.folder} already has a lexical part ({record['lexical']['buckets']} buckets); "
                             "pass --replace to put this one in its place")
        strip_lexical(graph_model)
        width -= record["lexical"]["buckets"]
        record.pop("lexical")
        record.pop("matryoshka", None)
        record.pop("shares", None)
        record.pop("document_form", None)
        settings.pop("document_form", None)
    wt, ws, wl = parse_weights(args.weights or ("0,0.3,0.7" if static else "0.2,0.2,0.6"))
    short = parse_weights(args.short_weights or ("0,1,0" if static else "0.4,0.6,0"))
    for name, (first, *_) in (("--weights", (wt, ws, wl)), ("--short-weights", short)):
        if static and first:
            raise SystemExit(f"{args.folder} is a static model (no transformer part): {name} must start with 0, e.g. 0,0.3,0.7")
    try:
        lengths = tuple(int(x) for x in args.short_lengths.split(","))
    except ValueError:
        raise SystemExit(f"--short-lengths wants two piece counts 'short,long' (e.g. 4,12), got {args.short_lengths!r}")
    shares = Shares((wt, ws, wl), short, lengths)
    buckets = args.buckets
    # parts: each share's square root onto its components, undoing the share the dense graph applied
    parts = np.zeros((3, width + buckets))
    if static:
        parts[1, :width] = 1.0  # the static sum is made a unit vector in the graph
    else:
        old_w, split = record["weight"], record["transformer_dims"]
        parts[0, :split] = 1 / math.sqrt(old_w)
        parts[1, split:width] = 1 / math.sqrt(1 - old_w)
    parts[2, width:] = 1.0
    tok = load_tokenizer(args.folder)
    max_tokens = settings["max_input_tokens"]
    canonical = stem_classes(tok.ids) if args.stems else None
    idf, texts, avg_len = piece_statistics(tok, args.data, max_tokens, canonical=canonical)
    bucket = balanced_buckets(idf, args.buckets, canonical)
    learned = read_term_weights(args.term_weights, idf, canonical) if args.term_weights else None
    weight = signed_weights(idf, args.seed, None if learned is None else learned[0], canonical)
    recipe = RECIPE if canonical is None else STEM_RECIPE

    add_to_graph(graph_model, bucket, weight, avg_len, parts, shares, normalise_dense=static, canonical=canonical)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)

    config["hidden_size"] = width + args.buckets
    write_json("config.json", config)
    settings["dimensions"]["default"] = settings["dimensions"]["max"] = config["hidden_size"]
    # Every token's row is the text's vector (computed once, expanded): the first row is the mean,
    # and reading one row costs the server less than averaging all of them.
    settings["pooling"] = "cls"
    settings["dimensions"].pop("matryoshka", None)  # model/matryoshka.py lists the prefixes it orders
    base = settings.get("id", settings["name"])
    for suffix in ("-lexical2", "-lexical"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    settings["id"] = args.id or f"{base}-lexical2"
    parts = ("Static legal embedding model trained by lexembed (model/train_static.py)" if static else
             "Hybrid legal embedding model trained by lexembed: a 4-layer transformer (model/train_transformer.py), "
             "the static model (model/train_static.py)")
    described = f"{ws}/{wl}" if static else f"{wt}/{ws}/{wl}"
    shorter = "/".join(str(x) for x in (short[1:] if static else short))
    settings["description"] = (f"{parts} and a lexical part of {args.buckets} BM25-weighted word-piece buckets "
                               f"(model/add_lexical.py), {described} of the score ({shorter} for texts of at most {lengths[0]} "
                               f"word pieces, rising to it at {lengths[1]}; chosen on the dev set of legal questions and the held-out split).")
    # The same table and rule, unhashed, for sparse vectors (POST /v1/embeddings/sparse, src/embedder/sparse.ts)
    settings["sparse"] = {"recipe": recipe, "k1": K1, "b": B, "avg_len": avg_len,
                          "idf": base64.b64encode(idf.astype("<f4").tobytes()).decode("ascii")}
    if canonical is not None:  # a stem class is one index: its smallest piece
        settings["sparse"]["canonical"] = base64.b64encode(canonical.astype("<i4").tobytes()).decode("ascii")
    if learned is not None:  # the squared weight is what a matched piece scores (query weight × document weight)
        settings["sparse"]["weight"] = base64.b64encode(np.where(idf > 0, learned[0] ** 2, 0).astype("<f4").tobytes()).decode("ascii")
    write_json("lexembed.json", settings)
    record["weights"] = {"transformer": wt, "static": ws, "lexical": wl}
    record["shares"] = shares.record()
    record["lexical"] = {"recipe": recipe, "buckets": args.buckets, "k1": K1, "b": B, "idf_power": IDF_POWER,
                         "avg_len": round(avg_len, 3), "assignment": "idf rank modulo buckets, random signs" + ("" if canonical is None else " (per stem class)"),
                         "seed": args.seed, "idf_texts": texts,
                         "idf_from": "legal-pairs training split (unique queries and documents)",
                         "added_by": "model/add_lexical.py"}
    if canonical is not None:
        record["lexical"]["stems"] = classes_record(canonical)
    if learned is not None:
        record["lexical"]["term_weights"] = {"file": os.path.basename(args.term_weights), "sha256": learned[2], "step": learned[1],
                                             "learned_by": "model/train_term_weights.py", "replaces": "idf^0.5"}
    write_json("training.json", training)
    print(f"{args.folder}: {width} + {args.buckets} lexical = {config['hidden_size']} dimensions, shares "
          f"{wt}/{ws}/{wl} ({os.path.getsize(graph_path) / 1e6:.1f} MB ONNX)")


if __name__ == "__main__":
    main()
