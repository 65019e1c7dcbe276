"""Turns a checkpoint of model/train/transformer.py into a lexembed model folder: ONNX (opset 14,
inputs input_ids/attention_mask/token_type_ids, output last_hidden_state), int8 weights where the
vectors hold (cosine to the torch model on a fixed set), tokenizer, config and settings.

    python3 -m model.export.transformer --checkpoint model/work/transformer/checkpoint.pt \
        --data ../shared/data/legal-pairs --out model/work/transformer-folder

Needs onnx and onnxruntime (with its quantization tools) beside torch. Writes onnx/model.onnx
(fp32) and onnx/model_quantized.onnx (dynamic int8: MatMul and Gather weights); lexembed.json
selects q8 when its minimum cosine to torch on the check set is >= --min-cosine, else fp32.
With --int8-only the fp32 file is removed afterwards (it is only needed to make the int8 one).
Also writes <out>/parity.json: token ids and served vectors (onnxruntime CPU) for fixed texts.
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch

from model.common.folder import needs
from model.common.bert import Bert, mean_pool
from model.common.legal_data import WordPiece, split_pairs, encode_capped
from model.common.tokenizer_files import write_tokenizer_files

PARITY_TEXTS = [
    "Payment of rent",
    "The tenant shall pay the rent on the first day of each month to the landlord.",
    "Every employer shall keep records of the wages, hours of work and overtime of each employee.",
    "Definitions",
    "A creditor shall not discriminate against an applicant on a prohibited basis.",
]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--data", required=True, help="legal-pairs folder: held-out texts form the check set")
    p.add_argument("--out", required=True)
    p.add_argument("--check-texts", type=int, default=512)
    p.add_argument("--min-cosine", type=float, default=0.999)
    p.add_argument("--parity-texts", help="JSON fixture whose case texts to use for parity.json")
    p.add_argument("--int8-only", action="store_true")
    p.add_argument("--description", default="Transformer legal embedding model trained by lexembed (model/train_transformer.py).")
    args = p.parse_args()
    needs("model.export.transformer", (args.checkpoint, "checkpoint"), (args.data, "pairs"))

    ckpt = torch.load(args.checkpoint, map_location="cpu")
    cfg, vocab = ckpt["config"], ckpt["vocab"]
    model = Bert(cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
                 cfg["intermediate_size"], cfg["max_position_embeddings"], 0.0)
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    model.set_export_mode(True)
    max_tokens = cfg["max_position_embeddings"]
    os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
    fp32_path = os.path.join(args.out, "onnx", "model.onnx")
    export_onnx(model, fp32_path)

    tok = WordPiece(vocab)
    _, held_out = split_pairs(args.data)
    step = max(1, len(held_out) // args.check_texts)
    check = [r[2] for r in held_out[::step]][: args.check_texts // 2] + [r[1] for r in held_out[::step]][: args.check_texts // 2]
    ids = [encode_capped(tok, t, max_tokens) for t in check]
    reference = torch_vectors(model, ids)
    report = {"check_texts": len(check)}
    report["fp32"] = cosine_report(reference, onnx_vectors(fp32_path, ids))
    dtype = "fp32"
    q8_path = os.path.join(args.out, "onnx", "model_quantized.onnx")
    # Int8 variants, most compact first; the first whose vectors hold is served.
    for variant in QUANT_VARIANTS:
        try:
            quantize(fp32_path, q8_path, **variant)
        except ImportError as error:
            report["q8"] = f"not made: {error}"
            break
        report[f"q8 {variant}"] = cosine_report(reference, onnx_vectors(q8_path, ids))
        if report[f"q8 {variant}"]["min"] >= args.min_cosine:
            dtype = "q8"
            report["q8"] = variant
            break
    if dtype != "q8" and os.path.exists(q8_path):
        os.remove(q8_path)
    print(json.dumps(report, indent=2), flush=True)

    served = q8_path if dtype == "q8" else fp32_path
    parity_texts = PARITY_TEXTS
    if args.parity_texts:
        with open(args.parity_texts, encoding="utf-8") as f:
            parity_texts = [c["text"] for c in json.load(f)["cases"]]
    parity_ids = [encode_capped(tok, t, max_tokens) for t in parity_texts]
    parity_vecs = onnx_vectors(served, parity_ids)
    with open(os.path.join(args.out, "parity.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": [{"text": t, "ids": i, "vector_head": [round(float(x), 6) for x in v[:8]]}
                             for t, i, v in zip(parity_texts, parity_ids, parity_vecs)]}, f, indent=1, ensure_ascii=False)

    if args.int8_only and dtype == "q8":
        os.remove(fp32_path)
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": cfg["vocab_size"],
              "hidden_size": cfg["hidden_size"], "num_hidden_layers": cfg["num_hidden_layers"],
              "num_attention_heads": cfg["num_attention_heads"], "intermediate_size": cfg["intermediate_size"],
              "hidden_act": "gelu", "max_position_embeddings": max_tokens, "type_vocab_size": 2,
              "layer_norm_eps": 1e-12, "pad_token_id": 0}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer_files(args.out, vocab, max_tokens)
    dims = cfg["hidden_size"]
    settings = {
        "name": "legal-2-embedder",
        "description": args.description,
        "max_input_tokens": max_tokens,
        "pooling": "mean",
        "dimensions": {"default": dims, "max": dims,
                       "matryoshka": [d for d in (32, 64, 128, 256, 384, 512) if d <= dims]},
        "prompts": {"retrieval/query": None, "retrieval/document": None},
        "dtype": dtype,
    }
    with open(os.path.join(args.out, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
    with open(os.path.join(args.out, "export.json"), "w") as f:
        json.dump(report | {"dtype": dtype, "sizes": {n: os.path.getsize(os.path.join(args.out, "onnx", n))
                                                      for n in os.listdir(os.path.join(args.out, "onnx"))}}, f, indent=2)
    for name in ("training.json", "evaluation.json"):
        src = os.path.join(os.path.dirname(args.checkpoint), name)
        if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(os.path.join(args.out, name)):
            shutil.copy(src, os.path.join(args.out, name))
    print(f"wrote {args.out} (serves {dtype})")


def export_onnx(model, path):
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    kwargs = dict(input_names=names, output_names=["last_hidden_state"],
                  dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]},
                  opset_version=14, do_constant_folding=True)
    with torch.no_grad():
        try:
            torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)), path, dynamo=False, **kwargs)
        except TypeError:  # torch < 2.5 has no dynamo argument
            torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)), path, **kwargs)


QUANT_VARIANTS = [
    {"ops": ["MatMul", "Gather"], "per_channel": False},
    {"ops": ["MatMul", "Gather"], "per_channel": True},
    {"ops": ["MatMul"], "per_channel": True},
]


def quantize(src, dst, ops, per_channel):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(src, dst, weight_type=QuantType.QInt8, op_types_to_quantize=ops, per_channel=per_channel)


def batches(ids, size=64):
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), size):
        chunk = order[start:start + size]
        width = max(len(ids[i]) for i in chunk)
        x = np.zeros((len(chunk), width), dtype=np.int64)
        for r, i in enumerate(chunk):
            x[r, :len(ids[i])] = ids[i]
        yield chunk, x, (x != 0).astype(np.int64)


@torch.no_grad()
def torch_vectors(model, ids):
    out = np.zeros((len(ids), model.config["hidden_size"]), dtype=np.float32)
    for chunk, x, m in batches(ids):
        xt, mt = torch.from_numpy(x), torch.from_numpy(m)
        out[chunk] = mean_pool(model(xt, mt), mt).numpy()
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def onnx_vectors(path, ids):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = None
    for chunk, x, m in batches(ids):
        hidden = session.run(["last_hidden_state"], {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)})[0]
        pooled = (hidden * m[:, :, None]).sum(1) / m.sum(1, keepdims=True)
        if out is None:
            out = np.zeros((len(ids), pooled.shape[1]), dtype=np.float32)
        out[chunk] = pooled
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def cosine_report(a, b):
    cos = (a * b).sum(axis=1)
    return {"min": float(cos.min()), "mean": float(cos.mean())}


if __name__ == "__main__":
    main()
