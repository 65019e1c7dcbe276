"""Mines hard negatives for contrastive tuning: for every training pair, the texts of the same
source that BM25 and the current bundled model (the static legal-2-embedder) rank highest for its
heading, minus anything that is not a true negative.

    python3 -m model.data.negatives --data ../shared/data/legal-pairs \
        --model models/legal-2-embedder-static --out model/work/negatives.npz

Writes `bm25` and `model` arrays of shape (all pairs, K) holding global row indices (the position
of a pair in `legal_data.load_pairs` order; -1 pads), so a run that leaves a source out can use the
same file. A candidate is dropped when its heading equals the pair's heading (case-folded: generic
headings such as "Definitions"), when its text equals the pair's text, or when one text contains
the other (a subsection inside its section). Needs numpy and scipy; deterministic.
"""
import argparse
import collections
import os
import re
import time

import numpy as np
from scipy import sparse

from model.common.folder import needs
from model.evaluate.served import embed, load_static_model
from model.common.legal_data import is_held_out, load_pairs

WORD_RE = re.compile(r"\w+", re.UNICODE)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True, help="the current static model folder, e.g. models/legal-2-embedder")
    p.add_argument("--out", required=True)
    p.add_argument("--keep", type=int, default=8, help="negatives kept per pair and miner")
    p.add_argument("--depth", type=int, default=30, help="ranks looked at per query")
    p.add_argument("--chunk", type=int, default=512)
    args = p.parse_args()
    needs("model.data.negatives", (args.data, "pairs"), (args.model, "static"))
    t0 = time.time()

    rows = list(load_pairs(args.data))
    train = [g for g, (s, _, _, d) in enumerate(rows) if not is_held_out(s, d)]
    print(f"{len(rows)} pairs, {len(train)} for training ({time.time() - t0:.0f}s)", flush=True)
    static_model = load_static_model(args.model)
    out = {name: np.full((len(rows), args.keep), -1, dtype=np.int32) for name in ("bm25", "model")}

    by_source = collections.defaultdict(list)
    for g in train:
        by_source[rows[g][0]].append(g)
    for source, members in by_source.items():
        texts = [rows[g][2] for g in members]
        keys = [rows[g][1].lower().strip() for g in members]
        rankers = {"bm25": bm25_ranker(texts), "model": model_ranker(static_model, texts)}
        for name, rank in rankers.items():
            for start in range(0, len(members), args.chunk):
                idx = list(range(start, min(start + args.chunk, len(members))))
                top = rank([rows[members[i]][1] for i in idx], args.depth)
                for i, cand in zip(idx, top):
                    kept = []
                    for j in cand:
                        if j == i or keys[j] == keys[i] or texts[j] == texts[i]:
                            continue
                        if texts[j] in texts[i] or texts[i] in texts[j]:
                            continue
                        kept.append(members[j])
                        if len(kept) == args.keep:
                            break
                    out[name][members[i], :len(kept)] = kept
            filled = (out[name][members] >= 0).sum(axis=1)
            print(f"{source}: {name} negatives per pair mean {filled.mean():.2f}, none for {(filled == 0).sum()} "
                  f"({time.time() - t0:.0f}s)", flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    np.savez_compressed(args.out, **out, rows=np.int32(len(rows)))
    print(f"wrote {args.out} ({time.time() - t0:.0f}s)")


def bm25_ranker(texts, k1=0.9, b=0.4):
    """BM25 (same parameters as model/evaluate/held_out.py) as a sparse matrix product, a chunk of queries at a time."""
    vocab = {}
    indptr, indices, data = [0], [], []
    for t in texts:
        counts = collections.Counter(WORD_RE.findall(t.lower()))
        for term, tf in counts.items():
            indices.append(vocab.setdefault(term, len(vocab)))
            data.append(tf)
        indptr.append(len(indices))
    tf = sparse.csr_matrix((np.array(data, dtype=np.float32), indices, indptr), shape=(len(texts), len(vocab)))
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    df = np.bincount(tf.indices, minlength=len(vocab))
    n = len(texts)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
    norm = k1 * (1 - b + b * lengths / lengths.mean())
    w = tf.tocoo()
    weights = idf[w.col] * w.data * (k1 + 1) / (w.data + norm[w.row])
    doc_t = sparse.csr_matrix((weights.astype(np.float32), (w.col, w.row)), shape=(len(vocab), n))

    def rank(queries, depth):
        qi, qj = [], []
        for r, q in enumerate(queries):
            for term in set(WORD_RE.findall(q.lower())):
                if term in vocab:
                    qi.append(r)
                    qj.append(vocab[term])
        qm = sparse.csr_matrix((np.ones(len(qi), dtype=np.float32), (qi, qj)), shape=(len(queries), len(vocab)))
        return top_k((qm @ doc_t).toarray(), depth)
    return rank


def model_ranker(static_model, texts):
    table, tok, max_tokens = static_model
    doc_vecs = embed(table, tok, texts, max_tokens)

    def rank(queries, depth):
        return top_k(embed(table, tok, queries, max_tokens) @ doc_vecs.T, depth)
    return rank


def top_k(scores, depth):
    depth = min(depth, scores.shape[1] - 1)
    part = np.argpartition(-scores, depth, axis=1)[:, :depth]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


if __name__ == "__main__":
    main()
