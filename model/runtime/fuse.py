#!/usr/bin/env python3
"""Writes onnx/model_fused.onnx beside a model folder's onnx/model.onnx: the same graph with its
transformer fused by onnxruntime's transformer optimiser (Attention, SkipLayerNormalization,
BiasGelu: the kernels onnxruntime's WebGPU provider ships, which an exported graph of MatMuls and
Softmax never reaches), checked against the exported graph, and recorded in lexembed.json as
"fused" (its min cosine and the sha256 of the model.onnx it was made from).

`lexembed serve --device webgpu` runs it under `--graph auto` on onnxruntime-node's own WebGPU
provider (measured there against the exported graph: docs/gpu.md); the CPU keeps the exported
graph or the int8 one (fusing gained nothing on this project's CPU). Like model_fp16.onnx it is
made where it is used rather than shipped (about the size of model.onnx). Needs onnx and
onnxruntime's Python package (its `onnxruntime.transformers` optimiser; model/README.md's venv).

    python3 -m model.runtime.fuse --model models/legal-2-embedder --parity tests/fixtures/legal-model-parity.json
"""
import argparse
import json
import os
import time


FUSED_FILE = "model_fused.onnx"
# Fusion rewrites the arithmetic, not the model: anything further than this from the exported
# graph's vectors is a wrong fusion, and nothing is written.
MIN_COSINE = 0.99999


def transformer_shape(model, folder):
    """(heads, hidden) of the transformer inside the graph: hidden from its position embeddings
    (a hybrid's config.json gives the served width instead), heads from config.json."""
    from onnx import numpy_helper
    with open(os.path.join(folder, "config.json")) as f:
        heads = json.load(f)["num_attention_heads"]
    for t in model.graph.initializer:
        if t.name.endswith("position_embeddings.weight"):
            return heads, int(numpy_helper.to_array(t).shape[1])
    raise SystemExit(f"model/runtime/fuse.py: {folder}/onnx/model.onnx has no BERT position embeddings (a static model has no transformer to fuse)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a transformer or hybrid model folder")
    p.add_argument("--parity", help="a parity fixture whose texts join the check")
    args = p.parse_args()
    needs("model.runtime.fuse", (args.model, "folder"), (args.parity, "parity"))
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model
    from model.common.folder import needs, write_settings
    from model.runtime.quantize import file_sha256, min_cosine, probe_texts

    started = time.time()
    source = os.path.join(args.model, "onnx", "model.onnx")
    heads, hidden = transformer_shape(onnx.load(source, load_external_data=False), args.model)
    optimized = optimize_model(source, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
    fusions = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
    if not fusions.get("Attention"):
        raise SystemExit(f"model/runtime/fuse.py: the optimiser fused no attention in {source} ({fusions}); nothing written")
    target = os.path.join(args.model, "onnx", FUSED_FILE)
    optimized.save_model_to_file(target)
    texts = probe_texts(args.parity)
    cosine = min_cosine(args.model, FUSED_FILE, texts)
    if cosine < MIN_COSINE:
        os.remove(target)
        raise SystemExit(f"model/runtime/fuse.py: the fused graph's vectors are off (min cosine {cosine:.7f} < {MIN_COSINE}); not written")
    with open(os.path.join(args.model, "lexembed.json")) as f:
        settings = json.load(f)
    settings["fused"] = {"file": f"onnx/{FUSED_FILE}", "fusions": fusions, "min_cosine": round(cosine, 7),
                         "made_by": "model/fuse_graph.py (onnxruntime.transformers optimize_model, bert, opt_level 0)",
                         "source_sha256": file_sha256(source)}
    write_settings(args.model, settings)
    print(f"wrote {target}: {fusions}; min cosine to model.onnx over {len(texts)} texts {cosine:.7f} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
