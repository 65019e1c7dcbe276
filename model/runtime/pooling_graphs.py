#!/usr/bin/env python3
"""Prints the two pooling graphs of src/node/runtime/device-pooling.ts as base64 (numpy + onnx).

On onnxruntime-node's WebGPU provider the model's last_hidden_state stays in GPU memory and one of
these small graphs pools it there, so only [batch, hidden] floats are read back (not [batch,
tokens, hidden]) and JavaScript does not loop over them:

    mean: hidden [B, T, H] float, mask [B, T] float (1 = token, 0 = padding) -> pooled [B, H]
          = sum over T of hidden * mask / sum over T of mask
    cls:  hidden [B, T, H] -> pooled [B, H] = hidden[:, 0, :]   (mask unused, kept for one signature)

    /usr/bin/python3 -m model.runtime.pooling_graphs        # the constants device-pooling.ts holds
"""
import base64
import json

import onnx
from onnx import TensorProto as T, helper


def graph(name, nodes, initializers):
    inputs = [helper.make_tensor_value_info('hidden', T.FLOAT, ['batch', 'tokens', 'hidden_size']),
              helper.make_tensor_value_info('mask', T.FLOAT, ['batch', 'tokens'])]
    outputs = [helper.make_tensor_value_info('pooled', T.FLOAT, ['batch', 'hidden_size'])]
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, initializer=initializers),
                              opset_imports=[helper.make_opsetid('', 13)], producer_name='lexembed')
    model.ir_version = 7
    onnx.checker.check_model(model)
    return base64.b64encode(model.SerializeToString()).decode('ascii')


def main():
    axis = lambda name, value: helper.make_tensor(name, T.INT64, [1], [value])
    mean = graph('lexembed_mean_pool', [
        helper.make_node('Unsqueeze', ['mask', 'axis2'], ['mask3']),
        helper.make_node('Mul', ['hidden', 'mask3'], ['masked']),
        helper.make_node('ReduceSum', ['masked', 'axis1'], ['summed'], keepdims=0),
        helper.make_node('ReduceSum', ['mask', 'axis1'], ['count'], keepdims=1),
        helper.make_node('Div', ['summed', 'count'], ['pooled']),
    ], [axis('axis1', 1), axis('axis2', 2)])
    cls = graph('lexembed_cls_pool', [
        helper.make_node('Gather', ['hidden', 'first'], ['pooled'], axis=1),
        helper.make_node('Identity', ['mask'], ['unused']),
    ], [helper.make_tensor('first', T.INT64, [], [0])])
    print(json.dumps({'mean': mean, 'cls': cls}, indent=2))


if __name__ == '__main__':
    main()
