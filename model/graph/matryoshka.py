"""Orders a lexical-v2 folder's vector (model/graph/lexical.py) so that its prefixes are good vectors
of their own size: `dimensions: 256` then keeps the 256 directions that carry the most of the
model's retrieval, instead of the transformer part alone (dev set nDCG@10 0.423 in v3).

The graph ends with v · M, v = [sqrt(wt)·t/|t|, sqrt(ws)·s/|s|, sqrt(wl)·l/|l|] and M orthogonal, so
the full vector's dot products never change; only what a prefix holds does. M is fitted here on
training pairs (never the dev set) in three steps:
1. PCA: the eigenvectors of E[v vᵀ] over the sample's queries and documents, largest first
   (uncentred: a prefix keeps the directions with the most energy).
2. Matryoshka tuning (--steps, torch): M = Q of the QR of a free matrix started at step 1's basis,
   trained with InfoNCE (in-batch negatives, τ 0.05) on every listed prefix of the query and
   document vectors at once; the full width's loss is constant and left out.
3. A random rotation inside each block between listed prefixes (seeded): a prefix that ends at a
   listed size spans the same subspace (its dot products unchanged), but the block's energy is
   spread over its components, so output_dtype int8's fixed scale does not clamp the first ones
   and binary's signs carry the whole block.

    python3 -m model.graph.matryoshka --model models/legal-2-embedder --data ../shared/data/legal-pairs \
        [--prefixes 32,64,128,256,512,1024] [--pairs 24000] [--steps 400] [--parity FIXTURE]

--parity: the hybrid's fixture (tests/fixtures/legal-model-parity.json) rewritten from the Python
recipe: ids, and the first 16 and last 8 components of the served vector (the dense parts as the
graph computes them, the lexical part from model/rules/bm25.py's numpy recipe, times M).
"""
import argparse
import json
import math
import os
import random
import time

import numpy as np

from model.common.folder import WORK, need, read_json, write_json
from model.common.legal_data import split_pairs
from model.graph.parity import write_parity
from model.rules.matryoshka import PREFIXES, ROTATION

STEP = "model.graph.matryoshka"


def sample_pairs(data_dir, count, seed):
    """count training pairs, the same number from each source (all of a smaller one)."""
    train, _ = split_pairs(data_dir)
    by_source = {}
    for subset, query, text, _ in train:
        by_source.setdefault(subset, []).append((query, text))
    rng = random.Random(seed)
    per_source = math.ceil(count / len(by_source))
    out = []
    for subset in sorted(by_source):
        rows = by_source[subset]
        out.extend(rng.sample(rows, min(per_source, len(rows))))
    rng.shuffle(out)
    return out[:count]


def pca_basis(vectors):
    """Columns: the eigenvectors of the uncentred second moment, largest eigenvalue first."""
    values, vecs = np.linalg.eigh(vectors.T @ vectors / len(vectors))
    order = np.argsort(-values, kind="stable")
    return vecs[:, order], values[order]


def tune(basis, queries, documents, prefixes, steps, seed, log=print, batch=512, lr=1e-3, tau=0.05, held_out=0.1):
    """M = Q(QR(W)), W started at basis, trained on the prefixes' InfoNCE; returns M (numpy) at the
    step whose held-out pairs (a tenth of the sample, never trained on) score best, checked every
    25 steps: a rotation of 1,792² weights memorises a few thousand pairs."""
    import torch
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(queries))
    cut = int(len(order) * held_out)
    val, fit = order[:cut], order[cut:]
    w = torch.nn.Parameter(torch.from_numpy(basis.astype(np.float32)))
    q_all, d_all = torch.from_numpy(queries.astype(np.float32)), torch.from_numpy(documents.astype(np.float32))
    opt = torch.optim.Adam([w], lr=lr)

    def orthogonal(m):
        q, r = torch.linalg.qr(m)
        return q * torch.sign(torch.diagonal(r))  # Q(QR(basis)) = basis at step 0

    def loss_of(m, idx):
        q, d = q_all[idx] @ m, d_all[idx] @ m
        loss = 0.0
        for k in prefixes:
            logits = torch.nn.functional.normalize(q[:, :k], dim=1) @ torch.nn.functional.normalize(d[:, :k], dim=1).T / tau
            target = torch.arange(len(idx))
            loss = loss + torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)
        return loss / (2 * len(prefixes))

    started = time.time()
    best = (math.inf, 0, basis)
    for step in range(steps + 1):
        if step % 25 == 0:
            with torch.no_grad():
                m = orthogonal(w)
                size = min(batch, len(val))
                held = float(np.mean([loss_of(m, torch.from_numpy(val[k:k + size])).item() for k in range(0, len(val) - size + 1, size)]))
            if held < best[0]:
                best = (held, step, m.double().numpy())
            log(f"  step {step}: held-out loss {held:.4f} ({time.time() - started:.0f} s)")
        if step == steps:
            break
        idx = torch.from_numpy(rng.choice(fit, min(batch, len(fit)), replace=False))
        loss = loss_of(orthogonal(w), idx)
        opt.zero_grad()
        loss.backward()
        opt.step()
    log(f"  kept step {best[1]} (held-out loss {best[0]:.4f})")
    return best[2], best[1]


def block_rotations(width, prefixes, seed):
    """A block-diagonal orthogonal matrix: a random rotation inside each span between prefixes."""
    rng = np.random.default_rng(seed)
    out = np.zeros((width, width))
    edges = [0, *[p for p in prefixes if p < width], width]
    for a, b in zip(edges, edges[1:]):
        q, r = np.linalg.qr(rng.standard_normal((b - a, b - a)))
        out[a:b, a:b] = q * np.sign(np.diag(r))
    return out


def prefix_recall(m, queries, documents, prefixes):
    """In-sample check: the share of queries whose own document ranks first among the sample's, per prefix."""
    out = {}
    for k in [*prefixes, m.shape[1]]:
        unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        q, d = unit((queries @ m)[:, :k]), unit((documents @ m)[:, :k])
        out[k] = float(np.mean(np.argmax(q[:2000] @ d.T, axis=1) == np.arange(min(2000, len(q)))))
    return out


def embed_sample(folder, pairs, current, onnx_embed_fn):
    """The pairs' vectors before the rotation (v = served · Mᵀ), cached under model/work by the
    folder's dense graph and the pairs, so a second fit with other settings starts at once."""
    import hashlib
    h = hashlib.sha256(json.dumps(pairs).encode())
    with open(os.path.join(folder, "onnx", "model.onnx"), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    h.update(current.astype(np.float32).tobytes())
    cache = os.path.join(WORK, f"matryoshka-sample-{h.hexdigest()[:16]}.npz")
    if os.path.exists(cache):
        hit = np.load(cache)
        return hit["queries"], hit["documents"]
    embed = onnx_embed_fn(folder)  # unit vectors; · Mᵀ undoes the graph's current rotation
    queries = embed([q for q, _ in pairs]).astype(np.float64) @ current.T
    documents = embed([t for _, t in pairs]).astype(np.float64) @ current.T
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    np.savez(cache, queries=queries, documents=documents)
    return queries, documents


def read_rotation(graph_model):
    from onnx import numpy_helper
    found = [t for t in graph_model.graph.initializer if t.name == ROTATION]
    if not found:
        raise SystemExit(f"the graph has no {ROTATION}: add the lexical part first (model/graph/lexical.py)")
    return found[0], numpy_helper.to_array(found[0]).astype(np.float64)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a folder with a lexical-v2 part (model/graph/lexical.py), rewritten in place")
    p.add_argument("--data", required=True, help="the legal-pairs folder (pairs from its training split)")
    p.add_argument("--prefixes", default=",".join(map(str, PREFIXES)), help="the listed prefix sizes (default 32,64,128,256,512,1024)")
    p.add_argument("--pairs", type=int, default=24000, help="training pairs to fit on, at most as many from each source (default 24000)")
    p.add_argument("--steps", type=int, default=400, help="Matryoshka tuning steps after PCA (torch; 0: PCA only), the best on held-out pairs kept (default 400)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parity", help="rewrite this fixture (the hybrid's) from the Python recipe")
    p.add_argument("--parity-only", action="store_true", help="only rewrite --parity from the folder's current rotation (no fit)")
    args = p.parse_args()
    import onnx
    from onnx import numpy_helper
    from model.evaluate.served import onnx_embed_fn

    folder = need(STEP, args.model, "folder")
    settings, training = read_json(folder, "lexembed.json"), read_json(folder, "training.json")
    record = training.get("hybrid", training)
    try:
        prefixes = sorted({int(x) for x in args.prefixes.split(",")})
    except ValueError:
        raise SystemExit(f"--prefixes wants sizes separated by commas, e.g. 128,256,512, got {args.prefixes!r}")
    graph_path = os.path.join(folder, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    tensor, current = read_rotation(graph_model)
    if "lexical" not in record:
        raise SystemExit(f"{STEP}: {folder} has no lexical part; it is made by python3 -m model.graph.lexical (step 4c)")
    if not args.parity_only:
        need(STEP, args.data, "pairs")
    if args.parity_only:
        if not args.parity:
            raise SystemExit("--parity-only needs --parity FIXTURE")
        write_parity(args.parity, folder, settings, current)
        return
    if "document_form" in record:
        raise SystemExit(f"{folder} has a document form (model/graph/document_form.py), whose query form zeroes the rotation's last "
                         "component: fit the rotation on the folder before it (rebuild it from model/graph/lexical.py on)")
    width = current.shape[0]
    if not prefixes or prefixes[0] < 1 or prefixes[-1] >= width:
        raise SystemExit(f"--prefixes must lie between 1 and the width {width} (exclusive), got {args.prefixes!r}")

    started = time.time()
    pairs = sample_pairs(args.data, args.pairs, args.seed)
    queries, documents = embed_sample(folder, pairs, current, onnx_embed_fn)
    print(f"{len(pairs)} training pairs embedded ({time.time() - started:.0f} s)")
    basis, values = pca_basis(np.concatenate([queries, documents]))
    print("PCA energy in the prefixes: " + ", ".join(f"{k}: {values[:k].sum() / values.sum():.3f}" for k in prefixes))
    m, kept = tune(basis, queries, documents, prefixes, args.steps, args.seed) if args.steps else (basis, 0)
    m = m @ block_rotations(width, prefixes, args.seed)
    print("in-sample top-1, PCA: " + ", ".join(f"{k}: {v:.3f}" for k, v in prefix_recall(basis, queries, documents, prefixes).items()))
    print("in-sample top-1, M:   " + ", ".join(f"{k}: {v:.3f}" for k, v in prefix_recall(m, queries, documents, prefixes).items()))
    np.testing.assert_allclose(m.T @ m, np.eye(width), atol=1e-6)

    tensor.CopyFrom(numpy_helper.from_array(m.astype(np.float32), ROTATION))
    onnx.save(graph_model, graph_path)
    settings["dimensions"]["matryoshka"] = prefixes
    write_json(folder, "lexembed.json", settings)
    record["matryoshka"] = {"prefixes": prefixes, "pairs": len(pairs), "steps": args.steps, "kept_step": kept, "seed": args.seed,
                            "fitted_by": "model/matryoshka.py: PCA, Matryoshka InfoNCE on the prefixes, block rotations",  # the recorded path (before issue 68)
                            "from": "legal-pairs training split (the same number of pairs from each source)"}
    write_json(folder, "training.json", training)
    print(f"{folder}: rotation written ({time.time() - started:.0f} s); prefixes {prefixes}")
    if args.parity:
        write_parity(args.parity, folder, settings, m)


if __name__ == "__main__":
    main()
