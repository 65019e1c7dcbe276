"""Reads a transformer's weights back from a served ONNX file (a transformer folder or the hybrid),
so training can continue from what ships and nothing but `models/` need be kept between sessions.

    python3 -m model.export.onnx_weights models/legal-2-embedder --check   # torch vs onnxruntime, cosine
    python3 -m model.export.onnx_weights models/legal-2-embedder --write RUN/resume.pt --out FOLDER [--query-prefix PIECE]

Named initializers (biases, LayerNorms, embeddings) map by name; int8 tables (`*_int8` with
`*_row_scale`, model/export/hybrid.py) are dequantised exactly as the graph does; the anonymous MatMul
weights (`onnx::MatMul_N`, stored [in, out]) are named by the bias their MatMul's Add takes.
"""
import argparse
import collections
import json
import os
import shutil

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from model.common.folder import needs

PREFIX = "bert."
LEXICAL = ("lexical.", "matryoshka.")  # the initializers model/graph/lexical.py adds (the lexical part, the Matryoshka rotation)


def bert_state_dict(onnx_path, prefix=PREFIX):
    """(state_dict, config) of the Bert (model/common/bert.py) whose parameters are named `prefix`… in the graph."""
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
        if weight is None or weight.startswith(LEXICAL):  # model/graph/lexical.py's rotation: not the transformer's
            continue
        bias = next((i for add in consumers[node.output[0]] if add.op_type == "Add"
                     for i in add.input if i.startswith(prefix) and i.endswith(".bias")), None)
        if bias is None:
            raise SystemExit(f"{onnx_path}: MatMul {node.name} ({weight}) feeds no bias Add; not a graph model/export/hybrid.py or model/export/transformer.py wrote")
        state[bias[len(prefix):-len(".bias")] + ".weight"] = init[weight].T.copy()
    return {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()}, config_of(state)


def config_of(state, heads=4):
    """model/common/bert.py's config from a state dict's shapes (heads cannot be read off them: 4 in every run so far)."""
    words = state["embeddings.word_embeddings.weight"]
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    return dict(vocab_size=words.shape[0], hidden_size=words.shape[1], num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=state["encoder.layer.0.intermediate.dense.weight"].shape[0],
                max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0], hidden_dropout_prob=0.1)


def load_bert(folder, heads=None, dropout=0.1):
    """The Bert of a served folder (hybrid or transformer), ready to train or evaluate."""
    from model.common.bert import Bert
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


def write_bert(folder, state, out, query_prefix="", source=""):
    """A copy of the served `folder` in `out` whose transformer weights are `state` (a Bert state
    dict, e.g. model/train/transformer.py's checkpoint): the inverse of bert_state_dict, int8 tables
    quantised per row as model/export/hybrid.py does; every other part (static table, lexical part)
    as it was. With `query_prefix` (a piece such as [unused0], trained with model/train/transformer.py
    --query-prefix), the folder serves it as the retrieval/query prompt: the tokenizer keeps it
    whole and it adds nothing to the static and lexical parts."""
    from model.export.static import quantize_rows
    path = os.path.join(folder, "onnx", "model.onnx")
    graph_model = onnx.load(path)
    graph = graph_model.graph
    init = {t.name: t for t in graph.initializer}
    prefix = PREFIX if any(name.startswith(PREFIX) for name in init) else ""
    state = {k: v.float().numpy() for k, v in state.items()}
    written = set()

    def put(name, value):
        init[name].CopyFrom(numpy_helper.from_array(value.astype(numpy_helper.to_array(init[name]).dtype), name))

    for name in list(init):
        key = name[len(prefix):] if name.startswith(prefix) else None
        if key and key.endswith("_int8") and key[: -len("_int8")] in state:
            q, scale = quantize_rows(state[key[: -len("_int8")]])
            put(name, q)
            put(name[: -len("_int8")] + "_row_scale", scale)
            written.add(key[: -len("_int8")])
        elif key in state:
            put(name, state[key])
            written.add(key)
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    for node in graph.node:
        weight = next((i for i in node.input if i in init and not (prefix and i.startswith(prefix)) and not i.startswith(LEXICAL)), None)
        if node.op_type != "MatMul" or weight is None:
            continue
        bias = next((i for add in consumers[node.output[0]] if add.op_type == "Add"
                     for i in add.input if i.startswith(prefix) and i.endswith(".bias")), None)
        if bias is not None:
            key = bias[len(prefix):-len(".bias")] + ".weight"
            put(weight, state[key].T)
            written.add(key)
    missing = set(state) - written
    if missing:
        raise SystemExit(f"{path}: nowhere to write {sorted(missing)[:5]}")
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    with open(os.path.join(folder, "lexembed.json"), encoding="utf-8") as f:
        settings = json.load(f)
    if query_prefix:
        piece_id = tokenizer["model"]["vocab"].get(query_prefix)
        if piece_id is None:
            raise SystemExit(f"--query-prefix {query_prefix!r} is not a piece of {folder}/tokenizer.json")
        if not any(t["content"] == query_prefix for t in tokenizer["added_tokens"]):
            tokenizer["added_tokens"].append({"id": piece_id, "content": query_prefix, "single_word": False, "lstrip": False,
                                              "rstrip": False, "normalized": False, "special": True})
        settings["prompts"]["retrieval/query"] = query_prefix + " "
        for name in ("static.weight_int8", "lexical.weight"):  # the prefix is no word: nothing in the other parts
            if name in init:
                table = numpy_helper.to_array(init[name]).copy()
                table[piece_id] = 0
                put(name, table)
    onnx.save(graph_model, os.path.join(out, "onnx", "model.onnx"))
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(out, "lexembed.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2, ensure_ascii=False)
        f.write("\n")
    for name in ("config.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(folder, name)):
            shutil.copy(os.path.join(folder, name), os.path.join(out, name))
    if os.path.exists(os.path.join(folder, "training.json")):  # the hybrid's shares stand; its transformer is the new one
        with open(os.path.join(folder, "training.json"), encoding="utf-8") as f:
            training = json.load(f)
        if "hybrid" in training:
            training["hybrid"]["transformer"] = f"{source or 'a checkpoint'} (written into {folder}'s graph by model/onnx_weights.py --write)"
            training["hybrid"]["transformer_step"] = None
            training["hybrid"]["query_prefix"] = query_prefix or None
        with open(os.path.join(out, "training.json"), "w", encoding="utf-8") as f:
            json.dump(training, f, indent=2)


def checkpoint_state(path):
    """The Bert state dict of a model/train/transformer.py checkpoint.pt or resume.pt."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    return ckpt["state_dict"] if "state_dict" in ckpt else ckpt["model"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", help="a served model folder (hybrid or transformer)")
    p.add_argument("--check", action="store_true", help="compare torch's vectors with onnxruntime's on a few texts")
    p.add_argument("--write", metavar="CHECKPOINT", help="write this checkpoint's transformer weights into a copy of the folder (--out)")
    p.add_argument("--out", help="where --write puts the copy (tokenizer, settings and other parts as in the folder)")
    p.add_argument("--query-prefix", default="", help="with --write: the piece the checkpoint was trained with as a query prefix")
    args = p.parse_args()
    needs("model.export.onnx_weights", (args.folder, "folder"), (args.write, "checkpoint"))
    if args.write:
        if not args.out:
            p.error("--write needs --out")
        write_bert(args.folder, checkpoint_state(args.write), args.out, args.query_prefix, args.write)
        print(f"wrote {args.out} from {args.write}" + (f" (retrieval/query prompt {args.query_prefix!r})" if args.query_prefix else ""))
        args.folder = args.out
    model = load_bert(args.folder).eval()
    print(f"{args.folder}: {sum(x.numel() for x in model.parameters()) / 1e6:.1f} M parameters, {model.config}")
    if args.check:
        check(args.folder, model)


def check(folder, model):
    import onnxruntime as ort
    from model.common.bert import mean_pool
    from model.common.tokenizer_files import load_tokenizer
    tok = load_tokenizer(folder)
    texts = ["What must an organisation make public about its Data Protection Officer?",
             "The lessee shall pay the rent on the first day of each month.", "Limitation period"]
    path = os.path.join(folder, "onnx", "model.onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    hidden = model.config["hidden_size"]
    # A v4 folder ends in the Matryoshka rotation (model/graph/matryoshka.py): · Mᵀ undoes it, so the
    # transformer's components are the first `hidden` again.
    rotation = [numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer if t.name == "matryoshka.rotation"]
    for text in texts:
        ids = np.array([tok.encode(text)], dtype=np.int64)
        mask = np.ones_like(ids)
        feed = {i.name: (ids if i.name == "input_ids" else mask if i.name == "attention_mask" else np.zeros_like(ids))
                for i in session.get_inputs()}
        served = session.run(["last_hidden_state"], feed)[0].mean(1)[0]
        served = (served @ rotation[0].T if rotation else served)[:hidden]
        with torch.no_grad():
            mine = mean_pool(model(torch.from_numpy(ids), torch.from_numpy(mask)), torch.from_numpy(mask))[0].numpy()
        cos = float(served @ mine / np.linalg.norm(served) / np.linalg.norm(mine))
        print(f"cosine {cos:.7f}  {text[:50]}")
        assert cos > 0.99999, "the weights read back do not reproduce the served model"


if __name__ == "__main__":
    main()
