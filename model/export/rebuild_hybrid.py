"""Rebuilds the hybrid legal-2-embedder on a new static model without the transformer's checkpoint:
the hybrid folder's ONNX graph keeps its transformer, its lexical part (model/graph/lexical.py) if it
has one, and its weighting, and its static token table
(int8 rows + scales, `static.weight_*`) is replaced by the new static model's. Both must share the
tokenizer. The served vector stays

    v = [sqrt(w) * t / |t| , sqrt(1 - w) * s / |s|]

so the transformer part of every vector is unchanged and the static part is the new model's
normalised sum of token vectors, times sqrt(1 - w). The parity fixture's static tail is recomputed
from the new table in numpy (the recipe's arithmetic, not the graph), so the served model is
checked against the recipe, not against itself.

    /usr/bin/python3 -m model.export.rebuild_hybrid --hybrid models/legal-2-embedder \
        --static models/legal-2-embedder-static --parity tests/fixtures/legal-model-parity.json
"""
import argparse
import json
import math
import os

import onnx
from onnx import numpy_helper

from model.common.folder import needs
from model.common.tokenizer_files import load_tokenizer
from model.evaluate.served import embed, load_static_model
from model.export.parity_fixture import write_fixture

STATIC = "static.weight"


def replace_static_table(graph_model, table_int8, row_scale):
    by_name = {init.name: init for init in graph_model.graph.initializer}
    for suffix, value in (("_int8", table_int8), ("_row_scale", row_scale)):
        old = by_name.get(STATIC + suffix)
        if old is None:
            raise SystemExit(f"the hybrid graph has no initializer {STATIC + suffix}: not a model/export/hybrid.py folder")
        graph_model.graph.initializer.remove(old)
        graph_model.graph.initializer.append(numpy_helper.from_array(value, STATIC + suffix))
    # Shapes inferred at export (the concatenated width) are stale now; the runtime infers them.
    del graph_model.graph.value_info[:]
    for output in graph_model.graph.output:
        dims = output.type.tensor_type.shape.dim
        if len(dims) == 3:
            dims[2].Clear()
            dims[2].dim_param = "hidden"


def static_share(hybrid_dir):
    """The static part's share of the score: 1 − w, or after model/graph/lexical.py its own share."""
    with open(os.path.join(hybrid_dir, "training.json")) as f:
        hybrid = json.load(f)["hybrid"]
    return hybrid["weights"]["static"] if "lexical" in hybrid else 1.0 - hybrid["weight"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hybrid", required=True, help="hybrid model folder, rewritten in place")
    p.add_argument("--static", required=True, help="static model folder with the same tokenizer")
    p.add_argument("--parity", help="the hybrid's parity fixture: its static tails are recomputed in place")
    args = p.parse_args()
    needs("model.export.rebuild_hybrid", (args.hybrid, "hybrid"), (args.static, "static"), (args.parity, "parity"))

    hybrid_tok = load_tokenizer(args.hybrid)
    table, static_tok, max_tokens = load_static_model(args.static)
    if static_tok.vocab != hybrid_tok.vocab:
        raise SystemExit(f"{args.static} and {args.hybrid} have different vocabularies "
                         f"({len(static_tok.vocab)} vs {len(hybrid_tok.vocab)} pieces): train the static model "
                         f"with --tokenizer {args.hybrid}/tokenizer.json")
    graph_path = os.path.join(args.hybrid, "onnx", "model.onnx")
    graph_model = onnx.load(graph_path)
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(os.path.join(args.static, "onnx", "model.onnx")).graph.initializer}
    old_width = next(i for i in graph_model.graph.initializer if i.name == STATIC + "_int8").dims[1]
    if "lexical.part_scale" in {i.name for i in graph_model.graph.initializer} and init["table_int8"].shape[1] != old_width:
        raise SystemExit(f"{args.hybrid} has a lexical part scaled for a {old_width}-wide static part; {args.static} is "
                         f"{init['table_int8'].shape[1]} wide: rebuild from a hybrid without one, then run model/graph/lexical.py")
    replace_static_table(graph_model, init["table_int8"], init["row_scale"])
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, graph_path)

    width = table.shape[1]
    with open(os.path.join(args.hybrid, "config.json")) as f:
        config = json.load(f)
    config["hidden_size"] += width - old_width
    with open(os.path.join(args.hybrid, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(args.hybrid, "lexembed.json")) as f:
        settings = json.load(f)
    settings["dimensions"]["default"] = settings["dimensions"]["max"] = config["hidden_size"]
    with open(os.path.join(args.hybrid, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.hybrid, "training.json")) as f:
        training = json.load(f)
    with open(os.path.join(args.static, "training.json")) as f:
        training["static"] = json.load(f)
    training["hybrid"]["static"] = args.static
    training["hybrid"]["rebuilt_by"] = "model/rebuild_hybrid.py (static table replaced, transformer unchanged)"
    with open(os.path.join(args.hybrid, "training.json"), "w") as f:
        json.dump(training, f, indent=2, default=str)
    print(f"{args.hybrid}: static part {old_width} → {width} dimensions, {config['hidden_size']} in all "
          f"({os.path.getsize(graph_path) / 1e6:.1f} MB ONNX)")

    if args.parity:
        scale = math.sqrt(static_share(args.hybrid))
        with open(args.parity, encoding="utf-8") as f:
            fixture = json.load(f)
        # With a lexical part the static part's tail is its own field; without, the vector's tail.
        field = "static_tail" if "layout" in fixture else "vector_tail"
        vectors = embed(table, static_tok, [c["text"] for c in fixture["cases"]], max_tokens)
        for case, v in zip(fixture["cases"], vectors):
            case[field] = [round(float(x) * scale, 6) for x in v[-8:]]
        write_fixture(args.parity, fixture)
        print(f"wrote {args.parity}: static tails of {len(vectors)} cases")


if __name__ == "__main__":
    main()
