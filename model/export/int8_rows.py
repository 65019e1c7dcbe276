#!/usr/bin/env python3
"""Token tables stored as int8 rows with per-row scales, dequantised after the lookup: each
Gather(table, ids) of a table made by Cast(int8 rows)·Mul(row scales) becomes

    Gather(int8 rows, ids) -> Cast to float -> Mul by Gather(row scales, ids)

Cast·Mul on the whole table acted on initializers only, so onnxruntime folded it into a float32
table at session load: 4 bytes a value resident instead of 1 (the hybrid's two tables, 24 MB in
the file, took ~100 MB in every session; measured 158 → 25 MB of resident memory per session).
Done after the lookup, the same float(q) · scale is computed for the looked-up rows only, so the
vectors are bit-identical (tests/model/int8-rows.test.ts runs both graphs through onnxruntime).

    /usr/bin/python3 -m model.export.int8_rows models/legal-2-embedder models/legal-2-embedder-static
    /usr/bin/python3 -m model.export.int8_rows --check models/legal-2-embedder   # exit 1 if a table would fold

model/export/static.py and model/export/hybrid.py write their graphs this way; this rewrites a
folder written before. Needs only onnx (Debian: python3-onnx, as /usr/bin/python3).
"""
import argparse
import os
import sys

import onnx
from onnx import TensorProto, helper


def folded_int8_tables(graph):
    """[(cast, mul, scale name)] for each Cast(int8 initializer)·Mul(float initializer) in `graph`."""
    inits = {i.name: i for i in graph.initializer}
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    found = []
    for cast in graph.node:
        source = inits.get(cast.input[0]) if cast.op_type == "Cast" and cast.input else None
        if source is None or source.data_type != TensorProto.INT8:
            continue
        users = consumers.get(cast.output[0], [])
        if len(users) != 1 or users[0].op_type != "Mul":
            continue
        mul = users[0]
        scale = next((x for x in mul.input if x != cast.output[0]), None)
        if scale in inits and inits[scale].data_type == TensorProto.FLOAT:
            found.append((cast, mul, scale))
    return found


def gather_int8_rows(graph_model):
    """Rewrites every int8 token table of `graph_model` (in place) to be dequantised after its
    Gathers. Returns the rewritten tables' names. A table used other than by axis-0 Gathers is
    refused with the reason, the graph left as it was."""
    graph = graph_model.graph
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    plan = []
    for cast, mul, scale in folded_int8_tables(graph):
        table = mul.output[0]
        if any(o.name == table for o in graph.output):
            raise ValueError(f"{table} is a graph output; only tables that are looked up can be rewritten")
        users = consumers.get(table, [])
        for user in users:
            axis = next((a.i for a in user.attribute if a.name == "axis"), 0)
            if user.op_type != "Gather" or user.input[0] != table or axis != 0:
                raise ValueError(f"{table} is used by {user.op_type} {user.name or ''}, not only looked up by Gather on axis 0; not rewritten")
        plan.append((cast, mul, scale, users))
    for cast, mul, scale, users in plan:
        rows = cast.input[0]
        to = next(a.i for a in cast.attribute if a.name == "to")
        for k, gather in enumerate(users):
            ids, out = gather.input[1], gather.output[0]
            stem = f"{mul.output[0]}.rows{k}"
            nodes = [helper.make_node("Gather", [rows, ids], [stem + "_int8"], axis=0, name=stem + "/Gather"),
                     helper.make_node("Gather", [scale, ids], [stem + "_scale"], axis=0, name=stem + "/GatherScale"),
                     helper.make_node("Cast", [stem + "_int8"], [stem + "_float"], to=to, name=stem + "/Cast"),
                     helper.make_node("Mul", [stem + "_float", stem + "_scale"], [out], name=stem + "/Mul")]
            at = list(graph.node).index(gather)
            graph.node.remove(gather)
            for j, node in enumerate(nodes):
                graph.node.insert(at + j, node)
        graph.node.remove(cast)
        graph.node.remove(mul)
    return [mul.output[0] for _, mul, _, _ in plan]


def main(argv=None):
    p = argparse.ArgumentParser(description="Dequantise a model folder's int8 token tables after their lookup "
                                            "(rewrites onnx/model.onnx in place; the vectors stay bit-identical).")
    p.add_argument("folders", nargs="+", help="model folders (each with onnx/model.onnx)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a folder has a table onnxruntime would fold to float")
    args = p.parse_args(argv)
    status = 0
    for folder in args.folders:
        path = os.path.join(folder, "onnx", "model.onnx")
        if not os.path.exists(path):
            print(f"{folder}: no onnx/model.onnx", file=sys.stderr)
            return 2
        graph_model = onnx.load(path)
        if args.check:
            tables = [mul.output[0] for _, mul, _ in folded_int8_tables(graph_model.graph)]
            print(f"{folder}: {'folds ' + ', '.join(tables) + ' to float at load' if tables else 'no int8 table folds to float at load'}")
            status = status or (1 if tables else 0)
            continue
        try:
            tables = gather_int8_rows(graph_model)
        except ValueError as error:
            print(f"{folder}: {error}", file=sys.stderr)
            return 1
        if not tables:
            print(f"{folder}: nothing to do (no int8 table folds to float at load)")
            continue
        onnx.checker.check_model(graph_model)
        onnx.save(graph_model, path)
        print(f"{folder}: {', '.join(tables)} now dequantised after the lookup")
    return status


if __name__ == "__main__":
    sys.exit(main())
