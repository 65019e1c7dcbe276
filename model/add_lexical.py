"""Adds a lexical part to the hybrid legal-2-embedder: exact word-piece matches, weighted by how
rare a piece is in the training texts, hashed into a few hundred buckets and computed inside the
ONNX graph, so a dense vector carries keyword evidence the two learned parts blur. The served
vector becomes

    v = [sqrt(wt)·t/|t| , sqrt(ws)·s/|s| , sqrt(wl)·l/|l|]      wt + ws + wl = 1

whose dot products are wt·cos_transformer + ws·cos_static + wl·cos_lexical. The transformer and
static parts are the folder's own (only rescaled from the old weight), so nothing is retrained.

The lexical part, per text (its word-piece ids after truncation, special tokens weighing 0):

    l[b] = sqrt( Σ over the text's pieces p with bucket(p) = b of idf(p)² )

so a bucket holding one piece carries sqrt(tf)·idf, the sublinear TF-IDF weight; a bucket that
several pieces share adds their weights. The unit vector l/|l| is then turned by a fixed random
rotation (an orthogonal matrix, seed recorded): dot products are unchanged, but the few large
bucket values are spread over every component, so output_dtype int8 keeps its fixed scale without
clamping and binary's signs become a random-hyperplane hash of the lexical part (on the dev set:
binary 0.560 rotated against 0.409 unrotated, float 0.622 either way, at the shares
0.25/0.40/0.35). idf(p) = ln(1 + (N − df + 0.5)/(df + 0.5)) over the unique texts (queries and
documents) of the legal-pairs training split: never the held-out split, never the dev set.
Buckets are assigned by idf rank modulo the bucket count ("balanced": every bucket gets pieces of
every rarity), which beat random hashing on the dev set at 256–512 buckets.
The graph uses only Gather, Equal, Cast, MatMul, Sqrt, ReduceSum, Expand and Concat (opset 14), so
every runtime that serves the hybrid serves this.

    /usr/bin/python3 model/add_lexical.py --hybrid models/legal-2-embedder \
        --data ../shared/data/legal-pairs --buckets 384 --weights 0.25,0.55,0.20 \
        --parity tests/fixtures/legal-model-parity.json
    /usr/bin/python3 model/add_lexical.py --model models/legal-2-embedder-static \
        --data ../shared/data/legal-pairs --buckets 384 --weights 0,0.65,0.35

A static folder (export_static.py: masked token vectors out of the graph) gets its summed vector
normalised inside the graph first, so its served vector is [sqrt(ws)·s/|s|, sqrt(wl)·l/|l|].

Weights and bucket count were chosen on the dev set (model/evaluate_dev.py --mix); see the
model card. The folder is rewritten in place; a folder that already has a lexical part is refused.
"""
import argparse
import json
import math
import os
import time

import numpy as np

from legal_data import SPECIAL_PIECES, UNUSED_PIECE, encode_capped, split_pairs

OUTPUT = "last_hidden_state"


def piece_weights(tok, data_dir, max_tokens, log=print):
    """idf² / max idf² per word piece over the training split's unique texts (0 for special tokens)."""
    started = time.time()
    train, _ = split_pairs(data_dir)
    df = np.zeros(len(tok.vocab), dtype=np.float64)
    seen = set()
    for _, query, text, _ in train:
        for t in (query, text):
            if t in seen:
                continue
            seen.add(t)
            df[list(set(encode_capped(tok, t, max_tokens)))] += 1
    n = len(seen)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    for piece in SPECIAL_PIECES:
        if piece in tok.ids:
            idf[tok.ids[piece]] = 0.0
    log(f"idf over {n:,} unique training texts ({time.time() - started:.0f} s)")
    # Learned prompt pieces ([unusedN], e.g. a query prefix) carry no words: no weight (their idf
    # still orders the buckets, as it did when the shipped tables were written).
    unused = [i for piece, i in tok.ids.items() if UNUSED_PIECE.fullmatch(piece)]
    weight = (idf ** 2 / (idf ** 2).max()).astype(np.float32)
    weight[unused] = 0.0
    return weight, idf, n


def balanced_buckets(idf, buckets):
    """Pieces sorted by idf (rarest first, ties by id) dealt round-robin into the buckets."""
    order = np.argsort(-idf, kind="stable")
    bucket = np.empty(len(idf), dtype=np.int64)
    bucket[order] = np.arange(len(idf)) % buckets
    return bucket


def rotation(buckets, seed):
    """A random orthogonal matrix (QR of a Gaussian one), fixed by the seed."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((buckets, buckets)))
    return (q * np.sign(np.diag(r))).astype(np.float32)


def lexical_part(ids_list, bucket, weight, rotate):
    """The recipe in numpy (what the graph must compute): rotated unit vectors, one row per text."""
    out = np.zeros((len(ids_list), rotate.shape[0]), dtype=np.float64)
    for row, ids in enumerate(ids_list):
        np.add.at(out[row], bucket[ids], weight[ids].astype(np.float64))
    out = np.sqrt(out)
    return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)) @ rotate.astype(np.float64)


def add_to_graph(graph_model, bucket, weight, rotate, part_scale, lexical_scale, normalise_dense=False):
    """Renames the graph's output to dense_hidden and appends the lexical nodes after it. A hybrid's
    output is already its unit parts per token (rescaled by part_scale); a static model's is its
    masked token vectors, so with normalise_dense their sum is made a unit vector here first."""
    from onnx import TensorProto, helper, numpy_helper  # onnx only where a graph is written (tests need numpy alone)
    g = graph_model.graph
    producers = [n for n in g.node if OUTPUT in n.output]
    if len(producers) != 1:
        raise SystemExit(f"the graph has no single node producing {OUTPUT}: not a model/export_hybrid.py folder")
    producer = producers[0]
    producer.output[list(producer.output).index(OUTPUT)] = "dense_hidden"
    inits = {
        "lexical.part_scale": part_scale.astype(np.float32),
        "lexical.bucket": bucket.astype(np.int64),
        "lexical.weight": weight.astype(np.float32),
        "lexical.range": np.arange(len(rotate), dtype=np.int64),
        "lexical.rotation": rotate,
        "lexical.scale": np.array(lexical_scale, dtype=np.float32),
        "lexical.eps": np.array(1e-12, dtype=np.float32),
        "lexical.axis_last": np.array([-1], dtype=np.int64),
        "lexical.axis_one": np.array([1], dtype=np.int64),
        "lexical.width": np.array([len(rotate)], dtype=np.int64),
    }
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    n = helper.make_node
    if normalise_dense:
        # The sum over tokens as mask · vectors (MatMul): its result does not depend on how much
        # padding the batch adds (ReduceSum's does, in the last bit), so a text's vector is the
        # same in every batch (lexembed embed --shard relies on that).
        g.node.extend([
            n("Cast", ["attention_mask"], ["lexical.dense_mask"], to=TensorProto.FLOAT),
            n("Unsqueeze", ["lexical.dense_mask", "lexical.axis_one"], ["lexical.dense_mask3"]),
            n("MatMul", ["lexical.dense_mask3", "dense_hidden"], ["lexical.dense_sum"]),
            *unit_nodes(n, "lexical.dense_sum", "lexical.dense_"),
            n("Mul", ["lexical.dense_unit", "lexical.part_scale"], ["lexical.dense_vector"]),
            n("Shape", ["dense_hidden"], ["lexical.dense_shape"]),
            n("Expand", ["lexical.dense_vector", "lexical.dense_shape"], ["lexical.dense"]),
        ])
    else:
        g.node.append(n("Mul", ["dense_hidden", "lexical.part_scale"], ["lexical.dense"]))
    g.node.extend([
        n("Gather", ["lexical.bucket", "input_ids"], ["lexical.ids_bucket"]),
        n("Gather", ["lexical.weight", "input_ids"], ["lexical.ids_weight"]),
        n("Cast", ["attention_mask"], ["lexical.mask"], to=TensorProto.FLOAT),
        n("Mul", ["lexical.ids_weight", "lexical.mask"], ["lexical.token_weight"]),
        n("Unsqueeze", ["lexical.ids_bucket", "lexical.axis_last"], ["lexical.ids_bucket3"]),
        n("Equal", ["lexical.ids_bucket3", "lexical.range"], ["lexical.onehot_bool"]),
        n("Cast", ["lexical.onehot_bool"], ["lexical.onehot"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["lexical.token_weight", "lexical.axis_one"], ["lexical.token_weight3"]),
        n("MatMul", ["lexical.token_weight3", "lexical.onehot"], ["lexical.sums"]),
        n("Sqrt", ["lexical.sums"], ["lexical.root"]),
        *unit_nodes(n, "lexical.root", "lexical."),
        n("MatMul", ["lexical.unit", "lexical.rotation"], ["lexical.rotated"]),
        n("Mul", ["lexical.rotated", "lexical.scale"], ["lexical.vector"]),
        n("Shape", ["input_ids"], ["lexical.ids_shape"]),
        n("Concat", ["lexical.ids_shape", "lexical.width"], ["lexical.tokens_shape"], axis=0),
        n("Expand", ["lexical.vector", "lexical.tokens_shape"], ["lexical.tokens"]),
        n("Concat", ["lexical.dense", "lexical.tokens"], [OUTPUT], axis=-1),
    ])
    del g.value_info[:]
    for output in g.output:
        dims = output.type.tensor_type.shape.dim
        if len(dims) == 3:
            dims[2].Clear()
            dims[2].dim_param = "hidden"


def unit_nodes(n, x, prefix):
    """x / max(|x|, eps) over the last axis, as nodes whose outputs are named prefix + squares,
    norm2, norm_raw, norm and unit."""
    return [
        n("Mul", [x, x], [prefix + "squares"]),
        n("ReduceSum", [prefix + "squares", "lexical.axis_last"], [prefix + "norm2"], keepdims=1),
        n("Sqrt", [prefix + "norm2"], [prefix + "norm_raw"]),
        n("Max", [prefix + "norm_raw", "lexical.eps"], [prefix + "norm"]),
        n("Div", [x, prefix + "norm"], [prefix + "unit"]),
    ]


def parse_weights(text):
    try:
        wt, ws, wl = (float(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"--weights wants three numbers 'transformer,static,lexical' (e.g. 0.25,0.55,0.20), got {text!r}")
    if min(wt, ws, wl) < 0 or abs(wt + ws + wl - 1) > 1e-6:
        raise SystemExit(f"--weights must be three non-negative shares that sum to 1, got {text!r}")
    return wt, ws, wl


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hybrid", "--model", dest="folder", required=True,
                   help="hybrid (model/export_hybrid.py) or static (model/export_static.py) model folder, rewritten in place")
    p.add_argument("--data", required=True, help="the legal-pairs folder (idf from its training split)")
    p.add_argument("--buckets", type=int, default=384, help="width of the lexical part (default 384)")
    p.add_argument("--weights", help="shares transformer,static,lexical (default: hybrid 0.25,0.55,0.20; static 0,0.65,0.35)")
    p.add_argument("--parity", help="a hybrid's parity fixture: scaled heads/tails and the lexical part, in place")
    p.add_argument("--seed", type=int, default=0, help="seed of the rotation (default 0)")
    p.add_argument("--id", help="the new model id (default: the folder's id + '-lexical'): its vectors differ")
    args = p.parse_args()
    import onnx
    from evaluate import load_tokenizer
    if args.buckets < 8:
        raise SystemExit(f"--buckets must be at least 8, got {args.buckets}")

    def read_json(name):
        with open(os.path.join(args.folder, name)) as f:
            return json.load(f)

    def write_json(name, value):
        with open(os.path.join(args.folder, name), "w") as f:
            json.dump(value, f, indent=2, default=str)
            f.write("\n")

    training, settings, config = read_json("training.json"), read_json("lexembed.json"), read_json("config.json")
    static = config.get("num_hidden_layers", 0) == 0
    record = training if static else training["hybrid"]  # where the folder's mix is written down
    if "lexical" in record:
        raise SystemExit(f"{args.folder} already has a lexical part ({record['lexical']['buckets']} buckets); "
                         "start from a folder of model/export_hybrid.py, rebuild_hybrid.py or export_static.py")
    if args.parity and static:
        raise SystemExit("--parity rewrites a hybrid's fixture; a static model has none (model/evaluate.py scores it)")
    wt, ws, wl = parse_weights(args.weights or ("0,0.65,0.35" if static else "0.25,0.55,0.20"))
    if static and wt:
        raise SystemExit(f"{args.folder} is a static model (no transformer part): --weights must start with 0, e.g. 0,0.65,0.35")
    width = config["hidden_size"]
    if static:
        split, part_scale = 0, np.full(width, math.sqrt(ws))
    else:
        old_w, split = record["weight"], record["transformer_dims"]
        part_scale = np.concatenate([np.full(split, math.sqrt(wt / old_w)), np.full(width - split, math.sqrt(ws / (1 - old_w)))])
    tok = load_tokenizer(args.folder)
    max_tokens = settings["max_input_tokens"]
    weight, idf, texts = piece_weights(tok, args.data, max_tokens)
    bucket = balanced_buckets(idf, args.buckets)
    rotate = rotation(args.buckets, args.seed)

    graph_path = os.path.join(args.folder, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    add_to_graph(graph_model, bucket, weight, rotate, part_scale, math.sqrt(wl), normalise_dense=static)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)

    config["hidden_size"] = width + args.buckets
    write_json("config.json", config)
    settings["dimensions"]["default"] = settings["dimensions"]["max"] = config["hidden_size"]
    settings["id"] = args.id or f"{settings.get('id', settings['name'])}-lexical"
    parts = ("Static legal embedding model trained by lexembed (model/train_static.py)" if static else
             "Hybrid legal embedding model trained by lexembed: a 4-layer transformer (model/train_transformer.py), "
             "the static model (model/train_static.py)")
    shares = f"{ws}/{wl}" if static else f"{wt}/{ws}/{wl}"
    settings["description"] = (f"{parts} and a lexical part of {args.buckets} idf-weighted word-piece buckets "
                               f"(model/add_lexical.py), {shares} of the score (chosen on the dev set of legal questions).")
    write_json("lexembed.json", settings)
    record["weights"] = {"transformer": wt, "static": ws, "lexical": wl}
    record["lexical"] = {"buckets": args.buckets, "assignment": "idf rank modulo buckets", "idf_texts": texts,
                         "rotation": f"random orthogonal, numpy default_rng({args.seed}) Gaussian → QR",
                         "idf_from": "legal-pairs training split (unique queries and documents)",
                         "added_by": "model/add_lexical.py"}
    write_json("training.json", training)
    print(f"{args.folder}: {width} + {args.buckets} lexical = {config['hidden_size']} dimensions, shares "
          f"{wt}/{ws}/{wl} ({os.path.getsize(graph_path) / 1e6:.1f} MB ONNX)")

    if args.parity:
        rewrite_parity(args.parity, tok, max_tokens, bucket, weight, rotate, part_scale, split, math.sqrt(wl))


def rewrite_parity(path, tok, max_tokens, bucket, weight, rotate, part_scale, split, lexical_scale):
    """The hybrid's fixture: dense head and static tail rescaled; the lexical part from the numpy
    recipe (not the graph)."""
    from parity_fixture import write_fixture
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    ids = [encode_capped(tok, c["text"], max_tokens) for c in fixture["cases"]]
    lexical = lexical_part(ids, bucket, weight, rotate) * lexical_scale
    for case, row in zip(fixture["cases"], lexical):
        case["vector_head"] = [round(x * part_scale[0], 6) for x in case["vector_head"]]
        case["static_tail"] = [round(x * part_scale[-1], 6) for x in case.pop("vector_tail")]
        case["vector_tail"] = [round(float(x), 6) for x in row[-8:]]
    fixture["layout"] = {"transformer": split, "static": len(part_scale) - split, "lexical": len(rotate)}
    fixture["about"] = ("Token ids, the first 8 components (transformer part), the last 8 of the static part and the "
                        "last 8 of the vector (the rotated lexical part), from the Python recipe (model/evaluate.py, "
                        "model/add_lexical.py) for models/legal-2-embedder; the served model must agree.")
    write_fixture(path, fixture)
    print(f"wrote {path}: {len(ids)} cases")


if __name__ == "__main__":
    main()
