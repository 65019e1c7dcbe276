// model/export/int8_rows.py: int8 token tables dequantised after the lookup, not folded to a float table
// at session load. The shipped graphs are written that way; a graph written the old way is
// rewritten with bit-identical outputs through onnxruntime; a table used otherwise is refused.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { pythonWithOnnx } from '../support/python.ts';

const python = pythonWithOnnx();
const work = mkdtempSync(join(tmpdir(), 'lexembed-int8-rows-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * Writes <folder>/onnx/model.onnx the old way: an int8 table (40 × 6, per-row scales) made float by
 * Cast·Mul on initializers, looked up twice (input_ids and other_ids), plus `extraUse` if given.
 */
function oldStyleGraph(folder: string, extraUse = '') {
  mkdirSync(join(folder, 'onnx'), { recursive: true });
  const script = `
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(7)
q = rng.integers(-127, 128, (40, 6)).astype(np.int8)
scale = rng.uniform(0.001, 0.05, (40, 1)).astype(np.float32)
nodes = [helper.make_node("Cast", ["t_int8"], ["t_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["t_f", "t_row_scale"], ["t"]),
         helper.make_node("Gather", ["t", "input_ids"], ["a"], axis=0),
         helper.make_node("Gather", ["t", "other_ids"], ["b"], axis=0),
         helper.make_node("Add", ["a", "b"], ["out"])]
outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", "s", 6])]
if "${extraUse}" == "matmul":
    nodes.append(helper.make_node("MatMul", ["t", "w"], ["m"]))
    outputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [40, 2]))
graph = helper.make_graph(nodes, "t",
    [helper.make_tensor_value_info(n, TensorProto.INT64, ["n", "s"]) for n in ("input_ids", "other_ids")], outputs,
    [numpy_helper.from_array(q, "t_int8"), numpy_helper.from_array(scale, "t_row_scale"), numpy_helper.from_array(np.ones((6, 2), np.float32), "w")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
`;
  execFileSync(python, ['-c', script, join(folder, 'onnx', 'model.onnx')]);
}

describe('model/export/int8_rows.py', () => {
  it('finds no table in the shipped models that onnxruntime would fold to float at load', () => {
    const out = execFileSync(python, ['-m', 'model.export.int8_rows', '--check', BUNDLED_MODEL_DIR, STATIC_MODEL_DIR], { encoding: 'utf8' });
    expect(out).toContain(`${BUNDLED_MODEL_DIR}: no int8 table folds to float at load`);
    expect(out).toContain(`${STATIC_MODEL_DIR}: no int8 table folds to float at load`);
  });

  it('rewrites a graph written the old way, and its outputs stay bit-identical', async () => {
    const folder = join(work, 'old');
    oldStyleGraph(folder);
    const before = readFileSync(join(folder, 'onnx', 'model.onnx'));
    writeFileSync(join(work, 'before.onnx'), before);
    const check = spawnSync(python, ['-m', 'model.export.int8_rows', '--check', folder], { encoding: 'utf8' });
    expect(check.status).toBe(1);
    expect(check.stdout).toContain('folds t to float at load');
    expect(execFileSync(python, ['-m', 'model.export.int8_rows', folder], { encoding: 'utf8' })).toContain('t now dequantised after the lookup');
    expect(spawnSync(python, ['-m', 'model.export.int8_rows', '--check', folder]).status).toBe(0);

    const [old, rewritten] = await Promise.all([ort.InferenceSession.create(join(work, 'before.onnx')), ort.InferenceSession.create(join(folder, 'onnx', 'model.onnx'))]);
    const ids = (values: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), [2, values.length / 2]);
    const feeds = { input_ids: ids([0, 5, 39, 12, 12, 7]), other_ids: ids([1, 1, 2, 38, 0, 20]) };
    const [a, b] = [await old.run(feeds), await rewritten.run(feeds)];
    const x = a.out!.data as Float32Array;
    expect(x.some((v) => v !== 0)).toBe(true);
    expect(Array.from(b.out!.data as Float32Array)).toEqual(Array.from(x));
  });

  it('refuses a table that is used other than by a lookup, and leaves the file as it was', () => {
    const folder = join(work, 'matmul');
    oldStyleGraph(folder, 'matmul');
    const before = readFileSync(join(folder, 'onnx', 'model.onnx'));
    const run = spawnSync(python, ['-m', 'model.export.int8_rows', folder], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('t is used by MatMul');
    expect(run.stderr).toContain('not only looked up by Gather on axis 0; not rewritten');
    expect(readFileSync(join(folder, 'onnx', 'model.onnx')).equals(before)).toBe(true);
  });
});
