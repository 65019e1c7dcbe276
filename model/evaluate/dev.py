"""Scores a model folder on the out-of-distribution dev set (../shared/data/legal-eval-dev: legal
questions → passages from sources that are not in the training data), per task and mean, ÷ BM25.

    python3 -m model.evaluate.dev --model models/legal-2-embedder [--json OUT] [--mix] [--fuse]

The metrics, BM25 and reciprocal-rank fusion are the shared scorer's own
(../shared/tools/evaluate-retrieval.py, imported), so the figures are the ones it prints over
HTTP; the model runs here as lexembed serves it (static table in numpy, anything else through
onnxruntime), without a server. Vectors are cached under model/work/dev-cache by the model file's
hash, so re-scoring a folder (e.g. --mix) costs seconds.

--mix (a hybrid folder): also scores each part alone and weighted mixes of the parts' cosines
  (transformer/static, and lexical after model/graph/lexical.py), to choose model/export/hybrid.py's
  --weight and model/graph/lexical.py's --weights.
--fuse: also reciprocal-rank fusion with BM25 (what a hybrid keyword + vector search gives).
--sparse: also the sparse vectors (POST /v1/embeddings/sparse, model/rules/sparse_weights.py's sparse_vector)
  as stores use them: `tf` weighting with the corpus's own idf applied (Qdrant `modifier: "idf"`),
  and documents with `idf` weighting against `tf` queries by plain dot product (pgvector
  sparsevec); each alone and fused with the dense ranking (reciprocal rank, k 60).
--prefixes: also each Matryoshka prefix the folder lists (lexembed.json dimensions.matryoshka), as
  `dimensions: N` serves it (the first N components, unit length again).

Never train on this set: one task (oyez-scotus) is licensed for evaluation only.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import time

import numpy as np

from model.common.folder import needs, SHARED, WORK
from model.evaluate.served import is_static_folder, onnx_embed_fn, served_prompts, static_embed_fn

DEFAULT_DEV = os.path.join(SHARED, "data", "legal-eval-dev")
DEFAULT_SCORER = os.path.join(SHARED, "tools", "evaluate-retrieval.py")
CACHE = os.path.join(WORK, "dev-cache")
MIX_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0)


def load_scorer(path=DEFAULT_SCORER):
    if not os.path.exists(path):
        raise SystemExit(f"model/evaluate/dev.py: the shared scorer is not at {path}; pass --scorer <evaluate-retrieval.py>")
    spec = importlib.util.spec_from_file_location("evaluate_retrieval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(scorer, ranked, queries, qrels):
    nd, rc = zip(*(scorer.metrics(list(r), qrels[q["id"]]) for r, q in zip(ranked, queries)))
    return {"ndcg@10": float(np.mean(nd)), "recall@100": float(np.mean(rc))}


def dense_ranking(scorer, q, d, ids):
    out = []
    for k in range(0, len(q), 256):
        out.extend([ids[i] for i in row] for row in scorer.topk_rows(q[k:k + 256] @ d.T, scorer.TOPK))
    return out


def model_key(folder, graph="model.onnx"):
    """The cache key: a hash of the folder's served files (the graph, tokenizer, settings)."""
    h = hashlib.sha1()
    for name in (f"onnx/{graph}", "tokenizer.json", "lexembed.json"):
        with open(os.path.join(folder, name), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def cached_vectors(folder, key, name, kind, texts, embed_fn, use_cache=True):
    path = os.path.join(CACHE, f"{key}.{name}.{kind}.npy")
    if use_cache and os.path.exists(path):
        return np.load(path)
    vectors = embed_fn(texts).astype(np.float32)
    if use_cache:
        os.makedirs(CACHE, exist_ok=True)
        np.save(path, vectors)
    return vectors


def parts(folder, vectors):
    """A hybrid's [sqrt(wt)·t/|t|, sqrt(ws)·s/|s|(, sqrt(wl)·l/|l|)] split back into its unit parts
    (transformer, static and, after model/graph/lexical.py, lexical); a Matryoshka rotation
    (model/graph/matryoshka.py) is undone first."""
    with open(os.path.join(folder, "training.json")) as f:
        training = json.load(f)
    hybrid = training["hybrid"]
    if "lexical" in hybrid and hybrid["lexical"].get("recipe"):  # v2: the graph ends with · M
        import onnx
        from onnx import numpy_helper
        rotation = next(t for t in onnx.load(os.path.join(folder, "onnx", "model.onnx")).graph.initializer if t.name == "matryoshka.rotation")
        if "document_form" in hybrid:  # model/graph/document_form.py's last step first: the spread is its own inverse
            from model.rules.document_form import spread
            vectors = spread(vectors)
        vectors = vectors @ numpy_helper.to_array(rotation).T
    split = hybrid.get("transformer_dims") or training["transformer_runs"][-1]["recipe"]["hidden"]
    lexical = hybrid.get("lexical", {}).get("buckets", 0)
    end = vectors.shape[1] - lexical
    unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return [unit(m) for m in (vectors[:, :split], vectors[:, split:end], vectors[:, end:]) if m.shape[1]]


def mix_weights(count):
    """The shares scored by --mix: transformer/static (two parts), or transformer/static/lexical."""
    if count == 2:
        return [(w, 1 - w) for w in MIX_WEIGHTS]
    grid = [(wt, round(1 - wt - wl, 2), wl) for wt in (0.15, 0.2, 0.25, 0.3) for wl in (0.3, 0.4, 0.5, 0.6, 0.7)]
    return [(1, 0, 0), (0, 1, 0), (0, 0, 1)] + grid


def evaluate_dev(model, dev=DEFAULT_DEV, scorer_path=DEFAULT_SCORER, mix=False, fuse=False, max_queries=0,
                 use_cache=True, log=print, query_prompt=None, prefixes=False, sparse=False, graph=None):
    """query_prompt None: the folder's own retrieval/query prompt (lexembed.json), as the server
    puts it before every query the shared scorer sends; documents always get the folder's
    retrieval/document prompt."""
    scorer = load_scorer(scorer_path)
    prompts = served_prompts(model)
    if query_prompt is None:
        query_prompt = prompts["retrieval/query"]
    document_prompt = prompts["retrieval/document"]
    if graph and is_static_folder(model):
        raise SystemExit(f"model/evaluate/dev.py: --graph {graph}: {model} is a static model (no ONNX graph is run)")
    embed_fn = static_embed_fn(model) if is_static_folder(model) else onnx_embed_fn(model, file=graph)
    # passages as the server embeds `task: retrieval/document` (the folder's document form, if any)
    document_fn = getattr(embed_fn, "document", embed_fn)
    key = model_key(model, graph or "model.onnx")
    listed = served_prefixes(model) if prefixes else []
    results = {}
    for task_dir in scorer.expand_dirs([dev]):
        name = os.path.basename(task_dir.rstrip("/"))
        corpus, queries, qrels = scorer.load_task(task_dir)
        if max_queries:
            queries = queries[:max_queries]
        ids = [d["id"] for d in corpus]
        t0 = time.time()
        d = cached_vectors(model, key, name, "corpus", [document_prompt + x["text"] for x in corpus], document_fn, use_cache)
        kind = f"queries{max_queries or ''}" + (f".prompt-{hashlib.sha1(query_prompt.encode()).hexdigest()[:8]}" if query_prompt else "")
        q = cached_vectors(model, key, name, kind, [query_prompt + x["text"] for x in queries], embed_fn, use_cache)
        row = {"queries": len(queries), "corpus": len(corpus), "bm25": bm25_figures(scorer, name, corpus, queries, qrels, max_queries),
               "model": score(scorer, dense_ranking(scorer, q, d, ids), queries, qrels), "seconds": round(time.time() - t0, 1)}
        # documents in the query form (for --mix and --prefixes only): what the server gives below
        # full width (the document form is full-width only), and the parts --mix weighs afresh
        dq = d if not (served_document_form(model) and (mix or listed)) else cached_vectors(
            model, key, name, QUERY_FORM_CORPUS, [document_prompt + x["text"] for x in corpus], embed_fn, use_cache)
        if dq is not d:  # what a client that embeds passages without `task: retrieval/document` gets
            row["documents_in_query_form"] = score(scorer, dense_ranking(scorer, q, dq, ids), queries, qrels)
        if mix:
            qp, dp = parts(model, q), parts(model, dq)
            row["mix"] = {}
            for ws in mix_weights(len(qp)):
                qm = np.concatenate([np.sqrt(w) * x for w, x in zip(ws, qp)], axis=1)
                dm = np.concatenate([np.sqrt(w) * x for w, x in zip(ws, dp)], axis=1)
                row["mix"]["/".join(f"{w:.2f}" for w in ws)] = score(scorer, dense_ranking(scorer, qm, dm, ids), queries, qrels)
        if listed:
            row["prefixes"] = {str(k): score(scorer, dense_ranking(scorer, unit_rows(q[:, :k]), unit_rows(dq[:, :k]), ids), queries, qrels)
                               for k in listed}
        if sparse:
            row["sparse"] = sparse_figures(scorer, model, [document_prompt + x["text"] for x in corpus], [query_prompt + x["text"] for x in queries],
                                           q, d, ids, queries, qrels)
        if fuse:
            ranked = [[ids[i] for i in r] for r in scorer.run_fusion(corpus, queries, q, d)]
            row["fused_with_bm25"] = score(scorer, ranked, queries, qrels)
        results[name] = row
        log(f"{name:<16} {len(queries):>5} q {len(corpus):>6} docs  BM25 {row['bm25']['ndcg@10']:.3f}  "
            f"model {row['model']['ndcg@10']:.3f} (×{row['model']['ndcg@10'] / row['bm25']['ndcg@10']:.2f})  "
            f"R@100 {row['bm25']['recall@100']:.3f} / {row['model']['recall@100']:.3f}"
            + (f"  fused {row['fused_with_bm25']['ndcg@10']:.3f}" if fuse else ""))
    tasks = list(results)
    mean = lambda k, f=lambda r: r: float(np.mean([f(results[t])[k]["ndcg@10"] for t in tasks]))
    results["mean"] = {"bm25_ndcg@10": mean("bm25"), "model_ndcg@10": mean("model"),
                       "relative": mean("model") / mean("bm25"),
                       "worst_task_relative": min(results[t]["model"]["ndcg@10"] / results[t]["bm25"]["ndcg@10"] for t in tasks)}
    log(f"{'mean':<16} BM25 {results['mean']['bm25_ndcg@10']:.3f}  model {results['mean']['model_ndcg@10']:.3f} "
        f"(×{results['mean']['relative']:.2f}; worst task ×{results['mean']['worst_task_relative']:.2f})")
    if "documents_in_query_form" in results[tasks[0]]:
        results["mean"]["documents_in_query_form"] = mean("documents_in_query_form")
        log(f"{'mean':<16} documents embedded without task retrieval/document (the query form): "
            f"{results['mean']['documents_in_query_form']:.3f}")
    if mix:
        results["mean"]["mix"] = {w: float(np.mean([results[t]["mix"][w]["ndcg@10"] for t in tasks])) for w in results[tasks[0]]["mix"]}
        log("mix shares transformer/static(/lexical), mean nDCG@10: " + "  ".join(
            f"{w}: {v:.3f}" + "".join(f" [{t[:4]} {results[t]['mix'][w]['ndcg@10']:.3f}]" for t in tasks)
            for w, v in results["mean"]["mix"].items()))
    if listed:
        results["mean"]["prefixes"] = {str(k): float(np.mean([results[t]["prefixes"][str(k)]["ndcg@10"] for t in tasks])) for k in listed}
        bm25 = results["mean"]["bm25_ndcg@10"]
        log("prefixes, mean nDCG@10 (× BM25): " + "  ".join(f"{k}: {v:.3f} (×{v / bm25:.2f})" for k, v in results["mean"]["prefixes"].items()))
    if sparse:
        results["mean"]["sparse"] = {k: float(np.mean([results[t]["sparse"][k]["ndcg@10"] for t in tasks])) for k in results[tasks[0]]["sparse"]}
        bm25 = results["mean"]["bm25_ndcg@10"]
        log("sparse, mean nDCG@10 (× BM25): " + "  ".join(f"{k}: {v:.3f} (×{v / bm25:.2f})" for k, v in results["mean"]["sparse"].items()))
    if fuse:
        results["mean"]["fused_with_bm25"] = float(np.mean([results[t]["fused_with_bm25"]["ndcg@10"] for t in tasks]))
        log(f"{'mean fused':<16} {results['mean']['fused_with_bm25']:.3f}")
    return results


def sparse_figures(scorer, folder, documents, queries_text, q, d, ids, queries, qrels, k=60):
    """nDCG@10 of the sparse vectors as two kinds of store use them, alone and fused with the dense ranking."""
    import scipy.sparse as sp
    from model.rules.sparse_weights import read_sparse_bigrams, read_sparse_canonical, read_sparse_expansion, read_sparse_table, read_sparse_weight, sparse_vector, sparse_vocabulary_size
    from model.common.tokenizer_files import load_tokenizer
    from model.common.legal_data import encode_capped
    with open(os.path.join(folder, "lexembed.json")) as f:
        settings = json.load(f)
    idf, avg_len = read_sparse_table(settings)
    weight = read_sparse_weight(settings)
    canonical = read_sparse_canonical(settings)
    bigrams = read_sparse_bigrams(settings)
    expansion = read_sparse_expansion(settings)
    tok = load_tokenizer(folder)
    vocab = sparse_vocabulary_size(settings)
    doc_ids = [encode_capped(tok, t, settings["max_input_tokens"]) for t in documents]

    def matrix(ids_list, weighting, queries=False):
        rows, cols, vals = [], [], []
        for r, ids in enumerate(ids_list):
            pieces, values = sparse_vector(ids, idf, avg_len, weighting=weighting, weight=weight, canonical=canonical, bigrams=bigrams,
                                           expansion=expansion if queries else None)
            rows.extend([r] * len(pieces)); cols.extend(pieces.tolist()); vals.extend(values.tolist())
        return sp.csr_matrix((vals, (rows, cols)), shape=(len(ids_list), vocab))
    qm = matrix([encode_capped(tok, t, settings["max_input_tokens"]) for t in queries_text], "tf", queries=True)  # queries: tf, task retrieval/query
    n = len(documents)
    documents_tf = matrix(doc_ids, "tf")
    df = np.asarray((documents_tf > 0).sum(0)).ravel()
    corpus_idf = np.log(1 + (n - df + 0.5) / (df + 0.5))  # Qdrant's idf modifier
    dense_scores = q @ d.T
    out = {}
    # (documents' weighting, what the store multiplies in): Qdrant's idf modifier, a plain dot product
    stores = (("corpus idf (Qdrant)", "tf", corpus_idf), ("relative documents, corpus idf (Qdrant)", "relative", corpus_idf),
              ("model idf (pgvector)", "idf", np.ones(vocab)))
    for name, weighting, weights in stores:
        if weighting == "relative" and "weight" not in settings["sparse"]:
            continue  # without learned weights, relative is tf
        dm = documents_tf if weighting == "tf" else matrix(doc_ids, weighting)
        scores = (qm @ sp.diags(weights) @ dm.T).toarray()
        out[name] = score(scorer, [[ids[i] for i in r] for r in scorer.topk_rows(scores, scorer.TOPK)], queries, qrels)
        rankings = [(s_, scorer.topk_rows(s_, scorer.TOPK)) for s_ in (scores, dense_scores)]
        rows = np.arange(len(scores))[:, None]
        fused = np.zeros_like(scores)
        for _, top in rankings:
            fused[rows, top] += 1.0 / (k + 1 + np.arange(top.shape[1]))
        out[name + " + dense, RRF"] = score(scorer, [[ids[i] for i in r] for r in scorer.topk_rows(fused, scorer.TOPK)], queries, qrels)
        for fusion in ("DBSF", "min-max"):
            fused = score_fusion(rankings, fusion)
            out[f"{name} + dense, {fusion}"] = score(scorer, [[ids[i] for i in r] for r in scorer.topk_rows(fused, scorer.TOPK)], queries, qrels)
    return out


def score_fusion(rankings, kind):
    """Score fusion as stores run it over each ranking's top rows ((scores, top indices) pairs):
    DBSF (Qdrant's `fusion: "dbsf"`: each list's scores rescaled by its mean ± 3 standard
    deviations) or min-max (Elasticsearch's linear retriever, OpenSearch's normalization
    processor), then summed; a document outside a list gets nothing from it, one outside every
    list is not ranked."""
    fused = np.zeros_like(rankings[0][0])
    listed = np.zeros(fused.shape, dtype=bool)
    for scores, top in rankings:
        values = np.take_along_axis(scores, top, axis=1)
        if kind == "DBSF":
            low = values.mean(axis=1, keepdims=True) - 3 * values.std(axis=1, keepdims=True)
            span = 6 * values.std(axis=1, keepdims=True)
        else:
            low = values.min(axis=1, keepdims=True)
            span = values.max(axis=1, keepdims=True) - low
        rows = np.arange(len(top))[:, None]
        fused[rows, top] += (values - low) / np.maximum(span, 1e-12)
        listed[rows, top] = True
    fused[~listed] = -np.inf
    return fused


def served_ids(folder, dev=DEFAULT_DEV, tasks=None):
    """Per dev task (name, corpus, queries, qrels, {"corpus": ids, "queries": ids}): each text after
    its task's prompt, cut at the folder's max_input_tokens, as lexembed serves it."""
    from model.common.tokenizer_files import load_tokenizer
    from model.common.legal_data import encode_capped
    scorer = load_scorer()
    with open(os.path.join(folder, "lexembed.json")) as f:
        max_tokens = json.load(f)["max_input_tokens"]
    tok = load_tokenizer(folder)
    prompts = served_prompts(folder)
    for task_dir in scorer.expand_dirs([dev]):
        name = os.path.basename(task_dir.rstrip("/"))
        if tasks is not None and name not in tasks:
            continue
        corpus, queries, qrels = scorer.load_task(task_dir)
        ids = {kind: [encode_capped(tok, prompts[task] + x["text"], max_tokens) for x in items]
               for kind, items, task in (("corpus", corpus, "retrieval/document"), ("queries", queries, "retrieval/query"))}
        yield name, corpus, queries, qrels, ids


QUERY_FORM_CORPUS = "corpus-query-form"  # the cache's name for a document-form folder's passages in the query form


def served_document_form(folder):
    """lexembed.json "document_form" (model/graph/document_form.py), or None."""
    with open(os.path.join(folder, "lexembed.json")) as f:
        return json.load(f).get("document_form")


def served_prefixes(folder):
    with open(os.path.join(folder, "lexembed.json")) as f:
        return json.load(f)["dimensions"].get("matryoshka", [])


def unit_rows(m):
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


BM25_CACHE = os.path.join(CACHE, "bm25.json")


def bm25_figures(scorer, name, corpus, queries, qrels, max_queries):
    """BM25 does not depend on the model: computed once per task and query count, then cached."""
    key = f"{name}.{max_queries}.{len(corpus)}"
    cached = json.load(open(BM25_CACHE)) if os.path.exists(BM25_CACHE) else {}
    if key not in cached:
        ranked, _ = scorer.run_bm25(corpus, queries)
        ids = [d["id"] for d in corpus]
        cached[key] = score(scorer, [[ids[i] for i in r] for r in ranked], queries, qrels)
        os.makedirs(CACHE, exist_ok=True)
        with open(BM25_CACHE, "w") as f:
            json.dump(cached, f, indent=1)
    return cached[key]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a served model folder (static, transformer or hybrid)")
    p.add_argument("--dev", default=DEFAULT_DEV, help="the dev set folder (default: ../shared/data/legal-eval-dev)")
    p.add_argument("--scorer", default=DEFAULT_SCORER, help="the shared evaluate-retrieval.py")
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--mix", action="store_true", help="hybrid: score each part alone and weighted mixes")
    p.add_argument("--fuse", action="store_true", help="also reciprocal-rank fusion with BM25")
    p.add_argument("--sparse", action="store_true", help="also the sparse vectors as stores use them, alone and fused with the dense ranking")
    p.add_argument("--prefixes", action="store_true", help="also score each Matryoshka prefix the folder lists")
    p.add_argument("--graph", help="which file of the folder's onnx/ to run (default: model.onnx), e.g. "
                   "model_quantized.onnx for the int8 graph (model/runtime/quantize.py)")
    p.add_argument("--max-queries", type=int, default=0, help="first N queries per task (0: all)")
    p.add_argument("--query-prompt", default=None, help="text put before every query instead of the folder's own retrieval/query prompt "
                   "(lexembed.json; '' for none), to score a prompt before shipping it")
    p.add_argument("--no-cache", action="store_true", help="embed again even if vectors are cached")
    args = p.parse_args()
    needs("model.evaluate.dev", (args.model, "folder"), (args.dev, "dev"))
    if not os.path.isdir(args.dev):
        raise SystemExit(f"model/evaluate/dev.py: no dev set at {args.dev}; pass --dev <legal-eval-dev folder>")
    results = evaluate_dev(args.model, args.dev, args.scorer, args.mix, args.fuse, args.max_queries, not args.no_cache,
                           query_prompt=args.query_prompt, prefixes=args.prefixes, sparse=args.sparse,
                           graph=args.graph)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
