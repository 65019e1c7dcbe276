"""Adds the lexical part (v2) to a hybrid or static legal-2-embedder folder: exact word-piece
matches weighted as BM25 weighs terms, hashed into ~1,152 signed buckets and computed inside the
ONNX graph, so a dense vector carries the keyword evidence the learned parts blur. The served
vector becomes

    v = [sqrt(wt)·t/|t| , sqrt(ws)·s/|s| , sqrt(wl)·l/|l|] · M      wt + ws + wl = 1

whose dot products are wt·cos_transformer + ws·cos_static + wl·cos_lexical (M is orthogonal: it
keeps every dot product). The shares depend on the text's length in word pieces (Shares): --weights
from 12 pieces up (questions, passages: dev set 0.2/0.2/0.6), --short-weights up to 4 (a heading or
a defined term, where the held-out split's headings are matched best by the dense parts:
0.4/0.6/0), linear between; a pair's score then weighs each part by sqrt(w_query · w_document). M starts as the identity; model/graph/matryoshka.py then orders it so every
listed prefix of the vector is a good vector of its own. The transformer and static parts are the
folder's own (only rescaled), so nothing is retrained.

The lexical part of one text (its word-piece ids after truncation, special tokens weighing 0):

    l[b] = Σ over the distinct pieces p with bucket(p) = b of  sign(p) · idf(p)^½ · sat(tf_p, L)
    sat(tf, L) = tf·(k1 + 1) / (tf + k1·(1 − b + b·L/avg_len))          k1 1.2, b 0.75

L: the text's word pieces, avg_len: their mean over the training texts. lexembed.json "sparse"
carries idf, k1, b and avg_len, so a server can also answer the unhashed weights as a sparse vector
(POST /v1/embeddings/sparse). A query's and a
document's weights multiply, so a matched piece scores idf·sat_query·sat_document: BM25's idf
once, its saturation and length norm on both sides. idf(p) = ln(1 + (N − df + 0.5)/(df + 0.5))
over the unique texts (queries and documents) of the legal-pairs training split: never the
held-out split, never the dev set. Buckets are dealt by idf rank modulo the bucket count (every
bucket gets pieces of every rarity) and each piece gets a random sign (seeded), so pieces that
share a bucket cancel on average instead of adding up.

Measured on the dev set (model/evaluate/dev.py), the lexical part alone: v1 (384 buckets of
sqrt(Σ idf²)) 0.440; v2 with 1,152 buckets 0.576; unhashed 0.616 (BM25 0.647).

The graph uses Gather, Equal, Cast, MatMul, ReduceSum, Div, Mul, Add, Sqrt, Max, Expand and Concat
(opset 14), so every runtime that serves the hybrid serves this; the term counts are an Equal over
the text's ids against themselves (L² comparisons, ~262k at 512 tokens).

    python3 -m model.graph.lexical --hybrid models/legal-2-embedder --data ../shared/data/legal-pairs \
        --buckets 1152 --weights 0.2,0.2,0.6 --replace
    python3 -m model.graph.lexical --model models/legal-2-embedder-static --data ../shared/data/legal-pairs \
        --buckets 1152 --weights 0,0.3,0.7 --replace

A static folder (model/export/static.py: masked token vectors out of the graph) gets its summed vector
normalised inside the graph first. --replace strips a lexical part an earlier version added (v1
or v2) before adding this one. Weights and bucket count were chosen on the dev set; see the model
card. The folder is rewritten in place.
"""
import argparse
import base64
import hashlib
import math
import os

import numpy as np

from model.common.folder import need, read_json, write_json
from model.graph.lexical_graph import add_to_graph, strip_lexical
from model.rules.bm25 import B, IDF_POWER, K1, Shares, balanced_buckets, piece_statistics, signed_weights
from model.sparse.stem_classes import classes_record, stem_classes

RECIPE = "bm25-pieces-v2"
STEM_RECIPE = "bm25-stem-classes-v3"  # --stems: whole-word pieces counted by Snowball stem class
STEP = "model.graph.lexical"
# The name the folders' records give this step (training.json "added_by", the description): the
# script's path before issue 68 moved it, kept so a rebuild stays byte-identical to what ships.
RECORDED_AS = "model/add_lexical.py"


def read_term_weights(path, idf, canonical=None):
    """The learned weight per piece (model/train/term_weights.py's .npz), checked against this
    vocabulary's idf (the run's idf must be the one this folder's pieces get) and stem classes."""
    saved = np.load(path)
    weight = saved["weight"].astype(np.float64)
    if weight.shape != idf.shape or not np.allclose(saved["idf"], idf):
        raise SystemExit(f"{path} was learned for another vocabulary or training split "
                         f"({weight.shape[0]} pieces; this folder has {idf.shape[0]}): run model/train/term_weights.py for it")
    learned_classes = saved["canonical"] if "canonical" in saved.files else None
    if (learned_classes is None) != (canonical is None) or (canonical is not None and not np.array_equal(learned_classes, canonical)):
        raise SystemExit(f"{path} was learned {'with' if learned_classes is not None else 'without'} stem classes and this run is "
                         f"{'with' if canonical is not None else 'without'} them: pass --stems to both scripts or to neither")
    if not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise SystemExit(f"{path} holds negative or non-finite weights")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return weight, int(saved["step"]), digest


def parse_weights(text):
    try:
        wt, ws, wl = (float(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"--weights wants three numbers 'transformer,static,lexical' (e.g. 0.2,0.2,0.6), got {text!r}")
    if min(wt, ws, wl) < 0 or abs(wt + ws + wl - 1) > 1e-6:
        raise SystemExit(f"--weights must be three non-negative shares that sum to 1, got {text!r}")
    return wt, ws, wl


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hybrid", "--model", dest="folder", required=True,
                   help="hybrid (model.export.hybrid) or static (model.export.static) model folder, rewritten in place")
    p.add_argument("--data", required=True, help="the legal-pairs folder (idf from its training split)")
    p.add_argument("--buckets", type=int, default=1152, help="width of the lexical part (default 1152)")
    p.add_argument("--weights", help="shares transformer,static,lexical (default: hybrid 0.2,0.2,0.6; static 0,0.3,0.7)")
    p.add_argument("--short-weights", help="shares for texts of at most the short length (default: hybrid 0.4,0.6,0; static 0,1,0)")
    p.add_argument("--short-lengths", default="4,12", help="word pieces 'short,long': the short shares up to the first, --weights from the second, "
                   "linear between (default 4,12)")
    p.add_argument("--replace", action="store_true", help="strip a lexical part an earlier run added first")
    p.add_argument("--strip", action="store_true", help="only strip the lexical part (and Matryoshka rotation): the dense folder again, "
                   "e.g. before model.export.rebuild_hybrid swaps its static table")
    p.add_argument("--seed", type=int, default=0, help="seed of the pieces' signs (default 0)")
    p.add_argument("--term-weights", help="the pieces' weights learned by model.train.term_weights (.npz) in place of "
                   "idf^½ (the graph's table and lexembed.json's sparse table)")
    p.add_argument("--stems", action="store_true", help="count the whole-word pieces of one Snowball stem as one term "
                   "(model/sparse/stem_classes.py; the graph and the sparse table carry the classes)")
    p.add_argument("--id", help="the new model id (default: the folder's id with its lexical suffix replaced by '-lexical2')")
    args = p.parse_args()
    need(STEP, os.path.join(args.folder, "onnx", "model.onnx"), "folder")
    if not args.strip:
        need(STEP, args.data, "pairs")
        need(STEP, args.term_weights, "term-weights")
    if args.buckets < 8:
        raise SystemExit(f"--buckets must be at least 8, got {args.buckets}")
    return args


def main():
    args = parse_args()
    import onnx
    from model.common.tokenizer_files import load_tokenizer
    folder = args.folder
    training, settings, config = read_json(folder, "training.json"), read_json(folder, "lexembed.json"), read_json(folder, "config.json")
    static = config.get("num_hidden_layers", 0) == 0
    record = training if static else training["hybrid"]  # where the folder's mix is written down
    graph_path = os.path.join(folder, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    width = config["hidden_size"]
    if args.strip:
        return strip_folder(folder, graph_model, graph_path, training, record, settings, config)
    if "lexical" in record:
        if not args.replace:
            raise SystemExit(f"{folder} already has a lexical part ({record['lexical']['buckets']} buckets); "
                             "pass --replace to put this one in its place")
        strip_lexical(graph_model)
        width -= record["lexical"]["buckets"]
        record.pop("lexical")
        record.pop("matryoshka", None)
        record.pop("shares", None)
        record.pop("document_form", None)
        settings.pop("document_form", None)
    shares = parse_shares(args, static)
    wt, ws, wl = shares.long
    tok = load_tokenizer(folder)
    canonical = stem_classes(tok.ids) if args.stems else None
    idf, texts, avg_len = piece_statistics(tok, args.data, settings["max_input_tokens"], canonical=canonical)
    bucket = balanced_buckets(idf, args.buckets, canonical)
    learned = read_term_weights(args.term_weights, idf, canonical) if args.term_weights else None
    weight = signed_weights(idf, args.seed, None if learned is None else learned[0], canonical)
    recipe = RECIPE if canonical is None else STEM_RECIPE

    add_to_graph(graph_model, bucket, weight, avg_len, parts_of(record, static, width, args.buckets), shares, normalise_dense=static, canonical=canonical)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)

    config["hidden_size"] = width + args.buckets
    write_json(folder, "config.json", config)
    describe(settings, args, static, shares, config["hidden_size"])
    # The same table and rule, unhashed, for sparse vectors (POST /v1/embeddings/sparse, src/embedder/sparse.ts)
    settings["sparse"] = {"recipe": recipe, "k1": K1, "b": B, "avg_len": avg_len,
                          "idf": base64.b64encode(idf.astype("<f4").tobytes()).decode("ascii")}
    if canonical is not None:  # a stem class is one index: its smallest piece
        settings["sparse"]["canonical"] = base64.b64encode(canonical.astype("<i4").tobytes()).decode("ascii")
    if learned is not None:  # the squared weight is what a matched piece scores (query weight × document weight)
        settings["sparse"]["weight"] = base64.b64encode(np.where(idf > 0, learned[0] ** 2, 0).astype("<f4").tobytes()).decode("ascii")
    write_json(folder, "lexembed.json", settings)
    record["weights"] = {"transformer": wt, "static": ws, "lexical": wl}
    record["shares"] = shares.record()
    record["lexical"] = {"recipe": recipe, "buckets": args.buckets, "k1": K1, "b": B, "idf_power": IDF_POWER,
                         "avg_len": round(avg_len, 3), "assignment": "idf rank modulo buckets, random signs" + ("" if canonical is None else " (per stem class)"),
                         "seed": args.seed, "idf_texts": texts,
                         "idf_from": "legal-pairs training split (unique queries and documents)",
                         "added_by": RECORDED_AS}
    if canonical is not None:
        record["lexical"]["stems"] = classes_record(canonical)
    if learned is not None:
        record["lexical"]["term_weights"] = {"file": os.path.basename(args.term_weights), "sha256": learned[2], "step": learned[1],
                                             "learned_by": "model/train_term_weights.py", "replaces": "idf^0.5"}  # recorded name (see RECORDED_AS)
    write_json(folder, "training.json", training)
    print(f"{folder}: {width} + {args.buckets} lexical = {config['hidden_size']} dimensions, shares "
          f"{wt}/{ws}/{wl} ({os.path.getsize(graph_path) / 1e6:.1f} MB ONNX)")


def strip_folder(folder, graph_model, graph_path, training, record, settings, config):
    """--strip: the dense folder again (graph, config, lexembed.json and training.json)."""
    import onnx
    if "lexical" not in record:
        raise SystemExit(f"{folder} has no lexical part to strip")
    strip_lexical(graph_model)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)
    width = config["hidden_size"] - record.pop("lexical")["buckets"]
    record.pop("matryoshka", None)
    record.pop("weights", None)
    record.pop("shares", None)
    record.pop("document_form", None)  # model/graph/document_form.py's nodes went with the lexical part
    config["hidden_size"] = width
    write_json(folder, "config.json", config)
    settings["dimensions"] = {"default": width, "max": width}
    settings["pooling"] = "mean"
    settings.pop("sparse", None)
    settings.pop("document_form", None)
    write_json(folder, "lexembed.json", settings)
    write_json(folder, "training.json", training)
    print(f"{folder}: lexical part stripped, {width} dimensions")


def parse_shares(args, static):
    """The Shares of --weights, --short-weights and --short-lengths (a static folder's defaults without a transformer share)."""
    long = parse_weights(args.weights or ("0,0.3,0.7" if static else "0.2,0.2,0.6"))
    short = parse_weights(args.short_weights or ("0,1,0" if static else "0.4,0.6,0"))
    for name, (first, *_) in (("--weights", long), ("--short-weights", short)):
        if static and first:
            raise SystemExit(f"{args.folder} is a static model (no transformer part): {name} must start with 0, e.g. 0,0.3,0.7")
    try:
        lengths = tuple(int(x) for x in args.short_lengths.split(","))
    except ValueError:
        raise SystemExit(f"--short-lengths wants two piece counts 'short,long' (e.g. 4,12), got {args.short_lengths!r}")
    return Shares(long, short, lengths)


def parts_of(record, static, width, buckets):
    """Each share's square root onto its components (3 × width + buckets), undoing the share the dense graph applied."""
    parts = np.zeros((3, width + buckets))
    if static:
        parts[1, :width] = 1.0  # the static sum is made a unit vector in the graph
    else:
        old_w, split = record["weight"], record["transformer_dims"]
        parts[0, :split] = 1 / math.sqrt(old_w)
        parts[1, split:width] = 1 / math.sqrt(1 - old_w)
    parts[2, width:] = 1.0
    return parts


def describe(settings, args, static, shares, width):
    """lexembed.json's dimensions, pooling, id and description for the folder with its lexical part."""
    settings["dimensions"]["default"] = settings["dimensions"]["max"] = width
    # Every token's row is the text's vector (computed once, expanded): the first row is the mean,
    # and reading one row costs the server less than averaging all of them.
    settings["pooling"] = "cls"
    settings["dimensions"].pop("matryoshka", None)  # model/graph/matryoshka.py lists the prefixes it orders
    base = settings.get("id", settings["name"])
    for suffix in ("-lexical2", "-lexical"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    settings["id"] = args.id or f"{base}-lexical2"
    (wt, ws, wl), short, lengths = shares.long, shares.short, shares.lengths
    # The description names the scripts by the paths the shipped folders record (see RECORDED_AS).
    parts = ("Static legal embedding model trained by lexembed (model/train_static.py)" if static else
             "Hybrid legal embedding model trained by lexembed: a 4-layer transformer (model/train_transformer.py), "
             "the static model (model/train_static.py)")
    described = f"{ws}/{wl}" if static else f"{wt}/{ws}/{wl}"
    shorter = "/".join(str(x) for x in (short[1:] if static else short))
    settings["description"] = (f"{parts} and a lexical part of {args.buckets} BM25-weighted word-piece buckets "
                               f"({RECORDED_AS}), {described} of the score ({shorter} for texts of at most {lengths[0]} "
                               f"word pieces, rising to it at {lengths[1]}; chosen on the dev set of legal questions and the held-out split).")


if __name__ == "__main__":
    main()
