#!/usr/bin/env python3
"""Writes onnx/model_quantized.onnx beside a model folder's onnx/model.onnx (transformers.js's file
for dtype "q8"): the transformer's weight MatMuls quantised to int8 by onnxruntime's dynamic
quantisation (weights int8 per tensor, activations quantised per call; QInt8, float outputs), every
other node as it was (the lexical part, the shares and the Matryoshka rotation stay float32: they
are a small share of the work, and the rotation feeds every served component). Then it measures
what the int8 graph costs in quality, against the float32 graph in the same run:

- the minimum cosine between both graphs' vectors over the parity texts (and short/long probes);
- with --dev, the dev set's nDCG@10 of both (model/evaluate/dev.py), which `lexembed serve
  --dtype auto` reads on a CPU: it serves the int8 graph only where the loss is at most 0.005.

Both go into lexembed.json as "quantized" (the model card reports them). Needs onnx and
onnxruntime's Python package (model/README.md's venv: onnxruntime.quantization).

    python3 -m model.runtime.quantize --model models/legal-2-embedder --dev ../shared/data/legal-eval-dev
"""
import argparse
import hashlib
import json
import os
import tempfile
import time

from model.common.folder import needs, write_settings


QUANTIZED_FILE = "model_quantized.onnx"
# The served rule (src/node/runtime/webgpu/decide.ts reads lexembed.json's figures): int8 is served
# by --dtype auto only where its dev-set nDCG@10 is at most this far below float32's.
MAX_DEV_LOSS = 0.005


def weight_matmuls(model):
    """Names of the MatMul nodes that multiply by a weight (an initializer) inside the transformer,
    naming unnamed nodes on the way (quantize_dynamic selects nodes by name)."""
    weights = {t.name for t in model.graph.initializer}
    chosen = []
    for i, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}_{i}"
        if node.op_type == "MatMul" and node.name.startswith("/bert/") and any(x in weights for x in node.input):
            chosen.append(node.name)
    return chosen


def quantize(folder):
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = os.path.join(folder, "onnx", "model.onnx")
    model = onnx.load(source)
    nodes = weight_matmuls(model)
    if not nodes:
        raise SystemExit(f"model/runtime/quantize.py: {source} has no transformer MatMul with weights (a static model: its tables are int8 already)")
    with tempfile.TemporaryDirectory() as tmp:
        named = os.path.join(tmp, "named.onnx")
        onnx.save(model, named)
        quantize_dynamic(named, os.path.join(folder, "onnx", QUANTIZED_FILE), weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"], nodes_to_quantize=nodes,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return nodes


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def probe_texts(parity):
    texts = ["Termination for convenience", "governing law", "the seller shall indemnify the buyer"]
    texts.append(" ".join(["The licensee shall not sublicense, assign or transfer any rights granted herein."] * 40))
    if parity:
        with open(parity) as f:
            fixture = json.load(f)
        cases = fixture.get("cases", fixture) if isinstance(fixture, dict) else fixture
        texts += [c["text"] for c in cases if isinstance(c, dict) and "text" in c]
    return texts


def min_cosine(folder, file, texts):
    """The least cosine between onnx/model.onnx's vectors and onnx/<file>'s over `texts`, as
    queries and as documents (the document form, model/graph/document_form.py, where the folder has one)."""
    from model.evaluate.served import onnx_embed_fn
    full, other = onnx_embed_fn(folder), onnx_embed_fn(folder, file=file)
    return min(float((full(texts, document=d) * other(texts, document=d)).sum(1).min()) for d in (False, True))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a hybrid or transformer model folder (onnx/model.onnx)")
    p.add_argument("--parity", help="a parity fixture whose texts join the cosine check (tests/fixtures/legal-model-parity.json)")
    p.add_argument("--dev", help="the dev set folder: score both graphs (recorded for --dtype auto)")
    args = p.parse_args()
    needs("model.runtime.quantize", (args.model, "folder"), (args.parity, "parity"), (args.dev, "dev"))
    started = time.time()
    nodes = quantize(args.model)
    texts = probe_texts(args.parity)
    cosine = min_cosine(args.model, QUANTIZED_FILE, texts)
    print(f"{args.model}: {len(nodes)} MatMuls int8; min cosine to float32 over {len(texts)} texts {cosine:.6f} ({time.time() - started:.0f} s)")
    if cosine < 0.999:
        os.remove(os.path.join(args.model, "onnx", QUANTIZED_FILE))
        raise SystemExit(f"model/runtime/quantize.py: the int8 graph's vectors are too far from float32 (min cosine {cosine:.6f} < 0.999); not written")
    settings_path = os.path.join(args.model, "lexembed.json")
    with open(settings_path) as f:
        settings = json.load(f)
    settings.pop("quantized", None)  # the figures below are measured with the settings as served
    record = {"file": f"onnx/{QUANTIZED_FILE}", "dtype": "q8",
              "method": f"onnxruntime quantize_dynamic, QInt8 weights, {len(nodes)} transformer MatMuls (model/quantize_graph.py)",
              "min_cosine": round(cosine, 6), "max_dev_loss": MAX_DEV_LOSS,
              # The float32 graph it was made from: a server finding another onnx/model.onnx (the
              # folder rebuilt since) does not serve this int8 graph under --dtype auto.
              "source_sha256": file_sha256(os.path.join(args.model, "onnx", "model.onnx"))}
    if args.dev:
        from model.evaluate.dev import evaluate_dev
        write_settings(args.model, settings)
        quiet = lambda *a, **k: None  # noqa: E731
        full = evaluate_dev(args.model, args.dev, log=quiet)["mean"]["model_ndcg@10"]
        quantized = evaluate_dev(args.model, args.dev, log=quiet, graph=QUANTIZED_FILE)["mean"]["model_ndcg@10"]
        record.update({"dev_ndcg@10": round(quantized, 4), "fp32_dev_ndcg@10": round(full, 4)})
        print(f"dev nDCG@10: float32 {full:.4f}, int8 {quantized:.4f} (loss {full - quantized:+.4f}; "
              f"--dtype auto serves int8 on a CPU: {'yes' if full - quantized <= MAX_DEV_LOSS else 'no'})")
    settings["quantized"] = record
    write_settings(args.model, settings)
    print(f"wrote {args.model}/onnx/{QUANTIZED_FILE} and lexembed.json \"quantized\" ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
