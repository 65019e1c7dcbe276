"""Gives a hybrid folder with a lexical part (model/graph/lexical.py) and a Matryoshka rotation
(model/graph/matryoshka.py) a *document form*: what `task: retrieval/document` serves at full width.

A query's vector stays as it was (every part a unit vector, weighed by its share). A document's
lexical part is no longer made a unit vector: it keeps its length relative to a typical document's,

    g = min(|l_raw| / c, g_max)       l_raw: the document's hashed, BM25-weighted pieces
    d = [sqrt(wt)·t, sqrt(ws)·s, sqrt(wl)·g·l] · M

so a query · document product weighs the lexical match as BM25 does (idf × saturated tf, with
BM25's own length norm, not a cosine's second one). Measured on the dev set (issue 54): the
lexical part alone 0.626 as a cosine, 0.654 as such a product (BM25 0.647). To keep every served
vector a unit vector (cosine, dot product and L2 then rank alike, which stores need), the last
component of M's output becomes a slack component: for documents sqrt(Mx² − |d'|²) with
Mx² = 1 + max(wl)·(g_max² − 1) the largest |d|² can be, the whole divided by Mx; for queries 0.
A query's slack is 0, so query · document = (q' · d') / Mx: the product above less the last
rotated component, a constant factor for every document (the last of M's 1,792 components carries
1/768 of the last prefix block; dropping it scored 0.6529 against 0.6524).

Last, the vector's last 64 components (inside the last Matryoshka block, so no listed prefix
changes) are turned by a normalised 64 × 64 Hadamard matrix in both forms: dot products stay, and
the slack lands as ±slack/8 on each of them, so `output_dtype` int8's fixed scale (round(x·16√d))
never clips it (at most 0.125 · 677 = 85) and binary loses 64 of 1,792 bits to it, not the norm.

Which form a text gets is asked for in its ids: the embedder puts the marker piece (`[unused1]`)
in place of `[CLS]` (lexembed.json "document_form"), and the graph, seeing it at position 0, puts
`[CLS]` back before anything reads the ids and serves the document form. So the graph keeps the
inputs and the output every runtime feeds (no new input, batching and pooling unchanged), a text
without the marker gets the query form, and an older embedder that never sends the marker gets
query vectors everywhere (what v4.2 served). The embedder asks for it only at full width: a
Matryoshka prefix of the document form scores lower than the query form's (prefixes are the query
form for both sides, as before).

    python3 -m model.graph.document_form --model FOLDER --data ../shared/data/legal-pairs [--k1 0.75 --b 0.5]

c is the median |l_raw| of 20,000 training documents (seeded sample; never the dev set), g_max 2
(0.1 % of training documents reach 1.73 × c). --k1/--b set the lexical part's BM25 constants in
the graph first (both forms; the sparse route keeps its own in lexembed.json "sparse").
"""
import argparse
import math
import os
import random

import numpy as np

from model.common.folder import need, read_json, write_json
from model.common.legal_data import encode_capped, split_pairs
from model.rules.bm25 import B, K1, graph_constants, raw_norms
from model.rules.document_form import MARKER, SPREAD, hadamard, max_norm2
from model.rules.tables import OUTPUT, read_canonical, read_tables

RECIPE = "lexical-norm-slack-v1"
STEP = "model.graph.document_form"
PREFIX = "lexical.document."


def set_bm25(graph, k1, b, avg_len):
    """The lexical part's k1 and b (initializers k1_plus_1, k1_fixed, k1_per_length)."""
    from onnx import numpy_helper
    values = graph_constants(k1, b, avg_len)
    for t in graph.initializer:
        if t.name in values:
            t.CopyFrom(numpy_helper.from_array(np.array(values[t.name], dtype=np.float32), t.name))


def add_document_form(graph_model, marker, cls, c, g_max, max_lexical_share):
    """Appends the document form to a graph whose lexical part model/graph/lexical.py wrote (see the module
    docstring); the query form's last component becomes 0."""
    from onnx import TensorProto, helper, numpy_helper
    g = graph_model.graph
    names = {t.name for t in g.initializer}
    if PREFIX + "c" in names:
        raise SystemExit("the graph has a document form already")
    if not {"lexical.norm_raw", "matryoshka.vector"} <= {o for n in g.node for o in n.output}:
        raise SystemExit("the graph has no lexical part with a Matryoshka rotation (model/graph/lexical.py, model/graph/matryoshka.py)")
    width = next(numpy_helper.to_array(t) for t in g.initializer if t.name == "matryoshka.rotation").shape[0]
    m_x = math.sqrt(max_norm2(max_lexical_share, g_max))
    inits = {
        "marker": np.array(marker, dtype=np.int64), "cls": np.array(cls, dtype=np.int64),
        "c": np.array(c, dtype=np.float32), "g_max": np.array(g_max, dtype=np.float32),
        "m_x": np.array(m_x, dtype=np.float32), "m_x2": np.array(m_x * m_x, dtype=np.float32),
        "zero": np.array(0.0, dtype=np.float32),
        "start0": np.array([0], dtype=np.int64), "start1": np.array([1], dtype=np.int64),
        "end_all": np.array([np.iinfo(np.int64).max], dtype=np.int64), "axis1": np.array([1], dtype=np.int64),
        "axis_last": np.array([-1], dtype=np.int64), "head_end": np.array([width - 1], dtype=np.int64),
        "axis2": np.array([2], dtype=np.int64),
        "spread_start": np.array([width - SPREAD], dtype=np.int64), "hadamard": hadamard(SPREAD).astype(np.float32),
    }
    g.initializer.extend(numpy_helper.from_array(v, PREFIX + k) for k, v in inits.items())
    p = lambda name: PREFIX + name
    for node in g.node:  # everything that read the ids reads them with [CLS] back in place
        for k, name in enumerate(node.input):
            if name == "input_ids":
                node.input[k] = p("input_ids")
    n = helper.make_node
    expand = next(x for x in g.node if OUTPUT in x.output)
    expand.input[list(expand.input).index("matryoshka.vector")] = p("vector")
    # the marker at position 0 asks for the document form; [CLS] goes back in its place. These read
    # the graph's input only, so they go first; the rest reads the lexical part and goes last,
    # with the output's Expand moved after it (the nodes stay in topological order).
    repair = [
        n("Slice", ["input_ids", p("start0"), p("start1"), p("axis1")], [p("first")]),  # B×1
        n("Equal", [p("first"), p("marker")], [p("is_document_bool")]),
        n("Where", [p("is_document_bool"), p("cls"), p("first")], [p("first_clean")]),
        n("Slice", ["input_ids", p("start1"), p("end_all"), p("axis1")], [p("rest")]),
        n("Concat", [p("first_clean"), p("rest")], [p("input_ids")], axis=1),
        n("Cast", [p("is_document_bool")], [p("is_document")], to=TensorProto.FLOAT),
        n("Unsqueeze", [p("is_document"), p("axis2")], [p("is_document3")]),  # B×1×1
    ]
    form = [
        # g = min(|l_raw| / c, g_max); the document's parts with the lexical one times g, turned by M
        n("Div", ["lexical.norm_raw", p("c")], [p("g_raw")]),
        n("Min", [p("g_raw"), p("g_max")], [p("g")]),
        n("Mul", ["lexical.unit", p("g")], [p("lexical")]),
        n("Concat", ["lexical.dense", p("lexical")], [p("joined")], axis=-1),
        n("Mul", [p("joined"), "lexical.scales"], [p("parts")]),
        n("MatMul", [p("parts"), "matryoshka.rotation"], [p("turned")]),
        # the last component: a slack that makes every document's norm Mx (then ÷ Mx); 0 for a query
        n("Slice", [p("turned"), p("start0"), p("head_end"), p("axis_last")], [p("head")]),
        n("Mul", [p("head"), p("head")], [p("head_squares")]),
        n("ReduceSum", [p("head_squares"), p("axis_last")], [p("head_norm2")], keepdims=1),
        n("Sub", [p("m_x2"), p("head_norm2")], [p("room")]),
        n("Max", [p("room"), p("zero")], [p("room_kept")]),
        n("Sqrt", [p("room_kept")], [p("slack")]),
        n("Concat", [p("head"), p("slack")], [p("document_full")], axis=-1),
        n("Div", [p("document_full"), p("m_x")], [p("document")]),
        n("Slice", ["matryoshka.vector", p("start0"), p("head_end"), p("axis_last")], [p("query_head")]),
        n("Mul", [p("slack"), p("zero")], [p("query_slack")]),
        n("Concat", [p("query_head"), p("query_slack")], [p("query")], axis=-1),
        # query + is_document · (document − query)
        n("Sub", [p("document"), p("query")], [p("difference")]),
        n("Mul", [p("difference"), p("is_document3")], [p("shift")]),
        n("Add", [p("query"), p("shift")], [p("chosen")]),
        # the last SPREAD components turned by a normalised Hadamard matrix: the slack lands as
        # ±slack/√SPREAD on each of them, so output_dtype int8's fixed scale never clips it
        n("Slice", [p("chosen"), p("start0"), p("spread_start"), p("axis_last")], [p("kept")]),
        n("Slice", [p("chosen"), p("spread_start"), p("end_all"), p("axis_last")], [p("tail")]),
        n("MatMul", [p("tail"), p("hadamard")], [p("tail_spread")]),
        n("Concat", [p("kept"), p("tail_spread")], [p("vector")], axis=-1),
    ]
    nodes = [x for x in g.node if x is not expand]
    del g.node[:]
    g.node.extend(repair + nodes + form + [expand])
    return m_x


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="hybrid folder with a lexical part and a Matryoshka rotation, rewritten in place")
    p.add_argument("--data", required=True, help="the legal-pairs folder (c from its training split's documents)")
    p.add_argument("--k1", type=float, help="the lexical part's BM25 k1 (default: keep the folder's)")
    p.add_argument("--b", type=float, help="the lexical part's BM25 b (default: keep the folder's)")
    p.add_argument("--g-max", type=float, default=2.0, help="the largest g (default 2)")
    p.add_argument("--sample", type=int, default=20000, help="training documents c is the median over (default 20000)")
    p.add_argument("--id", help="the new model id (default: keep the folder's)")
    args = p.parse_args()
    import onnx
    from model.common.tokenizer_files import load_tokenizer
    folder = need(STEP, args.model, "folder")
    need(STEP, args.data, "pairs")
    training, settings = read_json(folder, "training.json"), read_json(folder, "lexembed.json")
    record = training.get("hybrid", training)
    if "lexical" not in record or "matryoshka" not in record:
        raise SystemExit(f"{STEP}: {folder} has no lexical part with a Matryoshka rotation; it is made by "
                         "python3 -m model.graph.lexical (step 4c), then python3 -m model.graph.matryoshka (step 4e)")
    tables = read_tables(folder)
    bucket, weight, avg_len, _ = tables
    k1 = args.k1 if args.k1 is not None else record["lexical"].get("k1", K1)
    b = args.b if args.b is not None else record["lexical"].get("b", B)
    if not (k1 > 0 and 0 <= b <= 1):
        raise SystemExit(f"--k1 must be > 0 and --b within [0, 1], got {k1}, {b}")
    tok = load_tokenizer(folder)
    vocab = {piece: k for k, piece in enumerate(tok.vocab)}
    if MARKER not in vocab or "[CLS]" not in vocab:
        raise SystemExit(f"{folder}'s vocabulary has no {MARKER} or [CLS]")
    train, _ = split_pairs(args.data)
    texts = sorted({t for _, _, t, _ in train})
    random.Random(0).shuffle(texts)
    ids = [encode_capped(tok, t, settings["max_input_tokens"]) for t in texts[: args.sample]]
    norms = raw_norms(ids, bucket, weight, avg_len, k1, b, read_canonical(folder))
    c = float(np.median(norms))
    shares = record["shares"]
    max_lexical = max(shares["long"][2], shares["short"][2])
    graph_path = os.path.join(folder, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    set_bm25(graph_model.graph, k1, b, avg_len)
    m_x = add_document_form(graph_model, vocab[MARKER], vocab["[CLS]"], c, args.g_max, max_lexical)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)
    record["lexical"]["k1"], record["lexical"]["b"] = k1, b
    record["document_form"] = {
        "recipe": RECIPE, "c": round(c, 4), "g_max": args.g_max, "m_x": round(m_x, 6), "marker": MARKER,
        "c_from": f"median |l_raw| of {len(ids)} legal-pairs training-split documents (seeded sample)",
        "g_percentiles_50_90_99_999_max": [round(float(x), 3) for x in np.percentile(norms / c, [50, 90, 99, 99.9, 100])],
        "slack_spread": f"the last {SPREAD} components × a {SPREAD}×{SPREAD} normalised Hadamard matrix (both forms)",
        "added_by": "model/document_form.py"}  # the path the shipped records name (before issue 68)
    settings["document_form"] = {"marker": vocab[MARKER], "replaces": vocab["[CLS]"], "full_width_only": True}
    if args.id:
        settings["id"] = args.id
    write_json(folder, "training.json", training)
    write_json(folder, "lexembed.json", settings)
    print(f"{folder}: document form added (k1 {k1}, b {b}, c {c:.3f}, g_max {args.g_max}, Mx {m_x:.4f}; "
          f"g at the 99.9th percentile {np.percentile(norms / c, 99.9):.2f})")


if __name__ == "__main__":
    main()
