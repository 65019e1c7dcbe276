"""lexembed's vectors in a real vector store, scored on the dev set (../shared/data/legal-eval-dev):
SQLite with sqlite-vec (vec0 tables of float32, int8 and bit vectors) and FTS5 (its BM25), as a
user would keep them. Per task and mean nDCG@10 of:

  dense float     vec0 float[d] k-nearest (what /v1/embeddings returns, output_dtype float)
  dense int8      vec0 int8[d] of output_dtype int8 (round(x · 16√d), src/contract/vectors.ts)
  binary          vec0 bit[d] of output_dtype ubinary (Hamming distance), alone
  binary+rescore  the binary top 100 rescored with the float vectors
  keyword         FTS5's bm25() over the passages (the store's own full-text search)
  hybrid          reciprocal-rank fusion (k 60) of dense float and keyword, top 100 each

    /usr/bin/python3 -m model.evaluate.store --model models/legal-2-embedder [--json OUT]

Needs Debian's Python (its sqlite3 loads extensions; the venv's does not), numpy, and sqlite-vec's
vec0.so from npm (devDependency sqlite-vec; node_modules/sqlite-vec-linux-x64/vec0.so). Takes the
dev set's vectors from model/work/dev-cache (run model/evaluate/dev.py --model FOLDER first).
Never train on this set.
"""
import argparse
import json
import os
import re
import sqlite3

import numpy as np

from model.common.folder import needs, ROOT
from model.evaluate.dev import CACHE, DEFAULT_DEV, DEFAULT_SCORER, load_scorer, model_key

VEC0 = os.path.join(ROOT, "node_modules", "sqlite-vec-linux-x64", "vec0")
DEPTH = 100
RRF_K = 60
WORD = re.compile(r"[^\W_]+", re.UNICODE)


def int8(v):
    """output_dtype int8: round(x · 16√d) clamped to [-128, 127] (src/contract/vectors.ts)."""
    return np.clip(np.round(v * 16 * np.sqrt(v.shape[1])), -128, 127).astype(np.int8)


def bits(v):
    """output_dtype ubinary: numpy.packbits of x > 0 (first component in the highest bit)."""
    return np.packbits(v > 0, axis=1)


def fts_query(text):
    """The question's words, OR-ed (FTS5 would otherwise AND them and find almost nothing)."""
    words = sorted(set(w.lower() for w in WORD.findall(text)))
    return " OR ".join(f'"{w}"' for w in words) or '""'


def rrf(*rankings):
    scores = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
    return [d for d, _ in sorted(scores.items(), key=lambda x: -x[1])]


def evaluate_task(scorer, db, corpus, queries, qrels, d, q):
    dims = d.shape[1]
    db.execute(f"create virtual table vf using vec0(embedding float[{dims}])")
    db.execute(f"create virtual table vi using vec0(embedding int8[{dims}])")
    db.execute(f"create virtual table vb using vec0(embedding bit[{dims}])")
    db.execute("create virtual table docs using fts5(body)")
    di, db_bits = int8(d), bits(d)
    for i, doc in enumerate(corpus):
        db.execute("insert into vf(rowid, embedding) values (?, ?)", (i, d[i].astype(np.float32).tobytes()))
        db.execute("insert into vi(rowid, embedding) values (?, vec_int8(?))", (i, di[i].tobytes()))
        db.execute("insert into vb(rowid, embedding) values (?, vec_bit(?))", (i, db_bits[i].tobytes()))
        db.execute("insert into docs(rowid, body) values (?, ?)", (i, doc["text"]))
    qi, qb = int8(q), bits(q)
    knn = "select rowid from {t} where embedding match {v} and k = {k} order by distance"
    ids = [x["id"] for x in corpus]
    ranked = {name: [] for name in ("dense float", "dense int8", "binary", "binary+rescore", "keyword", "hybrid")}
    for j, query in enumerate(queries):
        dense = [r[0] for r in db.execute(knn.format(t="vf", v="?", k=DEPTH), (q[j].astype(np.float32).tobytes(),))]
        dense8 = [r[0] for r in db.execute(knn.format(t="vi", v="vec_int8(?)", k=DEPTH), (qi[j].tobytes(),))]
        binary = [r[0] for r in db.execute(knn.format(t="vb", v="vec_bit(?)", k=DEPTH), (qb[j].tobytes(),))]
        rescored = sorted(binary, key=lambda i: -float(d[i] @ q[j]))
        keyword = [r[0] for r in db.execute("select rowid from docs where docs match ? order by bm25(docs) limit ?", (fts_query(query["text"]), DEPTH))]
        for name, r in (("dense float", dense), ("dense int8", dense8), ("binary", binary), ("binary+rescore", rescored),
                        ("keyword", keyword), ("hybrid", rrf(dense, keyword)[:DEPTH])):
            ranked[name].append([ids[i] for i in r])
    out = {}
    for name, rankings in ranked.items():
        nd = [scorer.metrics(r, qrels[query["id"]])[0] for r, query in zip(rankings, queries)]
        out[name] = float(np.mean(nd))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a served model folder already scored by model/evaluate/dev.py (its vectors cached)")
    p.add_argument("--dev", default=DEFAULT_DEV)
    p.add_argument("--scorer", default=DEFAULT_SCORER)
    p.add_argument("--vec0", default=VEC0, help="sqlite-vec's loadable extension (without .so)")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    needs("model.evaluate.store", (args.model, "folder"), (args.dev, "dev"))
    scorer = load_scorer(args.scorer)
    key = model_key(args.model)
    results = {}
    for task_dir in scorer.expand_dirs([args.dev]):
        name = os.path.basename(task_dir.rstrip("/"))
        corpus, queries, qrels = scorer.load_task(task_dir)
        paths = [os.path.join(CACHE, f"{key}.{name}.{kind}.npy") for kind in ("corpus", "queries")]
        if not all(os.path.exists(x) for x in paths):
            raise SystemExit(f"model/evaluate/store.py: no cached vectors of {args.model} for {name}; run python3 -m model.evaluate.dev --model {args.model} first")
        d, q = (np.load(x) for x in paths)
        db = sqlite3.connect(":memory:")
        db.enable_load_extension(True)
        db.load_extension(args.vec0)
        results[name] = evaluate_task(scorer, db, corpus, queries, qrels, d, q)
        print(f"{name:<16} " + "  ".join(f"{k} {v:.3f}" for k, v in results[name].items()), flush=True)
    tasks = list(results)
    results["mean"] = {k: float(np.mean([results[t][k] for t in tasks])) for k in results[tasks[0]]}
    print(f"{'mean':<16} " + "  ".join(f"{k} {v:.3f}" for k, v in results["mean"].items()))
    base = results["mean"]["dense float"]
    print("÷ dense float: " + "  ".join(f"{k} {v / base:.3f}" for k, v in results["mean"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
