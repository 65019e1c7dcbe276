"""Writes the MiniLM-L6-H384-shaped benchmark model (random weights, fixed seed) with numpy and onnx
alone, so the GPU kit can build it on a machine with no torch and no network (its 90 MB of random
float32 weights do not compress, so they are not packed).

Not a useful embedding model: it has the shape and cost of all-MiniLM-L6-v2 (6 layers, hidden 384,
12 heads, FFN 1,536, 512 positions) so throughput figures compare with what users run. Weights
are named as transformers' BertModel names them (MatMul weights stored [in, out] and traced by
their bias), the form bench/gpu/torch_anchor.py reads back into a BertModel.

    npm run bench:model    (python3 bench/gpu/make_bench_model.py --tokenizer-from
                            models/legal-2-embedder-static --out bench-results/minilm-l6-h384)
"""
import argparse
import json
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


class GraphBuilder:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def const(self, values, dtype=np.int64):
        self.count += 1
        return self.init(f"const_{self.count}", np.asarray(values, dtype=dtype))

    def linear(self, x, weight_in_out, bias, bias_name):
        return self.op("Add", [self.op("MatMul", [x, self.init(f"matmul_w_{self.count + 1}", weight_in_out)]),
                               self.init(bias_name, bias)])

    def layer_norm(self, x, prefix, rng, hidden):
        scale = self.init(prefix + ".weight", (1.0 + 0.02 * rng.standard_normal(hidden)).astype(np.float32))
        shift = self.init(prefix + ".bias", (0.02 * rng.standard_normal(hidden)).astype(np.float32))
        return self.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=1e-12)


def build(vocab_size, hidden, layers, heads, inner, positions, seed):
    rng = np.random.default_rng(seed)
    normal = lambda *shape, std=1.0: (std * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    g = GraphBuilder()
    head_dim = hidden // heads

    word = g.op("Gather", [g.init("embeddings.word_embeddings.weight", normal(vocab_size, hidden)), "input_ids"])
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(1)], axis=0)
    pos_ids = g.op("Unsqueeze", [g.op("Range", [g.const(0), seq_len, g.const(1)]), g.const([0])])
    pos = g.op("Gather", [g.init("embeddings.position_embeddings.weight", normal(positions, hidden)), pos_ids])
    types = g.op("Gather", [g.init("embeddings.token_type_embeddings.weight", normal(2, hidden)), "token_type_ids"])
    x = g.layer_norm(g.op("Add", [g.op("Add", [word, pos]), types]), "embeddings.LayerNorm", rng, hidden)

    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    additive = g.op("Mul", [g.op("Sub", [g.const(1.0, np.float32), keep]), g.const(-10000.0, np.float32)])
    additive = g.op("Unsqueeze", [additive, g.const([1, 2])])  # [batch, 1, 1, seq]
    split_heads = g.const([0, 0, heads, head_dim])
    merge_heads = g.const([0, 0, hidden])
    for i in range(layers):
        p = f"encoder.layer.{i}."
        std = 1.0 / math.sqrt(hidden)

        def project(name):
            y = g.linear(x, normal(hidden, hidden, std=std), normal(hidden, std=0.02), p + f"attention.self.{name}.bias")
            return g.op("Reshape", [y, split_heads])

        q = g.op("Transpose", [project("query")], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [project("key")], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [project("value")], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), g.const(1.0 / math.sqrt(head_dim), np.float32)]), additive])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        attended = g.linear(context, normal(hidden, hidden, std=std), normal(hidden, std=0.02), p + "attention.output.dense.bias")
        x = g.layer_norm(g.op("Add", [attended, x]), p + "attention.output.LayerNorm", rng, hidden)
        h = g.linear(x, normal(hidden, inner, std=std), normal(inner, std=0.02), p + "intermediate.dense.bias")
        # BERT's exact GELU: 0.5 x (1 + erf(x / sqrt 2)).
        erf = g.op("Erf", [g.op("Mul", [h, g.const(1.0 / math.sqrt(2.0), np.float32)])])
        h = g.op("Mul", [g.op("Mul", [h, g.const(0.5, np.float32)]), g.op("Add", [erf, g.const(1.0, np.float32)])])
        out = g.linear(h, normal(inner, hidden, std=1.0 / math.sqrt(inner)), normal(hidden, std=0.02), p + "output.dense.bias")
        x = g.layer_norm(g.op("Add", [out, x]), p + "output.LayerNorm", rng, hidden)

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(g.nodes, "bench_bert", ids, [output], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="lexembed bench/gpu")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer-from", required=True, help="a lexembed model folder whose tokenizer files to use")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")

    with open(os.path.join(args.tokenizer_from, "tokenizer.json"), encoding="utf-8") as f:
        vocab_size = len(json.load(f)["model"]["vocab"])
    model = build(vocab_size, args.hidden, args.layers, args.heads, 4 * args.hidden, args.max_tokens, args.seed)
    os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
    onnx.save(model, os.path.join(args.out, "onnx", "model.onnx"))
    for name in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(args.tokenizer_from, name), os.path.join(args.out, name))
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": vocab_size,
              "hidden_size": args.hidden, "num_hidden_layers": args.layers, "num_attention_heads": args.heads,
              "intermediate_size": 4 * args.hidden, "max_position_embeddings": args.max_tokens,
              "type_vocab_size": 2, "pad_token_id": 0, "hidden_act": "gelu", "layer_norm_eps": 1e-12}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    settings = {
        "name": "legal-2-embedder",
        "description": "MiniLM-L6-H384-shaped benchmark model with random weights (bench/gpu/make_bench_model.py). NOT a useful embedding model.",
        "max_input_tokens": args.max_tokens,
        "pooling": "mean",
        "dimensions": {"default": args.hidden, "max": args.hidden},
        "prompts": {"retrieval/query": None, "retrieval/document": None},
        "dtype": "fp32",
    }
    with open(os.path.join(args.out, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
    print(f"wrote {args.out}: {args.layers} layers, hidden {args.hidden}, vocabulary {vocab_size}")


if __name__ == "__main__":
    main()
