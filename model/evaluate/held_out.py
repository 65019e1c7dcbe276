"""Scores a lexembed model folder (static or transformer) against BM25 on the held-out documents.

    /usr/bin/python3 -m model.evaluate.held_out --data ../shared/data/legal-pairs --model models/legal-2-embedder-static

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

from model.common.folder import needs
from model.common.legal_data import GENRES, sources_of, split_pairs
from model.evaluate.served import is_static_folder, onnx_embed_fn, served_prompts, static_embed_fn

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


def metrics(ranked, relevant):
    dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(ranked[:10]) if i in relevant)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(10, len(relevant))))
    recall = len(relevant.intersection(ranked[:100])) / len(relevant)
    return dcg / idcg, recall


def build_source(rows):
    """(queries, corpus, relevant): distinct case-folded headings, distinct texts, heading -> text indices."""
    corpus, index = [], {}
    relevant = collections.defaultdict(set)
    for _, query, text, _ in rows:
        if text not in index:
            index[text] = len(corpus)
            corpus.append(text)
        relevant[query.lower().strip()].add(index[text])
    return sorted(relevant), corpus, relevant


def score_rankings(queries, relevant, scores_of):
    nd, rc = [], []
    for qi, q in enumerate(queries):
        ranked = list(np.argsort(-scores_of(qi, q), kind="stable")[:100])
        a, b_ = metrics(ranked, relevant[q])
        nd.append(a)
        rc.append(b_)
    return {"ndcg@10": float(np.mean(nd)), "recall@100": float(np.mean(rc))}


def bm25_source(rows):
    queries, corpus, relevant = build_source(rows)
    bm25 = bm25_scores_fn(corpus)
    return score_rankings(queries, relevant, lambda qi, q: bm25(q))


def embed_prompted(embed_fn, queries, corpus, dims=None, prompts=None):
    """Query and document vectors, each text after its task's prompt (served_prompts) as the server puts it."""
    prompts = prompts or {}
    prompted = lambda texts, prompt: [prompt + t for t in texts] if prompt else texts
    document_fn = getattr(embed_fn, "document", embed_fn)  # the folder's document form (onnx_embed_fn's, static_embed_fn's)
    return (embed_fn(prompted(queries, prompts.get("retrieval/query", "")), dims),
            document_fn(prompted(corpus, prompts.get("retrieval/document", "")), dims))


def model_source(rows, embed_fn, dims=None, prompts=None):
    """nDCG@10 and recall@100 of the model's ranking; `prompts` (served_prompts) go before the
    queries and documents as the server puts them."""
    queries, corpus, relevant = build_source(rows)
    query_vecs, doc_vecs = embed_prompted(embed_fn, queries, corpus, dims, prompts)
    model_scores = query_vecs @ doc_vecs.T
    return score_rankings(queries, relevant, lambda qi, q: model_scores[qi])


def evaluate_source(rows, embed_fn, dims=None, bm25=None, dtypes=False, prompts=None):
    queries, corpus, relevant = build_source(rows)
    out = {"queries": len(queries), "corpus": len(corpus), "bm25": bm25 or bm25_source(rows)}
    if not dtypes:
        return {**out, "model": model_source(rows, embed_fn, dims, prompts)}
    query_vecs, doc_vecs = embed_prompted(embed_fn, queries, corpus, dims, prompts)
    out["model"] = score_rankings(queries, relevant, lambda qi, q: query_vecs[qi] @ doc_vecs.T)
    out["dtypes"] = dtype_figures(queries, relevant, query_vecs, doc_vecs)
    return out


def dtype_figures(queries, relevant, q, d):
    """nDCG@10 with the vectors as output_dtype returns them (src/contract/vectors.ts): int8
    round(x · 16√dims) clamped to [-128, 127]; binary the signs (Hamming ranking = ranking by the
    dot product of ±1 vectors), alone and with its top 100 rescored by the float vectors."""
    scale = 16 * np.sqrt(d.shape[1])
    i8 = lambda v: np.clip(np.round(v * scale), -128, 127).astype(np.float32)
    sign = lambda v: np.where(v > 0, 1.0, -1.0).astype(np.float32)
    qi, di, qs, ds = i8(q), i8(d), sign(q), sign(d)
    def rescored(k, _):
        hamming = qs[k] @ ds.T
        top = np.argsort(-hamming, kind="stable")[:100]
        scores = np.full(len(d), -np.inf)
        scores[top] = d[top] @ q[k]
        return scores
    return {"int8": score_rankings(queries, relevant, lambda k, _: qi[k] @ di.T)["ndcg@10"],
            "binary": score_rankings(queries, relevant, lambda k, _: qs[k] @ ds.T)["ndcg@10"],
            "binary+rescore": score_rankings(queries, relevant, rescored)["ndcg@10"]}


def print_report(results, label="model"):
    """Prints the per-source table and adds the means (over sources, over queries, per genre) to results."""
    print(f"{'source':<20}{'queries':>8}{'corpus':>8}  {'BM25 nDCG@10':>12}{label:>8}{'rel.':>7}  {'BM25 R@100':>10}{label:>8}")
    sources = [s for s in sorted(results) if s in GENRES]
    for source in sources:
        r = results[source]
        rel = r["model"]["ndcg@10"] / r["bm25"]["ndcg@10"]
        print(f"{source:<20}{r['queries']:>8}{r['corpus']:>8}  {r['bm25']['ndcg@10']:>12.3f}{r['model']['ndcg@10']:>8.3f}"
              f"{rel:>7.2f}  {r['bm25']['recall@100']:>10.3f}{r['model']['recall@100']:>8.3f}", flush=True)
    mb = float(np.mean([results[s]["bm25"]["ndcg@10"] for s in sources]))
    mm = float(np.mean([results[s]["model"]["ndcg@10"] for s in sources]))
    print(f"{'mean over sources':<36}  {mb:>12.3f}{mm:>8.3f}{mm / mb:>7.2f}")
    nq = sum(results[s]["queries"] for s in sources)
    ub = sum(results[s]["bm25"]["ndcg@10"] * results[s]["queries"] for s in sources) / nq
    um = sum(results[s]["model"]["ndcg@10"] * results[s]["queries"] for s in sources) / nq
    print(f"{'mean over all queries':<36}  {ub:>12.3f}{um:>8.3f}{um / ub:>7.2f}", flush=True)
    results["mean"] = {"bm25_ndcg@10": mb, "model_ndcg@10": mm, "relative": mm / mb}
    results["mean_over_queries"] = {"bm25_ndcg@10": ub, "model_ndcg@10": um, "relative": um / ub}
    genres = {}
    for genre in sorted({GENRES[s] for s in sources}):
        members = [s for s in sources if GENRES[s] == genre]
        gb = float(np.mean([results[s]["bm25"]["ndcg@10"] for s in members]))
        gm = float(np.mean([results[s]["model"]["ndcg@10"] for s in members]))
        genres[genre] = {"sources": members, "bm25_ndcg@10": gb, "model_ndcg@10": gm, "relative": gm / gb}
        print(f"{'genre ' + genre:<36}  {gb:>12.3f}{gm:>8.3f}{gm / gb:>7.2f}", flush=True)
    results["genres"] = genres
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True, help="model folder: static (onnx/model.onnx int8 table) or transformer "
                                                  "(run through onnxruntime, which must be installed)")
    p.add_argument("--onnx-file", help="transformer: file under onnx/ (default: from lexembed.json dtype)")
    p.add_argument("--dims", type=int, default=None, help="evaluate a Matryoshka prefix")
    p.add_argument("--max-tokens", type=int, default=None, help="override max_input_tokens of lexembed.json")
    p.add_argument("--json", help="write results here too")
    p.add_argument("--bm25-from", help="evaluation.json of the same split to take the BM25 figures from "
                                       "(they do not depend on the model; skips recomputing them)")
    p.add_argument("--sources", help="comma-separated sources or genres to score (default: all)")
    p.add_argument("--dtypes", action="store_true", help="also score the vectors as output_dtype int8 and binary return them "
                                                          "(binary alone and with float rescoring of its top 100)")
    args = p.parse_args()
    needs("model.evaluate.held_out", (args.data, "pairs"), (args.model, "folder"))
    evaluate_folder(args.data, args.model, args.json, args.bm25_from, args.dims, args.max_tokens, args.onnx_file,
                    set(sources_of(args.sources)) if args.sources else None, args.dtypes)


def load_bm25(path):
    """The BM25 figures of an earlier evaluation.json (they do not depend on the model)."""
    if not path:
        return {}
    with open(path) as f:
        return {k: v["bm25"] for k, v in json.load(f).items() if isinstance(v, dict) and "bm25" in v}


def evaluate_folder(data, model, json_path=None, bm25_from=None, dims=None, max_tokens=None, onnx_file=None, sources=None, dtypes=False):
    bm25 = load_bm25(bm25_from)
    _, held_out = split_pairs(data, sources)
    by_source = collections.defaultdict(list)
    for row in held_out:
        by_source[row[0]].append(row)
    if is_static_folder(model):
        embed_fn = static_embed_fn(model, max_tokens)
    else:
        embed_fn = onnx_embed_fn(model, max_tokens, onnx_file)
    prompts = served_prompts(model)
    results = {source: evaluate_source(by_source[source], embed_fn, dims, bm25.get(source), dtypes, prompts) for source in sorted(by_source)}
    print_report(results)
    if dtypes:
        sources = [s for s in results if "dtypes" in results[s]]
        means = {k: float(np.mean([results[s]["dtypes"][k] for s in sources])) for k in ("int8", "binary", "binary+rescore")}
        results["mean"]["dtypes"] = means
        base = results["mean"]["model_ndcg@10"]
        print("output_dtype, mean over sources: float %.3f  " % base + "  ".join(f"{k} {v:.3f} (×{v / base:.3f})" for k, v in means.items()), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
