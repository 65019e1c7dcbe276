"""Reads a transformer's weights back from a served ONNX file (a transformer folder or the hybrid),
so training can continue from what ships and nothing but `models/` need be kept between sessions.

    python3 model/onnx_weights.py models/legal-2-embedder --check   # torch vs onnxruntime, cosine

Named initializers (biases, LayerNorms, embeddings) map by name; int8 tables (`*_int8` with
`*_row_scale`, export_hybrid.py) are dequantised exactly as the graph does; the anonymous MatMul
weights (`onnx::MatMul_N`, stored [in, out]) are named by the bias their MatMul's Add takes.
"""
import argparse
import collections
import json
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper

PREFIX = "bert."


def bert_state_dict(onnx_path, prefix=PREFIX):
    """(state_dict, config) of the Bert (model/bert.py) whose parameters are named `prefix`… in the graph."""
    graph = onnx.load(onnx_path).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    state = {}
    for name, value in init.items():
        if name.startswith(prefix) and name.endswith("_int8"):
            base = name[: -len("_int8")]
            state[base[len(prefix):]] = value.astype(np.float32) * init[base + "_row_scale"]
        elif name.startswith(prefix) and not name.endswith("_row_scale"):
            state[name[len(prefix):]] = value
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        weight = next((i for i in node.input if i in init and not i.startswith(prefix)), None)
        if weight is None:
            continue
        bias = next((i for add in consumers[node.output[0]] if add.op_type == "Add"
                     for i in add.input if i.startswith(prefix) and i.endswith(".bias")), None)
        if bias is None:
            raise SystemExit(f"{onnx_path}: MatMul {node.name} ({weight}) feeds no bias Add; not a graph export_hybrid.py or export_transformer.py wrote")
        state[bias[len(prefix):-len(".bias")] + ".weight"] = init[weight].T.copy()
    return {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()}, config_of(state)


def config_of(state, heads=4):
    """model/bert.py's config from a state dict's shapes (heads cannot be read off them: 4 in every run so far)."""
    words = state["embeddings.word_embeddings.weight"]
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    return dict(vocab_size=words.shape[0], hidden_size=words.shape[1], num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=state["encoder.layer.0.intermediate.dense.weight"].shape[0],
                max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0], hidden_dropout_prob=0.1)


def load_bert(folder, heads=None, dropout=0.1):
    """The Bert of a served folder (hybrid or transformer), ready to train or evaluate."""
    from bert import Bert
    path = os.path.join(folder, "onnx", "model.onnx")
    with open(os.path.join(folder, "config.json")) as f:
        served = json.load(f)
    prefix = PREFIX if any(t.name.startswith(PREFIX) for t in onnx.load(path, load_external_data=False).graph.initializer) else ""
    state, c = bert_state_dict(path, prefix)
    model = Bert(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], heads or served["num_attention_heads"],
                 c["intermediate_size"], c["max_position_embeddings"], dropout)
    missing = set(model.state_dict()) - set(state)
    if missing:
        raise SystemExit(f"{path}: no weights for {sorted(missing)[:5]}")
    model.load_state_dict(state)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="a served model folder (hybrid or transformer)")
    p.add_argument("--check", action="store_true", help="compare torch's vectors with onnxruntime's on a few texts")
    args = p.parse_args()
    model = load_bert(args.folder).eval()
    print(f"{args.folder}: {sum(x.numel() for x in model.parameters()) / 1e6:.1f} M parameters, {model.config}")
    if args.check:
        check(args.folder, model)


def check(folder, model):
    import onnxruntime as ort
    from bert import mean_pool
    from evaluate import load_tokenizer
    tok = load_tokenizer(folder)
    texts = ["What must an organisation make public about its Data Protection Officer?",
             "The lessee shall pay the rent on the first day of each month.", "Limitation period"]
    session = ort.InferenceSession(os.path.join(folder, "onnx", "model.onnx"), providers=["CPUExecutionProvider"])
    hidden = model.config["hidden_size"]
    for text in texts:
        ids = np.array([tok.encode(text)], dtype=np.int64)
        mask = np.ones_like(ids)
        feed = {i.name: (ids if i.name == "input_ids" else mask if i.name == "attention_mask" else np.zeros_like(ids))
                for i in session.get_inputs()}
        served = session.run(["last_hidden_state"], feed)[0].mean(1)[0, :hidden]
        with torch.no_grad():
            mine = mean_pool(model(torch.from_numpy(ids), torch.from_numpy(mask)), torch.from_numpy(mask))[0].numpy()
        cos = float(served @ mine / np.linalg.norm(served) / np.linalg.norm(mine))
        print(f"cosine {cos:.7f}  {text[:50]}")
        assert cos > 0.99999, "the weights read back do not reproduce the served model"


if __name__ == "__main__":
    main()
