"""Writes a static embedding model as a transformers.js model folder: an int8 token table
with per-row scales in a tiny ONNX graph whose output is last_hidden_state, so lexembed's
mean pooling + L2 normalisation yields the normalised sum of token vectors."""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from model.export.int8_rows import gather_int8_rows
from model.common.tokenizer_files import write_tokenizer_files


def quantize_rows(weights):
    scales = np.abs(weights).max(axis=1, keepdims=True) / 127.0
    scales[scales == 0] = 1.0
    q = np.clip(np.round(weights / scales), -127, 127).astype(np.int8)
    return q, scales.astype(np.float32)


def build_graph(q, scales):
    # Written as the int8 table's Cast·Mul before its Gather, then rewritten to dequantise the
    # looked-up rows only (model/export/int8_rows.py): onnxruntime would fold the whole table to float at load.
    nodes = [
        helper.make_node("Cast", ["table_int8"], ["table_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["table_f", "row_scale"], ["table"]),
        helper.make_node("Gather", ["table", "input_ids"], ["token_vectors"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["token_vectors", "mask_3d"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes, "static_embedding",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", q.shape[1]])],
        [numpy_helper.from_array(q, "table_int8"), numpy_helper.from_array(scales, "row_scale"),
         numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="lexembed")
    model.ir_version = 8
    gather_int8_rows(model)
    onnx.checker.check_model(model)
    return model


def export_model_folder(out, vocab, weights, max_tokens, training_info):
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    q, scales = quantize_rows(weights)
    onnx.save(build_graph(q, scales), os.path.join(out, "onnx", "model.onnx"))
    dims = weights.shape[1]
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": len(vocab),
              "hidden_size": dims, "num_hidden_layers": 0, "num_attention_heads": 1,
              "max_position_embeddings": max_tokens, "pad_token_id": 0}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer_files(out, vocab, max_tokens)
    settings = {
        "name": "legal-2-embedder-static",
        "description": "Static legal embedding model trained by lexembed (model/train_static.py).",
        "max_input_tokens": max_tokens,
        "pooling": "mean",
        "dimensions": {"default": dims, "max": dims, "matryoshka": [d for d in (32, 64, 128, 256, 512, 1024) if d <= dims]},
        "prompts": {"retrieval/query": None, "retrieval/document": None},
        "dtype": "fp32",
    }
    with open(os.path.join(out, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
    with open(os.path.join(out, "training.json"), "w") as f:
        json.dump(training_info, f, indent=2, default=str)
