#!/usr/bin/env python3
"""Writes onnx/model_fp16.onnx beside a model folder's onnx/model.onnx: the same graph computing in
float16 (for WebGPU adapters with `shader-f16`; `lexembed serve --device webgpu` picks it up there).

Needs only numpy and onnx (Debian: python3-onnx, as /usr/bin/python3). What it does, in order:
every float32 initializer and Constant tensor becomes float16 (values clipped to +-65504, tiny
non-zero values kept at float16's smallest subnormal instead of flushed to zero), every
Cast(to=float) casts to float16, float32 graph inputs get a Cast to float16 after them and float32
graph outputs one back to float32 before them (the file keeps its float32 interface, so callers
need not change), and strict shape inference then proves every node's types agree. A graph it
cannot convert safely (subgraphs; float inputs into ops float16 does not suit) is refused with
the reason, never written half-converted.

    /usr/bin/python3 -m model.runtime.fp16 models/legal-2-embedder
    /usr/bin/python3 -m model.runtime.fp16 models/legal-2-embedder --out /tmp/model_fp16.onnx
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16
FP16_MAX = 65504.0
FP16_TINY = 5.960464477539063e-08  # the smallest positive float16 (subnormal)
# Ops whose float inputs float16 does not suit (coordinates, scales, accumulations); the graphs
# lexembed ships use none of them with float inputs.
REFUSED_WITH_FLOAT_INPUTS = {'Range', 'CumSum', 'Resize', 'Upsample', 'RoiAlign', 'TopK', 'NonMaxSuppression'}


def to_fp16_array(values):
    values = np.asarray(values, dtype=np.float32)
    clipped = np.clip(values, -FP16_MAX, FP16_MAX)
    tiny = (clipped != 0) & (np.abs(clipped) < FP16_TINY)
    clipped = np.where(tiny, np.sign(clipped) * FP16_TINY, clipped)
    return clipped.astype(np.float16)


def convert_tensor(tensor):
    """A float32 TensorProto as float16 (same name); other types unchanged."""
    if tensor.data_type != FLOAT:
        return tensor
    converted = numpy_helper.from_array(to_fp16_array(numpy_helper.to_array(tensor)), tensor.name)
    tensor.CopyFrom(converted)
    return tensor


def float_value_names(model):
    """Names of every float32 value, by shape inference on the original graph."""
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    names = set()
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        if info.type.tensor_type.elem_type == FLOAT:
            names.add(info.name)
    names.update(t.name for t in graph.initializer if t.data_type == FLOAT)
    return names


def convert(model):
    graph = model.graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.g.node or attribute.graphs:
                raise ValueError(f'node {node.name or node.op_type} ({node.op_type}) has a subgraph; model.runtime.fp16 converts flat graphs only')
    floats = float_value_names(model)
    for node in graph.node:
        if node.op_type in REFUSED_WITH_FLOAT_INPUTS and any(name in floats for name in node.input):
            raise ValueError(f'node {node.name or node.op_type} ({node.op_type}) takes float inputs, which float16 does not suit; not converted')

    for tensor in graph.initializer:
        convert_tensor(tensor)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                convert_tensor(attribute.t)
            elif attribute.type == onnx.AttributeProto.FLOATS and node.op_type == 'Constant' and attribute.name == 'value_floats':
                raise ValueError(f'Constant {node.name} uses value_floats; not converted')
        if node.op_type == 'Cast':
            for attribute in node.attribute:
                if attribute.name == 'to' and attribute.i == FLOAT:
                    attribute.i = FLOAT16

    # The float32 interface stays: inputs cast down after entry, outputs cast up before exit.
    added = []
    for graph_input in graph.input:
        if graph_input.type.tensor_type.elem_type != FLOAT or any(t.name == graph_input.name for t in graph.initializer):
            continue
        inner = graph_input.name + '_fp16'
        for node in graph.node:
            node.input[:] = [inner if name == graph_input.name else name for name in node.input]
        added.append((0, helper.make_node('Cast', [graph_input.name], [inner], to=FLOAT16, name=inner + '_cast')))
    for graph_output in graph.output:
        if graph_output.type.tensor_type.elem_type != FLOAT:
            continue
        inner = graph_output.name + '_fp16'
        for node in graph.node:
            node.output[:] = [inner if name == graph_output.name else name for name in node.output]
            node.input[:] = [inner if name == graph_output.name else name for name in node.input]
        added.append((len(graph.node), helper.make_node('Cast', [inner], [graph_output.name], to=FLOAT, name=graph_output.name + '_cast')))
    for position, node in sorted(added, key=lambda item: item[0], reverse=True):
        graph.node.insert(position, node)

    del graph.value_info[:]
    # Strict inference fails on any node whose input types disagree (a float32 left beside a float16).
    onnx.checker.check_model(model)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog='Writes MODEL_DIR/onnx/model_fp16.onnx unless --out is given.')
    parser.add_argument('model_dir', help='a model folder with onnx/model.onnx')
    parser.add_argument('--out', help='where to write the float16 model (default: MODEL_DIR/onnx/model_fp16.onnx)')
    args = parser.parse_args(argv)
    source = os.path.join(args.model_dir, 'onnx', 'model.onnx')
    if not os.path.exists(source):
        parser.error(f'{source} does not exist: MODEL_DIR must be a model folder (config.json, tokenizer.json, onnx/model.onnx)')
    out = args.out or os.path.join(args.model_dir, 'onnx', 'model_fp16.onnx')
    try:
        converted = convert(onnx.load(source))
    except (ValueError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        print(f'model.runtime.fp16: {source}: {error}', file=sys.stderr)
        return 1
    partial = out + '.partial'
    onnx.save(converted, partial)
    os.replace(partial, out)
    print(f'{out}: {os.path.getsize(out) / 2**20:.1f} MiB (from {os.path.getsize(source) / 2**20:.1f} MiB)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
