"""The physical anchor of the GPU benchmark: the same model, weights and token sequences in PyTorch.

Reads the weights out of a lexembed model folder's ONNX graph into a `transformers` BertModel (for
the hybrid legal-2-embedder, beside its static token table), embeds the workloads that
bench/gpu/ids.ts wrote (the benchmark's exact sequences) with lexembed's batching limits, and
reports texts/s, single-text latency and GPU memory. Before timing it checks the mapping: its
float32 vectors against onnxruntime's on the same ONNX file (cosine), and its fp16/bf16 vectors
against its float32 ones.

    python3 bench/gpu/torch_anchor.py --model bench-results/minilm-l6-h384 --ids ids.json \
        --out anchor.json [--device cuda] [--dtype fp16] [--max-batch 64 --max-batch-tokens 8192]

Needs torch, transformers, onnx and numpy (onnxruntime for the onnxruntime check, else skipped).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

FOLDABLE = {"Cast", "Mul", "Transpose", "Identity"}


def graph_constants(graph):
    """Initializers, Constant nodes and what Cast/Mul/Transpose/Identity make of them (folded tables)."""
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        elif node.op_type in FOLDABLE and node.input and all(x in consts for x in node.input):
            a = [consts[x] for x in node.input]
            if node.op_type == "Cast":
                to = onnx.helper.tensor_dtype_to_np_dtype(node.attribute[0].i)
                consts[node.output[0]] = a[0].astype(to)
            elif node.op_type == "Mul":
                consts[node.output[0]] = a[0] * a[1]
            elif node.op_type == "Transpose":
                perm = next((list(x.ints) for x in node.attribute if x.name == "perm"), None)
                consts[node.output[0]] = np.transpose(a[0], perm)
            else:
                consts[node.output[0]] = a[0]
    for base, table in dequantized_tables(consts).values():
        consts.setdefault(base, table)
    return consts


def dequantized_tables(consts):
    """{int8 rows' name: (table name, float32 table)} for the int8 token tables that
    model/export/int8_rows.py dequantises after their lookup: `X_int8` with `X_row_scale` (the hybrid), or
    the static model's `table_int8` with `row_scale`."""
    out = {}
    for name, value in consts.items():
        if not name.endswith("_int8") or value.dtype != np.int8 or value.ndim != 2:
            continue
        base = name[: -len("_int8")]
        scale = consts.get(base + "_row_scale", consts.get("row_scale") if base == "table" else None)
        if scale is not None:
            out[name] = (base, value.astype(np.float32) * scale)
    return out


def bert_state_dict(model_path):
    """BertModel weights out of an ONNX graph whose named tensors use BertModel's names (optionally
    under `bert.`): named embeddings, LayerNorms and biases; each MatMul weight traced through the
    Add of its named bias. Also returns the graph's other token tables (Gathers of input_ids), as float32."""
    graph = onnx.load(model_path).graph
    consts = graph_constants(graph)
    consumers = {}
    for node in graph.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)
    bert_name = re.compile(r"^(?:bert\.)?((?:embeddings|encoder)\..+\.(?:weight|bias))$")
    state = {}
    for name, value in consts.items():
        m = bert_name.match(name)
        if m and value.dtype == np.float32:
            state[m.group(1)] = value
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in consts:
            continue
        for add in consumers.get(node.output[0], []):
            other = [x for x in add.input if x != node.output[0]]
            m = bert_name.match(other[0]) if add.op_type == "Add" and other else None
            if m and m.group(1).endswith(".bias"):
                state[m.group(1)[: -len(".bias")] + ".weight"] = consts[node.input[1]].T.copy()
    word = state.get("embeddings.word_embeddings.weight")
    # A table dequantised after its lookup is gathered twice: its int8 rows (read as the float
    # table) and its row scales (part of that table, skipped).
    int8 = {name: base for name, (base, _) in dequantized_tables(consts).items()}
    scales = {name[: -len("_int8")] + "_row_scale" for name in int8} | ({"row_scale"} if "table_int8" in int8 else set())
    other_tables = []
    for node in graph.node:
        if node.op_type == "Gather" and node.input[1] == "input_ids" and node.input[0] in consts and node.input[0] not in scales:
            table = consts[int8.get(node.input[0], node.input[0])]
            if table.ndim != 2:  # per-token scalars (the lexical part's buckets and weights): lexical_part
                continue
            if word is None or table.shape != word.shape or not np.array_equal(table, word):
                other_tables.append(table.astype(np.float32))
    return state, other_tables, lexical_part(consts)


LEXICAL = ("bucket", "weight", "counted", "k1_plus_1", "k1_fixed", "k1_per_length", "eps", "parts", "short", "delta", "length0", "length_span")


def lexical_part(consts):
    """The v4 lexical part (model/graph/lexical.py) and the Matryoshka rotation after it
    (model/graph/matryoshka.py), or None: each piece's signed idf^½ times BM25's saturation of its term
    frequency summed into its bucket, unit-normalised, beside the dense parts, each part scaled by
    the square root of its share at the text's length (short + t·delta), the whole turned by the
    rotation."""
    if not all(f"lexical.{k}" in consts for k in LEXICAL) or "matryoshka.rotation" not in consts:
        return None
    return {**{k: consts[f"lexical.{k}"] for k in LEXICAL}, "rotation": consts["matryoshka.rotation"]}


class Anchor(torch.nn.Module):
    """lexembed's served arithmetic in PyTorch: BertModel mean-pooled; for the hybrid, beside the
    static table's mean, each part normalised and weighted as model/export/hybrid.py does; for the
    static model, the table's mean alone."""

    def __init__(self, bert, static_table=None, weight=0.5, lexical=None):
        super().__init__()
        self.bert = bert
        self.static = None if static_table is None else torch.nn.Embedding.from_pretrained(torch.from_numpy(static_table))
        self.a, self.b = math.sqrt(weight), math.sqrt(1.0 - weight)
        self.lexical = lexical is not None
        if lexical is not None:  # float32 throughout, as in the served graph
            self.register_buffer("lex_bucket", torch.from_numpy(lexical["bucket"].astype(np.int64)))
            self.register_buffer("lex_weight", torch.from_numpy(lexical["weight"].astype(np.float32)))
            self.register_buffer("lex_counted", torch.from_numpy(lexical["counted"].astype(np.float32)))
            self.register_buffer("lex_rotation", torch.from_numpy(lexical["rotation"].astype(np.float32)))
            self.register_buffer("lex_parts", torch.from_numpy(lexical["parts"].astype(np.float32)))
            self.register_buffer("lex_short", torch.from_numpy(lexical["short"].astype(np.float32)))
            self.register_buffer("lex_delta", torch.from_numpy(lexical["delta"].astype(np.float32)))
            self.lex_buckets = int(lexical["bucket"].max()) + 1
            self.lex_k1_plus_1, self.lex_k1_fixed = float(lexical["k1_plus_1"]), float(lexical["k1_fixed"])
            self.lex_k1_per_length, self.lex_eps = float(lexical["k1_per_length"]), float(lexical["eps"])
            self.lex_length0, self.lex_span = float(lexical["length0"]), float(lexical["length_span"])

    def lexical_vector(self, input_ids, attention_mask):
        """(the unit lexical part, each text's counted pieces)."""
        mask = attention_mask.float()
        length = (self.lex_counted[input_ids] * mask).sum(1, keepdim=True)
        tf = ((input_ids[:, :, None] == input_ids[:, None, :]).float() * mask[:, None, :]).sum(-1)
        share = self.lex_k1_plus_1 / (tf + self.lex_k1_fixed + self.lex_k1_per_length * length)
        weights = self.lex_weight[input_ids] * mask * share
        sums = torch.zeros((input_ids.shape[0], self.lex_buckets), device=input_ids.device)
        sums.scatter_add_(1, self.lex_bucket[input_ids], weights)
        return sums / sums.norm(dim=-1, keepdim=True).clamp_min(self.lex_eps), length

    def forward(self, input_ids, attention_mask):
        m = attention_mask.unsqueeze(-1).float()
        unit_mean = lambda x: torch.nn.functional.normalize((x.float() * m).sum(1) / m.sum(1), dim=-1)  # noqa: E731
        parts = []
        if self.bert is not None:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            parts.append(self.a * unit_mean(hidden))
        if self.static is not None:
            parts.append(self.b * unit_mean(self.static(input_ids)))
        joined = torch.cat(parts, dim=-1)
        if self.lexical:
            unit, length = self.lexical_vector(input_ids, attention_mask)
            t = ((length - self.lex_length0) / self.lex_span).clamp(0, 1)
            scales = (self.lex_short + t * self.lex_delta).sqrt() @ self.lex_parts
            joined = (torch.cat([joined, unit], dim=-1) * scales) @ self.lex_rotation
        return torch.nn.functional.normalize(joined, dim=-1)


def build_anchor(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    state, tables, lexical = bert_state_dict(os.path.join(folder, "onnx", "model.onnx"))
    if len(tables) > 1:
        sys.exit(f"{folder}: {len(tables)} extra token tables; expected at most one (the hybrid's static table)")
    if not state:  # the static model: one token table, mean-pooled
        if not tables:
            sys.exit(f"{folder}: neither BertModel weights nor a token table found in the ONNX graph")
        return Anchor(None, tables[0], weight=0.0, lexical=lexical).eval(), None  # the table alone: its unit mean, scale 1
    from transformers import BertConfig, BertModel

    heads = cfg["num_attention_heads"]
    config = BertConfig(vocab_size=cfg["vocab_size"], num_hidden_layers=cfg["num_hidden_layers"],
                        num_attention_heads=heads, intermediate_size=cfg["intermediate_size"],
                        max_position_embeddings=cfg["max_position_embeddings"], type_vocab_size=2,
                        hidden_act="gelu", layer_norm_eps=1e-12, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0,
                        hidden_size=state["embeddings.word_embeddings.weight"].shape[1])
    bert = BertModel(config, add_pooling_layer=False)
    missing, unexpected = bert.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()}, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        sys.exit(f"{folder}: the ONNX graph's weights do not map onto a BertModel: missing {missing[:6]}, unexpected {unexpected[:6]}")
    weight = 0.5
    training = os.path.join(folder, "training.json")
    if tables and os.path.exists(training):
        with open(training) as f:
            weight = json.load(f).get("hybrid", {}).get("weight", 0.5)
    return Anchor(bert, tables[0] if tables else None, weight, lexical).eval(), config


def batches(seqs, max_batch, max_tokens):
    """lexembed's batching: length-sorted, at most max_batch texts and max_tokens padded tokens."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out, i = [], 0
    while i < len(order):
        j = i + 1
        while j < len(order) and j - i < max_batch and (j - i + 1) * len(seqs[order[j]]) <= max_tokens:
            j += 1
        out.append([seqs[k] for k in order[i:j]])
        i = j
    return out


def pad(batch):
    width = max(len(s) for s in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for r, s in enumerate(batch):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    return ids, mask


def embed(model, batch, device):
    """Unit vectors back on the host, as lexembed returns them (the copy waits for the GPU)."""
    ids, mask = pad(batch)
    with torch.inference_mode():
        return model(ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)).float().cpu()


def onnxruntime_vectors(model_path, seqs):
    """lexembed's pooling over onnxruntime's last_hidden_state (CPU), unit vectors."""
    try:
        import onnxruntime
    except ImportError:
        return None
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    ids, mask = pad(seqs)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": np.zeros_like(ids.numpy())}
    names = {i.name for i in session.get_inputs()}
    hidden = session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
    m = mask.numpy()[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / m.sum(1)
    return torch.nn.functional.normalize(torch.from_numpy(v), dim=-1)


def min_cosine(a, b):
    return float((torch.nn.functional.normalize(a, dim=-1) * torch.nn.functional.normalize(b, dim=-1)).sum(-1).min())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="lexembed model folder (config.json, onnx/model.onnx)")
    p.add_argument("--ids", required=True, help="workloads as token ids, from bench/gpu/ids.ts")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16", "fp32"])
    p.add_argument("--max-batch", type=int, default=64, help="texts per batch (lexembed's default: 64)")
    p.add_argument("--max-batch-tokens", type=int, default=8192, help="padded tokens per batch (lexembed's WebGPU default: 8192)")
    p.add_argument("--seconds", type=float, default=3.0, help="time each workload at least this long")
    args = p.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("--device cuda: PyTorch sees no CUDA device (pass --device cpu to run on the CPU)")

    model, config = build_anchor(args.model)
    with open(args.ids) as f:
        workloads = json.load(f)["workloads"]
    probe = [s for seqs in workloads.values() for s in seqs[:8]]
    reference = embed(model, probe, "cpu")
    ort = onnxruntime_vectors(os.path.join(args.model, "onnx", "model.onnx"), probe)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    model = model.to(args.device)
    if model.bert is not None:
        model.bert.to(dtype)  # token tables stay float32, as in the served graph
    report = {
        "model": os.path.abspath(args.model), "device": args.device, "dtype": args.dtype,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "torch": torch.__version__, "transformers": __import__("transformers").__version__,
        "architecture": {"layers": config.num_hidden_layers, "hidden": config.hidden_size, "heads": config.num_attention_heads,
                         "static_table": model.static is not None, "lexical": model.lexical} if config else {"static_table": True, "lexical": model.lexical},
        "batching": {"max_batch": args.max_batch, "max_batch_tokens": args.max_batch_tokens},
        "parity": {"texts": len(probe),
                   "torch_fp32_vs_onnxruntime_min_cosine": None if ort is None else min_cosine(reference, ort),
                   f"torch_{args.dtype}_{args.device}_vs_torch_fp32_cpu_min_cosine": min_cosine(embed(model, probe, args.device), reference)},
        "results": [],
    }
    print(json.dumps(report["parity"]))
    if ort is not None and report["parity"]["torch_fp32_vs_onnxruntime_min_cosine"] < 0.999:
        sys.exit(f"{args.model}: PyTorch's vectors differ from onnxruntime's (min cosine "
                 f"{report['parity']['torch_fp32_vs_onnxruntime_min_cosine']:.4f}): the weight mapping is wrong")

    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    for name, seqs in workloads.items():
        plan = batches(seqs, args.max_batch, args.max_batch_tokens)
        for b in plan:  # warm-up: one pass (kernel selection, allocator)
            embed(model, b, args.device)
        passes, start = 0, time.perf_counter()
        while True:
            for b in plan:
                embed(model, b, args.device)
            passes += 1
            elapsed = time.perf_counter() - start
            if elapsed >= args.seconds:
                break
        single = []
        for s in seqs[:50]:
            t = time.perf_counter()
            embed(model, [s], args.device)
            single.append((time.perf_counter() - t) * 1000)
        single.sort()
        tokens = sum(len(s) for s in seqs)
        row = {"workload": name, "texts": len(seqs), "mean_tokens": tokens / len(seqs), "batches": len(plan),
               "texts_per_s": passes * len(seqs) / elapsed, "tokens_per_s": passes * tokens / elapsed,
               "single_p50_ms": statistics.median(single), "single_p99_ms": single[min(len(single) - 1, int(0.99 * len(single)))]}
        report["results"].append(row)
        print(f"{name:7} {row['texts_per_s']:10.0f} texts/s  {row['tokens_per_s']:12.0f} tokens/s  one text p50 {row['single_p50_ms']:.2f} ms")
    if args.device.startswith("cuda"):
        report["gpu_max_memory_allocated_mb"] = torch.cuda.max_memory_allocated() / 2**20
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
