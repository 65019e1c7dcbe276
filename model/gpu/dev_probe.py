"""Scores transformer checkpoints on the dev set where no model folder or onnxruntime is at hand (a
GPU machine): the transformer alone and inside the served hybrid (its static and lexical parts and
shares, model/train/hybrid_parts.py), as nDCG@10 per task and mean — the figures model/evaluate/dev.py gives
for a folder, so checkpoints can be chosen where they are trained and only the best carried back.

    # here, once: the dev texts as the folder tokenises them (prompts, max_input_tokens)
    python3 -m model.gpu.dev_probe prepare --model models/legal-2-embedder --out dev.npz
    # anywhere with torch: one or more checkpoints (model/train/transformer.py's, fp16 or fp32)
    python3 -m model.gpu.dev_probe score --dev dev.npz --parts parts.npz --json out.json CKPT...

The probe holds token ids and relevance only; it is for scoring, never for training.
"""
import argparse
import json
import os
import time

import numpy as np
import torch

TASKS = ("obliqa-adgm", "oyez-scotus", "pdpa-singapore")


def prepare(folder, out, dev=None):
    from model.evaluate.dev import DEFAULT_DEV, served_ids
    arrays = {}
    for task, corpus, queries, qrels, ids_of in served_ids(folder, dev or DEFAULT_DEV, TASKS):
        index = {d["id"]: i for i, d in enumerate(corpus)}
        for kind, ids in ids_of.items():
            arrays[f"{task}.{kind}.ids"] = np.concatenate([np.asarray(i, np.uint16) for i in ids])
            arrays[f"{task}.{kind}.offsets"] = np.cumsum([0] + [len(i) for i in ids]).astype(np.int64)
        rel = [sorted(index[d] for d in qrels[q["id"]] if d in index) for q in queries]
        arrays[f"{task}.qrels.ids"] = np.concatenate([np.asarray(r, np.int32) for r in rel])
        arrays[f"{task}.qrels.offsets"] = np.cumsum([0] + [len(r) for r in rel]).astype(np.int64)
    np.savez_compressed(out, **arrays)


def rows(data, key):
    flat, off = data[f"{key}.ids"], data[f"{key}.offsets"]
    return [flat[off[i]:off[i + 1]].astype(np.int64) for i in range(len(off) - 1)]


def load_checkpoint(path, device):
    from model.common.bert import Bert
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    c = ckpt["config"]
    model = Bert(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                 c["intermediate_size"], c["max_position_embeddings"], 0.0)
    model.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
    return model.to(device).eval()


def embed(model, ids_list, device):
    """Unit rows as lexembed serves them (mean pooling, fp32), through model/common/bert.py's torch_embed_fn."""
    from model.common.bert import torch_embed_fn
    return torch.from_numpy(torch_embed_fn(model, lambda rows: [ids_list[i] for i in rows], device)(list(range(len(ids_list))))).to(device)


@torch.no_grad()
def fixed_parts(fixed, ids_list, device, batch=64, document=False):
    from model.common.bert import pad_table
    out = [fixed.encode(pad_table(ids_list[s:s + batch])[0].to(device), document) for s in range(0, len(ids_list), batch)]
    return tuple(torch.cat([o[k] for o in out]) for k in range(3))


def ndcg10(scores, rel):
    """Mean nDCG@10 of each row's ranking, by model/evaluate/held_out.py's metrics (the shared scorer's rule)."""
    from model.evaluate.held_out import metrics
    top = torch.topk(scores, 10, dim=1).indices.cpu().numpy()
    return float(np.mean([metrics(row.tolist(), set(r.tolist()))[0] for row, r in zip(top, rel)]))


def score(dev_path, parts_path, checkpoints, device, log=print, only=TASKS, json_path=None):
    from model.train.hybrid_parts import FixedParts
    data = np.load(dev_path)
    fixed = FixedParts(parts_path, device)
    tasks = {}
    for task in only:
        corpus, queries, rel = rows(data, f"{task}.corpus"), rows(data, f"{task}.queries"), rows(data, f"{task}.qrels")
        tasks[task] = (corpus, queries, rel, fixed_parts(fixed, corpus, device, document=True), fixed_parts(fixed, queries, device))
    results = {}
    for path in checkpoints:
        t0 = time.time()
        model = load_checkpoint(path, device)
        row = {}
        for task, (corpus, queries, rel, d_parts, q_parts) in tasks.items():
            d, q = embed(model, corpus, device), embed(model, queries, device)
            row[task] = {"transformer": ndcg10(q @ d.T, rel), "hybrid": ndcg10(FixedParts.score(q, d, q_parts, d_parts), rel)}
        row["mean"] = {k: float(np.mean([row[t][k] for t in only])) for k in ("transformer", "hybrid")}
        results[path] = row
        log(f"{path}: hybrid {row['mean']['hybrid']:.4f} (" + " / ".join(f"{row[t]['hybrid']:.3f}" for t in only)
            + f"), transformer {row['mean']['transformer']:.4f} (" + " / ".join(f"{row[t]['transformer']:.3f}" for t in only)
            + f") [{time.time() - t0:.0f} s]")
        del model
        if json_path:  # after each checkpoint, so a run stopped for time keeps what it scored
            with open(json_path, "w") as f:
                json.dump(results, f, indent=2)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("prepare", help="tokenise the dev set as a folder serves it")
    a.add_argument("--model", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--dev", help="the dev set folder (default: ../shared/data/legal-eval-dev)")
    b = sub.add_parser("score", help="score checkpoints")
    b.add_argument("--dev", required=True, help="prepare's .npz")
    b.add_argument("--parts", required=True, help="model/train/hybrid_parts.py's .npz")
    b.add_argument("--json", help="write the results here")
    b.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks to score (default: all three)")
    b.add_argument("checkpoints", nargs="+")
    args = p.parse_args()
    if args.command == "prepare":
        prepare(args.model, args.out, args.dev)
        print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB)")
        return
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    only = tuple(t for t in args.tasks.split(",") if t)
    unknown = set(only) - set(TASKS)
    if unknown:
        p.error(f"unknown tasks {sorted(unknown)}; the dev set's are {', '.join(TASKS)}")
    score(args.dev, args.parts, args.checkpoints, device, only=only, json_path=args.json)


if __name__ == "__main__":
    main()
