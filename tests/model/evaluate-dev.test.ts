// model/evaluate/dev.py (how recipes are chosen) gives the figures the shared scorer gives over
// HTTP for the same model: the official path is ../shared/tools/evaluate-retrieval.py --http
// against `lexembed serve`; python3 -m model.evaluate.dev runs the model in Python without a server.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { PROJECT_ROOT, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServe } from '../support/cli.ts';
import { pythonWithOnnx } from '../support/python.ts';

const run = promisify(execFile);
const DEV = join(PROJECT_ROOT, '..', 'shared', 'data', 'legal-eval-dev');
const SCORER = join(PROJECT_ROOT, '..', 'shared', 'tools', 'evaluate-retrieval.py');
const QUERIES = 40;
// The name the static model answers to (it is not the spec's name: its vectors are not the hybrid's).
const STATIC_MODEL_NAME = (JSON.parse(readFileSync(join(STATIC_MODEL_DIR, 'lexembed.json'), 'utf8')) as { name: string }).name;
const work = mkdtempSync(join(tmpdir(), 'lexembed-dev-eval-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

it.skipIf(!existsSync(DEV) || !existsSync(SCORER))('python3 -m model.evaluate.dev on the static model = the shared scorer over HTTP, task by task (needs ../shared beside the checkout)', async () => {
  const python = pythonWithOnnx();
  const out = join(work, 'dev.json');
  await run(python, ['-m', 'model.evaluate.dev', '--model', STATIC_MODEL_DIR, '--dev', DEV, '--scorer', SCORER, '--max-queries', String(QUERIES), '--no-cache', '--json', out], { cwd: PROJECT_ROOT, maxBuffer: 16 << 20 });
  const local = JSON.parse(readFileSync(out, 'utf8'));
  const server = await startServe(['--model', STATIC_MODEL_DIR, '--no-auth']);
  try {
    const { stdout } = await run(python, [SCORER, DEV, '--http', `${server.url}/v1/embeddings`, '--model', STATIC_MODEL_NAME, '--max-queries', String(QUERIES)], { cwd: work, maxBuffer: 16 << 20 });
    const http = stdout.trim().split('\n').map((l) => JSON.parse(l) as { task: string; 'ndcg@10': number; n_queries: number });
    expect(http.map((r) => r.task).sort()).toEqual(['obliqa-adgm', 'oyez-scotus', 'pdpa-singapore']);
    for (const r of http) {
      expect(local[r.task].queries).toBe(r.n_queries);
      // The scorer rounds to 4 decimals; int8 table arithmetic in numpy vs onnxruntime may swap a near tie.
      expect(Math.abs(local[r.task].model['ndcg@10'] - r['ndcg@10']), r.task).toBeLessThanOrEqual(0.01);
    }
    const { stdout: bm25 } = await run(python, [SCORER, DEV, '--bm25', '--max-queries', String(QUERIES)], { cwd: work, maxBuffer: 16 << 20 });
    for (const line of bm25.trim().split('\n')) {
      const r = JSON.parse(line) as { task: string; 'ndcg@10': number };
      expect(local[r.task].bm25['ndcg@10']).toBeCloseTo(r['ndcg@10'], 4);
    }
  } finally {
    await server.stop();
  }
}, 600_000);
