"""Builds the hybrid legal-2-embedder: the contextual vector of the transformer recipe beside the
static model's summed token vectors, each normalised inside the graph, weighted and concatenated,
so that lexembed's mean pooling + L2 normalisation serves

    v = [sqrt(w) * t / |t| , sqrt(1 - w) * s / |s|]      (t: transformer mean, s: static mean)

whose dot products are w * cos_transformer + (1 - w) * cos_static. Both parts use the same
WordPiece ids. The two token tables are stored as int8 with per-row scales, dequantised after the
lookup (model/export/int8_rows.py); the rest stays fp32. The torch module exported here is the served arithmetic, so
its vectors are what the evaluation scores.

    /usr/bin/python3 -m model.export.hybrid --transformer checkpoint.pt \
        --static models/legal-2-embedder-static --out models/legal-2-embedder \
        --data ../shared/data/legal-pairs --bm25-from models/legal-2-embedder-static/evaluation.json

Runs on a CPU with torch (1.13 works) and onnx; evaluation embeds the held-out split with torch.
"""
import argparse
import inspect
import collections
import json
import math
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from model.common.folder import needs
from model.common.bert import Bert
from model.evaluate.held_out import build_source, model_source, print_report
from model.evaluate.served import load_static_model
from model.export.static import quantize_rows
from model.export.int8_rows import gather_int8_rows
from model.common.legal_data import load_pairs, split_pairs, encode_capped
from model.export.parity_fixture import write_fixture
from model.common.bert import torch_embed_fn
from model.common.tokenizer_files import write_tokenizer_files


# torch ≥ 2.9 exports through dynamo (and onnxscript, not installable here) unless told otherwise;
# the TorchScript exporter writes the opset-14 graph every shipped folder has. torch 1.13 has no flag.
LEGACY_EXPORTER = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


class Hybrid(nn.Module):
    def __init__(self, bert, static_table, weight):
        super().__init__()
        self.bert = bert
        self.static = nn.Embedding.from_pretrained(torch.from_numpy(static_table), freeze=True)
        self.a = math.sqrt(weight)
        self.b = math.sqrt(1.0 - weight)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        m = attention_mask.unsqueeze(-1).to(torch.float32)
        h = self.bert(input_ids, attention_mask, token_type_ids)
        s = self.static(input_ids)
        count = m.sum(1, keepdim=True)
        h_norm = ((h * m).sum(1, keepdim=True) / count).norm(dim=-1, keepdim=True).clamp(min=1e-12)
        s_norm = ((s * m).sum(1, keepdim=True) / count).norm(dim=-1, keepdim=True).clamp(min=1e-12)
        return torch.cat([h * (self.a / h_norm), s * (self.b / s_norm)], dim=-1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transformer", required=True, help="checkpoint of model/train/transformer.py (fp16 or fp32)")
    p.add_argument("--static", required=True, help="static model folder (same tokenizer ids)")
    p.add_argument("--out", help="model folder to write (omit to evaluate only)")
    p.add_argument("--weight", type=float, default=0.5, help="share of the transformer in the score (0-1)")
    p.add_argument("--data", help="legal-pairs folder: evaluate on the held-out split")
    p.add_argument("--bm25-from", help="evaluation.json with BM25 figures of the same sets")
    p.add_argument("--leave-out", default="", help="also score every pair of these sources (cross-source test)")
    p.add_argument("--parity", help="fixture whose case texts get ids and vector heads (rewritten in place)")
    p.add_argument("--json", help="write the evaluation here (default <out>/evaluation.json)")
    p.add_argument("--transformer-training", nargs="*", default=[],
                   help="training.json files of the transformer's runs (recorded in the folder's training.json)")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    needs("model.export.hybrid", (args.transformer, "checkpoint"), (args.static, "static"), (args.data, "pairs"), (args.parity, "parity"))
    if args.threads:
        torch.set_num_threads(args.threads)

    ckpt = load_checkpoint(args.transformer, args.static)
    cfg = ckpt["config"]
    bert = Bert(cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
                cfg["intermediate_size"], cfg["max_position_embeddings"], 0.0)
    bert.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
    # Serve the word table as int8 rows: put the dequantized values in the module itself.
    word = bert.embeddings.word_embeddings.weight.detach().numpy()
    q, scale = quantize_rows(word)
    with torch.no_grad():
        bert.embeddings.word_embeddings.weight.copy_(torch.from_numpy(q.astype(np.float32) * scale))
    static_table, tok, max_tokens = load_static_model(args.static)
    assert static_table.shape[0] == cfg["vocab_size"], "the two models must share the tokenizer"
    assert tok.vocab == ckpt["vocab"], "the two models must share the tokenizer"
    max_tokens = min(max_tokens, cfg["max_position_embeddings"])
    model = Hybrid(bert, static_table, args.weight).eval()
    bert.set_export_mode(True)
    dims = cfg["hidden_size"] + static_table.shape[1]

    if args.out:
        write_folder(args, model, tok, ckpt, cfg, dims, max_tokens)
    if args.parity:
        write_parity(args.parity, model, tok, max_tokens)
    if args.data:
        results = evaluate(args, model, tok, max_tokens)
        with open(args.json or os.path.join(args.out, "evaluation.json"), "w") as f:
            json.dump(results, f, indent=2)


def load_checkpoint(path, static_folder):
    """A checkpoint.pt of model/train/transformer.py, or its resumable resume.pt (a run still going or
    stopped early): then the architecture is read off the weights' shapes and the vocabulary is
    the static folder's (the two must share it anyway)."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if "state_dict" in ckpt:
        return ckpt
    from model.export.onnx_weights import config_of
    from model.common.tokenizer_files import load_tokenizer
    state = ckpt["model"]
    return {"config": ckpt.get("config") or config_of(state), "state_dict": state, "vocab": load_tokenizer(static_folder).vocab,
            "resumed_step": ckpt["done"]}


def embed_fn(model, tok, max_tokens):
    """The served arithmetic on CPU, in batches of 32 (what the committed figures were made with)."""
    return torch_embed_fn(model, lambda texts: [encode_capped(tok, t, max_tokens) for t in texts], torch.device("cpu"), batch=32)


def evaluate(args, model, tok, max_tokens):
    rows = list(load_pairs(args.data))
    _, held_out = split_pairs(args.data)
    sets = collections.defaultdict(list)
    for row in held_out:
        sets[row[0]].append(row)
    sets = dict(sorted(sets.items()))
    for source in filter(None, args.leave_out.split(",")):
        sets[f"all-{source}"] = [r for r in rows if r[0] == source]
    bm25 = {}
    if args.bm25_from:
        with open(args.bm25_from) as f:
            bm25 = {k: v["bm25"] for k, v in json.load(f).items() if isinstance(v, dict) and "bm25" in v}
    run = embed_fn(model, tok, max_tokens)
    results = {}
    for name, subset in sets.items():
        queries, corpus, _ = build_source(subset)
        if name not in bm25:
            from model.evaluate.held_out import bm25_source
            bm25[name] = bm25_source(subset)
        results[name] = {"queries": len(queries), "corpus": len(corpus), "bm25": bm25[name], "model": model_source(subset, run)}
        print(f"{name}: nDCG@10 {results[name]['model']['ndcg@10']:.3f} (BM25 {bm25[name]['ndcg@10']:.3f})", flush=True)
    held = {k: v for k, v in results.items() if not k.startswith("all-")}
    print_report(held)
    held["matryoshka"] = {str(d): {s: model_source(sets[s], run, d)["ndcg@10"] for s in sets if not s.startswith("all-")}
                          for d in (64, 128, 256)}
    print("Matryoshka:", json.dumps(held["matryoshka"]))
    results.update(held)
    return results


def write_folder(args, model, tok, ckpt, cfg, dims, max_tokens):
    os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
    path = os.path.join(args.out, "onnx", "model.onnx")
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad():
        torch.onnx.export(model, (ids, (ids != 0).long(), torch.zeros_like(ids)), path, input_names=names,
                          output_names=["last_hidden_state"], opset_version=14, do_constant_folding=True,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]},
                          **LEGACY_EXPORTER)
    graph_model = onnx.load(path)
    for table in (model.bert.embeddings.word_embeddings.weight, model.static.weight):
        store_rows_int8(graph_model, table.detach().numpy())
    gather_int8_rows(graph_model)  # dequantise the looked-up rows, not whole tables at load
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, path)

    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": cfg["vocab_size"],
              "hidden_size": dims, "num_hidden_layers": cfg["num_hidden_layers"],
              "num_attention_heads": cfg["num_attention_heads"], "intermediate_size": cfg["intermediate_size"],
              "max_position_embeddings": cfg["max_position_embeddings"], "type_vocab_size": 2, "pad_token_id": 0}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer_files(args.out, tok.vocab, max_tokens)
    settings = {
        "name": "legal-2-embedder",
        "description": "Hybrid legal embedding model trained by lexembed: a 4-layer transformer (model/train_transformer.py) "
                       "beside the static model (model/train/static.py), combined by model/export/hybrid.py.",
        "max_input_tokens": max_tokens,
        "pooling": "mean",
        "dimensions": {"default": dims, "max": dims, "matryoshka": [d for d in (32, 64, 128, 256) if d <= cfg["hidden_size"]]},
        "prompts": {"retrieval/query": None, "retrieval/document": None},
        "dtype": "fp32",
    }
    with open(os.path.join(args.out, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
    with open(os.path.join(args.static, "training.json")) as f:
        static_training = json.load(f)
    transformer_training = []
    for run_json in args.transformer_training:
        with open(run_json) as f:
            transformer_training.append(json.load(f))
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"hybrid": {"weight": args.weight, "transformer": os.path.basename(args.transformer), "static": args.static,
                              "transformer_dims": cfg["hidden_size"], "transformer_step": ckpt.get("resumed_step")},
                   "transformer_runs": transformer_training, "static": static_training}, f, indent=2, default=str)
    print(f"wrote {args.out}: {os.path.getsize(path) / 1e6:.1f} MB ONNX, {dims} dimensions")


def store_rows_int8(graph_model, table):
    """Replaces the float initializer equal to `table` by int8 rows + scales and Cast·Mul nodes."""
    graph = graph_model.graph
    for init in graph.initializer:
        if tuple(init.dims) == table.shape and np.array_equal(numpy_helper.to_array(init), table):
            break
    else:
        raise RuntimeError(f"no initializer of shape {table.shape} matches")
    name = init.name
    q, scale = quantize_rows(table)
    assert np.array_equal(q.astype(np.float32) * scale, table), "table is not exactly int8 rows"
    graph.initializer.remove(init)
    graph.initializer.extend([numpy_helper.from_array(q, name + "_int8"), numpy_helper.from_array(scale, name + "_row_scale")])
    nodes = [helper.make_node("Cast", [name + "_int8"], [name + "_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", [name + "_f", name + "_row_scale"], [name])]
    for node in reversed(nodes):
        graph.node.insert(0, node)


def write_parity(path, model, tok, max_tokens):
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    texts = [c["text"] for c in fixture["cases"]]
    vectors = embed_fn(model, tok, max_tokens)(texts)
    fixture["cases"] = [{"text": t, "ids": encode_capped(tok, t, max_tokens),
                         "vector_head": [round(float(x), 6) for x in v[:8]],  # transformer part
                         "vector_tail": [round(float(x), 6) for x in v[-8:]]}  # static part
                        for t, v in zip(texts, vectors)]
    write_fixture(path, fixture)
    print(f"wrote {path}: {len(texts)} cases")


if __name__ == "__main__":
    main()
