"""Scores a lexembed static model folder against BM25 on the held-out documents.

    /usr/bin/python3 model/evaluate.py --data ../shared/data/legal-pairs --model models/legal-2-embedder

For each source, queries are the distinct headings of the held-out documents (case-folded);
the corpus is every held-out text of that source; a text is relevant to a heading when the
pair exists. Reports nDCG@10 and Recall@100 for BM25 (k1 0.9, b 0.4) and for the model.
"""
import argparse
import collections
import json
import math
import re

import numpy as np
import onnx
from onnx import numpy_helper

from legal_data import WordPiece, split_pairs

WORD_RE = re.compile(r"\w+", re.UNICODE)


def bm25_scores_fn(corpus, k1=0.9, b=0.4):
    docs = [collections.Counter(WORD_RE.findall(t.lower())) for t in corpus]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    avg = lengths.mean()
    postings = collections.defaultdict(list)
    for i, d in enumerate(docs):
        for term, tf in d.items():
            postings[term].append((i, tf))
    n = len(docs)

    def score(query):
        s = np.zeros(n)
        for term in set(WORD_RE.findall(query.lower())):
            plist = postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for i, tf in plist:
                s[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avg))
        return s
    return score


def load_static_model(folder):
    graph = onnx.load(f"{folder}/onnx/model.onnx").graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    table = init["table_int8"].astype(np.float32) * init["row_scale"]
    with open(f"{folder}/tokenizer.json", encoding="utf-8") as f:
        ids = json.load(f)["model"]["vocab"]
    vocab = [None] * len(ids)
    for piece, i in ids.items():
        vocab[i] = piece
    with open(f"{folder}/lexembed.json") as f:
        settings = json.load(f)
    return table, WordPiece(vocab), settings["max_input_tokens"]


def embed(table, tok, texts, max_tokens, dims=None):
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i] = table[tok.encode(t[: max_tokens * 12], max_tokens)].sum(axis=0)
    if dims:
        out = out[:, :dims]
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def metrics(ranked, relevant):
    dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(ranked[:10]) if i in relevant)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(10, len(relevant))))
    recall = len(relevant.intersection(ranked[:100])) / len(relevant)
    return dcg / idcg, recall


def evaluate_source(rows, model, dims):
    corpus, index = [], {}
    relevant = collections.defaultdict(set)
    for _, query, text, _ in rows:
        if text not in index:
            index[text] = len(corpus)
            corpus.append(text)
        relevant[query.lower().strip()].add(index[text])
    queries = sorted(relevant)
    bm25 = bm25_scores_fn(corpus)
    table, tok, max_tokens = model
    doc_vecs = embed(table, tok, corpus, max_tokens, dims)
    query_vecs = embed(table, tok, queries, max_tokens, dims)
    model_scores = query_vecs @ doc_vecs.T
    result = {"queries": len(queries), "corpus": len(corpus)}
    for name in ("bm25", "model"):
        nd, rc = [], []
        for qi, q in enumerate(queries):
            s = bm25(q) if name == "bm25" else model_scores[qi]
            ranked = list(np.argsort(-s, kind="stable")[:100])
            a, b_ = metrics(ranked, relevant[q])
            nd.append(a)
            rc.append(b_)
        result[name] = {"ndcg@10": float(np.mean(nd)), "recall@100": float(np.mean(rc))}
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True, help="static model folder (onnx/model.onnx, tokenizer.json)")
    p.add_argument("--dims", type=int, default=None, help="evaluate a Matryoshka prefix")
    p.add_argument("--max-tokens", type=int, default=None, help="override max_input_tokens of lexembed.json")
    p.add_argument("--json", help="write results here too")
    args = p.parse_args()
    _, held_out = split_pairs(args.data)
    by_source = collections.defaultdict(list)
    for row in held_out:
        by_source[row[0]].append(row)
    model = load_static_model(args.model)
    if args.max_tokens:
        model = (model[0], model[1], args.max_tokens)
    results = {}
    print(f"{'source':<20}{'queries':>8}{'corpus':>8}  {'BM25 nDCG@10':>12}{'model':>8}{'rel.':>7}  {'BM25 R@100':>10}{'model':>8}")
    for source in sorted(by_source):
        r = evaluate_source(by_source[source], model, args.dims)
        results[source] = r
        rel = r["model"]["ndcg@10"] / r["bm25"]["ndcg@10"]
        print(f"{source:<20}{r['queries']:>8}{r['corpus']:>8}  {r['bm25']['ndcg@10']:>12.3f}{r['model']['ndcg@10']:>8.3f}"
              f"{rel:>7.2f}  {r['bm25']['recall@100']:>10.3f}{r['model']['recall@100']:>8.3f}", flush=True)
    mb = np.mean([r["bm25"]["ndcg@10"] for r in results.values()])
    mm = np.mean([r["model"]["ndcg@10"] for r in results.values()])
    print(f"{'mean over sources':<36}  {mb:>12.3f}{mm:>8.3f}{mm / mb:>7.2f}")
    nq = sum(r["queries"] for r in results.values())
    ub = sum(r["bm25"]["ndcg@10"] * r["queries"] for r in results.values()) / nq
    um = sum(r["model"]["ndcg@10"] * r["queries"] for r in results.values()) / nq
    print(f"{'mean over all queries':<36}  {ub:>12.3f}{um:>8.3f}{um / ub:>7.2f}")
    results["mean"] = {"bm25_ndcg@10": mb, "model_ndcg@10": mm, "relative": mm / mb}
    results["mean_over_queries"] = {"bm25_ndcg@10": ub, "model_ndcg@10": um, "relative": um / ub}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
