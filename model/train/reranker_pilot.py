"""The cross-encoder reranker pilot (issue 67 item 2): does a cross-encoder started from the served
hybrid's transformer weights, tuned ~20 minutes on a slice of the legal pairs with hard negatives
mined by the served hybrid (dense + sparse, DBSF: what `lexembed index` ranks by), rerank the
hybrid's top 30 on the dev set better than the hybrid ranks them itself? Never trains on the dev set.

    python3 -m model.train.reranker_pilot mine  --out model/work/rerank [--pool 1500 --queries 350]
    python3 -m model.train.reranker_pilot train --out model/work/rerank --minutes 20 [--lr 1e-4]
    python3 -m model.train.reranker_pilot dev   --out model/work/rerank [--max-queries 200]

`mine` writes train.jsonl (query, positive, the hybrid's top-30 negatives; the pair's own heading
and text and containments left out, as model.data.negatives does); `train` writes ce.pt (every 100
steps and at the end); `dev` writes dev-ce.pt.json: each task's nDCG@10 of the hybrid's ranking and
of its top 30 reranked (the cross-encoder alone, and its z-score added to the hybrid's at several
weights). Needs torch, onnxruntime and scipy.
"""
import argparse
import json
import os
import random
import time

import numpy as np

from model.common.folder import ROOT, SHARED, need
from model.common.legal_data import encode_capped, is_held_out, load_pairs
from model.common.tokenizer_files import load_tokenizer
from model.evaluate.dev import load_scorer, score, score_fusion
from model.evaluate.served import onnx_embed_fn, served_prompts
from model.rules.sparse_weights import (read_sparse_bigrams, read_sparse_canonical, read_sparse_expansion, read_sparse_table, read_sparse_weight,
                                        sparse_vector, sparse_vocabulary_size)

FOLDER = os.path.join(ROOT, "models", "legal-2-embedder")
DATA = os.path.join(SHARED, "data", "legal-pairs")
DEV = os.path.join(SHARED, "data", "legal-eval-dev")
SCORER = os.path.join(SHARED, "tools", "evaluate-retrieval.py")
DEPTH = 30
TOTAL = 224  # tokens of [CLS] query [SEP] passage [SEP] (the query at most 40)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


class Hybrid:
    """The served hybrid's ranking: dense cosine and the sparse vectors (documents `relative`,
    queries `tf` with expansion, corpus idf), each list's top 100 fused by DBSF."""

    def __init__(self, folder=FOLDER):
        with open(os.path.join(folder, "lexembed.json")) as f:
            self.settings = json.load(f)
        self.embed = onnx_embed_fn(folder)
        self.prompts = served_prompts(folder)
        self.tok = load_tokenizer(folder)
        s = self.settings
        self.idf, self.avg_len = read_sparse_table(s)
        self.parts = dict(weight=read_sparse_weight(s), canonical=read_sparse_canonical(s), bigrams=read_sparse_bigrams(s))
        self.expansion = read_sparse_expansion(s)
        self.vocab = sparse_vocabulary_size(s)

    def _matrix(self, texts, weighting, queries=False):
        import scipy.sparse as sp
        rows, cols, vals = [], [], []
        for r, t in enumerate(texts):
            ids = encode_capped(self.tok, t, self.settings["max_input_tokens"])
            pieces, values = sparse_vector(ids, self.idf, self.avg_len, weighting=weighting, expansion=self.expansion if queries else None, **self.parts)
            rows.extend([r] * len(pieces)); cols.extend(pieces.tolist()); vals.extend(values.tolist())
        return sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), self.vocab))

    def corpus(self, texts):
        import scipy.sparse as sp
        docs = [self.prompts["retrieval/document"] + t for t in texts]
        d = self.embed.document(docs).astype(np.float32)
        tf = self._matrix(docs, "tf")
        df = np.asarray((tf > 0).sum(0)).ravel()
        idf = np.log(1 + (len(texts) - df + 0.5) / (df + 0.5))
        return d, (sp.diags(idf) @ self._matrix(docs, "relative").T).tocsr()

    def top(self, corpus, queries, k=DEPTH, scorer=None):
        """(indices, fused scores) of each query's top k."""
        d, sparse_t = corpus
        qs = [self.prompts["retrieval/query"] + t for t in queries]
        q = self.embed(qs).astype(np.float32)
        qm = self._matrix(qs, "tf", queries=True)
        idx, val = [], []
        for s in range(0, len(qs), 256):
            dense = q[s:s + 256] @ d.T
            sparse = (qm[s:s + 256] @ sparse_t).toarray()
            rankings = [(x, scorer.topk_rows(x, scorer.TOPK)) for x in (sparse, dense)]
            fused = score_fusion(rankings, "DBSF")
            top = scorer.topk_rows(fused, max(k, 1))
            idx.append(top)
            val.append(np.take_along_axis(fused, top, axis=1))
        return np.concatenate(idx), np.concatenate(val)


def mine(args):
    scorer = load_scorer(SCORER)
    rng = random.Random(13)
    by_source = {}
    for subset, query, text, doc in load_pairs(need("model.train.reranker_pilot", DATA, "pairs")):
        if not is_held_out(subset, doc):
            by_source.setdefault(subset, []).append((query, text[:args.chars]))
    hybrid = Hybrid()
    out = []
    for subset, rows in by_source.items():
        rng.shuffle(rows)
        pool = rows[:args.pool]
        asked = pool[:args.queries]
        t0 = time.time()
        corpus = hybrid.corpus([t for _, t in pool])
        top, _ = hybrid.top(corpus, [q for q, _ in asked], DEPTH, scorer)
        kept = 0
        for i, (q, pos) in enumerate(asked):
            fold = q.strip().casefold()
            negs = []
            for j in top[i]:
                jq, jt = pool[j]
                if j == i or jq.strip().casefold() == fold or jt == pos or jt in pos or pos in jt:
                    continue
                negs.append(jt)
            if len(negs) >= 7:
                out.append({"source": subset, "query": q, "positive": pos, "negatives": negs, "positive_rank": int(np.where(top[i] == i)[0][0]) if i in top[i] else -1})
                kept += 1
        log(f"{subset}: pool {len(pool)}, {kept}/{len(asked)} queries kept, {time.time() - t0:.0f} s")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "train.jsonl"), "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    ranks = [r["positive_rank"] for r in out]
    log(f"{len(out)} training queries; positive at hybrid rank 1: {np.mean([r == 0 for r in ranks]):.3f}, in top 30: {np.mean([r >= 0 for r in ranks]):.3f}")


class CrossEncoder:
    """[CLS] query [SEP] passage [SEP] through the shipped transformer; score = w·mean(h) + b."""

    def __init__(self, folder=FOLDER, state=None):
        import torch
        from model.export.onnx_weights import load_bert
        self.torch = torch
        self.bert = load_bert(folder, dropout=0.1)
        hidden = self.bert.config["hidden_size"]
        self.head = torch.nn.Linear(hidden, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        if state:
            self.bert.load_state_dict(state["bert"])
            self.head.load_state_dict(state["head"])
        self.tok = load_tokenizer(folder)

    def parameters(self):
        return list(self.bert.parameters()) + list(self.head.parameters())

    def encode(self, query, passage, q_max=40, total=TOTAL):
        q = encode_capped(self.tok, query, q_max)
        p = encode_capped(self.tok, passage, total - len(q) + 1)[1:]  # drop its [CLS]: [CLS] q [SEP] p [SEP]
        return q + p, len(q)

    def batch(self, pairs):
        torch = self.torch
        enc = [self.encode(q, p) for q, p in pairs]
        width = max(len(ids) for ids, _ in enc)
        x = torch.zeros((len(enc), width), dtype=torch.long)
        m = torch.zeros_like(x)
        t = torch.zeros_like(x)
        for r, (ids, qlen) in enumerate(enc):
            x[r, :len(ids)] = torch.tensor(ids)
            m[r, :len(ids)] = 1
            t[r, qlen:len(ids)] = 1
        return x, m, t

    def scores(self, x, m, t):
        h = self.bert(x, m, t)
        pooled = (h * m[:, :, None]).sum(1) / m.sum(1, keepdim=True)
        return self.head(pooled.float()).squeeze(-1)


def train(args):
    import torch
    torch.manual_seed(7)
    rng = random.Random(7)
    rows = [json.loads(line) for line in open(need("model.train.reranker_pilot train", os.path.join(args.out, "train.jsonl"), "rerank-pairs"))]
    rng.shuffle(rows)
    ce = CrossEncoder()
    params = ce.parameters()
    opt = torch.optim.AdamW([{"params": list(ce.bert.parameters()), "lr": args.lr}, {"params": list(ce.head.parameters()), "lr": args.lr * 10}], weight_decay=0.01)
    group = args.group
    deadline = time.time() + args.minutes * 60
    step, at, losses = 0, 0, []
    est_steps = args.steps or 10 ** 9
    ce.bert.train()
    while time.time() < deadline and step < est_steps:
        qs = rows[at:at + args.queries_per_step]
        at += args.queries_per_step
        if at >= len(rows):
            at = 0
            rng.shuffle(rows)
        pairs = []
        for r in qs:
            negs = rng.sample(r["negatives"][:DEPTH], group - 1)
            pairs += [(r["query"], r["positive"])] + [(r["query"], n) for n in negs]
        x, m, t = ce.batch(pairs)
        warm = min(1.0, (step + 1) / 30)
        for g, base in zip(opt.param_groups, (args.lr, args.lr * 10)):
            g["lr"] = base * warm
        with torch.autocast("cpu", dtype=torch.bfloat16):
            s = ce.scores(x, m, t).view(len(qs), group)
        loss = torch.nn.functional.cross_entropy(s.float(), torch.zeros(len(qs), dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if step % 20 == 0:
            log(f"step {step}: loss {np.mean(losses[-20:]):.3f} ({at} queries into the epoch)")
        if step % 100 == 0:
            save(ce, args.out, step)
    save(ce, args.out, step)
    log(f"trained {step} steps, {step * args.queries_per_step} queries seen; last loss {np.mean(losses[-20:]):.3f}")


def save(ce, out, step):
    ce.torch.save({"bert": ce.bert.state_dict(), "head": ce.head.state_dict(), "step": step}, os.path.join(out, "ce.pt.tmp"))
    os.replace(os.path.join(out, "ce.pt.tmp"), os.path.join(out, "ce.pt"))


def dev(args):
    import torch
    torch.set_num_threads(args.threads or torch.get_num_threads())
    scorer = load_scorer(SCORER)
    need("model.train.reranker_pilot dev", DEV, "dev")
    state = torch.load(os.path.join(args.out, args.checkpoint), weights_only=False) if args.checkpoint else None
    ce = CrossEncoder(state=state)
    ce.bert.eval()
    hybrid = Hybrid()
    report = {}
    for task_dir in scorer.expand_dirs([DEV]):
        name = os.path.basename(task_dir.rstrip("/"))
        corpus, queries, qrels = scorer.load_task(task_dir)
        queries = queries[:args.max_queries] if args.max_queries else queries
        ids = [d["id"] for d in corpus]
        t0 = time.time()
        cache = os.path.join(args.out, f"dev-{name}-{len(queries)}.npz")
        if os.path.exists(cache):
            z_ = np.load(cache)
            top100, fused100 = z_["top"], z_["fused"]
        else:
            top100, fused100 = hybrid.top(hybrid.corpus([d["text"] for d in corpus]), [q["text"] for q in queries], 100, scorer)
            np.savez(cache, top=top100, fused=fused100)
        t1 = time.time()
        ce_scores = np.zeros((len(queries), DEPTH), dtype=np.float32)
        pairs = [(q["text"], corpus[j]["text"]) for i, q in enumerate(queries) for j in top100[i, :DEPTH]]
        out = []
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            for s in range(0, len(pairs), 60):
                out.append(ce.scores(*ce.batch(pairs[s:s + 60])).float().numpy())
        ce_scores[:] = np.concatenate(out).reshape(len(queries), DEPTH)
        t2 = time.time()
        row = {"queries": len(queries), "hybrid": score(scorer, [[ids[j] for j in r] for r in top100], queries, qrels)}
        z = lambda a: (a - a.mean(1, keepdims=True)) / np.maximum(a.std(1, keepdims=True), 1e-6)
        for lam in (0.0, 0.25, 0.5, 1.0, 2.0, None):
            mixed = z(ce_scores) if lam is None else z(fused100[:, :DEPTH]) + lam * z(ce_scores)
            order = np.argsort(-mixed, axis=1, kind="stable")
            ranked = [[ids[j] for j in np.concatenate([top100[i, :DEPTH][order[i]], top100[i, DEPTH:]])] for i in range(len(queries))]
            row["ce only" if lam is None else f"hybrid z + {lam}·ce z"] = score(scorer, ranked, queries, qrels)
        row["seconds"] = {"hybrid": round(t1 - t0, 1), "rerank": round(t2 - t1, 1), "pairs": len(pairs)}
        report[name] = row
        log(name, json.dumps({k: (v["ndcg@10"] if isinstance(v, dict) and "ndcg@10" in v else v) for k, v in row.items()}))
    keys = [k for k in report[next(iter(report))] if k not in ("queries", "seconds")]
    report["mean"] = {k: float(np.mean([report[t][k]["ndcg@10"] for t in report if t != "mean"])) for k in keys}
    log("mean", json.dumps(report["mean"]))
    with open(os.path.join(args.out, f"dev-{args.checkpoint or 'untrained'}.json"), "w") as f:
        json.dump(report, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["mine", "train", "dev"])
    p.add_argument("--out", required=True)
    p.add_argument("--pool", type=int, default=1500)
    p.add_argument("--chars", type=int, default=1500, help="training texts cut to this many characters (the cross-encoder reads ~240 tokens)")
    p.add_argument("--queries", type=int, default=400)
    p.add_argument("--minutes", type=float, default=20)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--queries-per-step", type=int, default=8)
    p.add_argument("--max-queries", type=int, default=400)
    p.add_argument("--checkpoint", default="ce.pt")
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    {"mine": mine, "train": train, "dev": dev}[a.step](a)


if __name__ == "__main__":
    main()
