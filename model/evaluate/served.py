"""A model folder served as lexembed serves it, from Python: the static recipe in numpy (no
onnxruntime) or the ONNX graph through onnxruntime, with the folder's prompts and document form.
Every evaluator, the graph steps that check their work and the trainers' evaluations embed through
these."""
import json
import os

import numpy as np

from model.common.legal_data import encode_capped
from model.common.tokenizer_files import load_tokenizer


def load_static_model(folder):
    import onnx
    from onnx import numpy_helper
    graph = onnx.load(f"{folder}/onnx/model.onnx").graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    table = init["table_int8"].astype(np.float32) * init["row_scale"]
    with open(f"{folder}/lexembed.json") as f:
        settings = json.load(f)
    return table, load_tokenizer(folder), settings["max_input_tokens"]


def served_prompts(folder):
    """The folder's retrieval prompts (lexembed.json "prompts"; "" where none), which the server
    puts before the text of every request with that task."""
    with open(os.path.join(folder, "lexembed.json"), encoding="utf-8") as f:
        prompts = json.load(f).get("prompts") or {}
    return {task: prompts.get(task) or "" for task in ("retrieval/query", "retrieval/document")}


def is_static_folder(folder):
    with open(f"{folder}/config.json") as f:
        return json.load(f).get("num_hidden_layers", 0) == 0


def static_embed_fn(folder, max_tokens=None):
    """A static folder served as its recipe: the int8 table summed in numpy, and after
    model/graph/lexical.py its lexical part beside it and the Matryoshka rotation after them
    ([sqrt(ws)·s/|s|, sqrt(wl)·l/|l|] · M, the graph's arithmetic, from the graph's own tables), so
    no onnxruntime is needed. Its `.document` embeds as `task: retrieval/document` at full width
    (the folder's document form, model/graph/document_form.py, where it has one)."""
    table, tok, served = load_static_model(folder)
    max_tokens = max_tokens or served
    lexical = load_lexical(folder)
    if lexical is None:
        return lambda texts, dims=None: embed(table, tok, texts, max_tokens, dims)
    from model.rules.bm25 import counted_length, lexical_part
    from model.rules.tables import read_bm25, read_canonical
    bucket, weight, avg_len, rotation, shares = lexical
    k1, b = read_bm25(folder)
    canonical = read_canonical(folder)
    with open(f"{folder}/training.json") as f:
        record = json.load(f)

    def run(texts, dims=None, document=False):
        ids = [encode_capped(tok, t, max_tokens) for t in texts]
        w = shares.at([counted_length(i, weight) for i in ids])
        dense = np.sqrt(w[:, 1:2]) * embed(table, tok, texts, max_tokens)
        lexical = np.sqrt(w[:, 2:3]) * lexical_part(ids, bucket, weight, avg_len, k1, b, canonical)
        if "document_form" in record:
            from model.rules.document_form import served_form
            out = served_form(record, ids, bucket, weight, avg_len, k1, b, dense, lexical, rotation, document and not dims, canonical)
        else:
            out = np.concatenate([dense, lexical], axis=1) @ rotation
        out = out[:, :dims] if dims else out
        return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    run.document = lambda texts, dims=None: run(texts, dims, document=True)
    return run


def load_lexical(folder):
    """(bucket, weight, avg_len, rotation, Shares) of a static folder's lexical part
    (model/graph/lexical.py), or None."""
    path = f"{folder}/training.json"
    if not os.path.exists(path):
        return None
    with open(path) as f:
        training = json.load(f)
    if "lexical" not in training:
        return None
    from model.rules.bm25 import Shares
    from model.rules.tables import read_tables
    return (*read_tables(folder), Shares.of(training))


def onnx_embed_fn(folder, max_tokens=None, file=None, threads=0):
    """A transformer folder served as lexembed serves it: its ONNX file through onnxruntime,
    WordPiece ids truncated keeping [SEP], mean pooling over the mask, L2 normalisation. Its
    `.document` embeds as `task: retrieval/document` at full width, i.e. in the folder's document
    form where it has one (lexembed.json "document_form", model/graph/document_form.py: its marker piece
    in place of [CLS]), through the same session."""
    import onnxruntime as ort
    with open(f"{folder}/lexembed.json") as f:
        settings = json.load(f)
    max_tokens = max_tokens or settings["max_input_tokens"]
    name = file or ("model_quantized.onnx" if settings.get("dtype") == "q8" else "model.onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(f"{folder}/onnx/{name}", options, providers=["CPUExecutionProvider"])
    tok = load_tokenizer(folder)
    inputs = {i.name for i in session.get_inputs()}

    form = settings.get("document_form")

    def run(texts, dims=None, document=False):
        ids = [encode_capped(tok, t, max_tokens) for t in texts]
        if document and form and not dims:
            for i in ids:
                assert i[0] == form["replaces"], "a text's ids must start with the piece the marker replaces"
                i[0] = form["marker"]
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start, chunk in batches_by_length(ids, 8192):
            width = max(len(ids[i]) for i in chunk)
            x = np.zeros((len(chunk), width), dtype=np.int64)
            m = np.zeros_like(x)
            for r, i in enumerate(chunk):
                x[r, :len(ids[i])] = ids[i]
                m[r, :len(ids[i])] = 1
            feed = {"input_ids": x, "attention_mask": m}
            if "token_type_ids" in inputs:
                feed["token_type_ids"] = np.zeros_like(x)
            hidden = session.run(["last_hidden_state"], feed)[0]
            pooled = (hidden * m[:, :, None]).sum(1) / m.sum(1, keepdims=True)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[chunk] = pooled
        if dims:
            out = out[:, :dims]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    run.document = lambda texts, dims=None: run(texts, dims, document=True)
    return run


def batches_by_length(ids, max_batch_tokens):
    """Index batches of similar length whose padded size stays under max_batch_tokens."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * len(ids[order[end]]) <= max_batch_tokens:
            end += 1
        yield start, order[start:end]
        start = end


def embed(table, tok, texts, max_tokens, dims=None):
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for i, t in enumerate(texts):
        out[i] = table[encode_capped(tok, t, max_tokens)].sum(axis=0)
    if dims:
        out = out[:, :dims]
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def graph_parts(folder, ids_list):
    """The graph's own [sqrt(wt)·t, sqrt(ws)·s, …] before the rotation (its "matryoshka.parts",
    query form), one text at a time: the dense parts exactly as served."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    model = onnx.load(os.path.join(folder, "onnx", "model.onnx"))
    model.graph.output.append(helper.make_tensor_value_info("matryoshka.parts", TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    out = []
    for ids in ids_list:
        x = np.asarray([ids], dtype=np.int64)
        feed = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)}
        out.append(session.run(["matryoshka.parts"], {k: v for k, v in feed.items() if k in inputs})[0][0, 0])
    return np.asarray(out, dtype=np.float64)
