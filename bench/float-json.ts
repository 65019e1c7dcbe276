// `npm run bench:json`: writing a response of float vectors, as the server does
// (contract/float-json.ts: float32's shortest decimals, straight to bytes) against JSON.stringify
// and UTF-8 encoding (what it did before), on the same fresh unit vectors in one run.
// Usage: npm run bench:json -- [--dimensions 1024] [--vectors 16] [--rounds 300]
import { parseArgs } from 'node:util';
import { float32JsonBytes } from '../src/contract/float-json.ts';
import { rng } from './texts.ts';

const { values } = parseArgs({ options: { dimensions: { type: 'string', default: '1024' }, vectors: { type: 'string', default: '16' }, rounds: { type: 'string', default: '300' } } });
const [dimensions, perBody, rounds] = [Number(values.dimensions), Number(values.vectors), Number(values.rounds)];
const next = rng(11);
/** Response bodies of fresh unit vectors (V8 caches number strings, so no value repeats). */
const bodies = Array.from({ length: rounds }, () => ({
  embeddings: Array.from({ length: perBody }, (_, index) => {
    const v = new Float32Array(dimensions).map(() => next() - 0.5);
    const norm = Math.hypot(...v);
    return { index, embedding: Array.from(v, (x) => Math.fround(x / norm)) };
  }),
  usage: { input_tokens: 20 * perBody },
}));
const encoder = new TextEncoder();
const ways: [string, (body: unknown) => Uint8Array][] = [
  ['JSON.stringify + encode', (body) => encoder.encode(JSON.stringify(body))],
  ['float32JsonBytes', (body) => float32JsonBytes(body)],
];
const results = ways.map(([name, write]) => {
  for (const body of bodies.slice(0, 50)) write(body); // warm
  const t0 = performance.now();
  let bytes = 0;
  for (const body of bodies) bytes += write(body).length;
  return { name, usPerVector: ((performance.now() - t0) * 1000) / (rounds * perBody), bytesPerVector: bytes / (rounds * perBody) };
});
console.log(`writing ${perBody} vectors of ${dimensions} per body, ${rounds} bodies`);
for (const r of results) console.log(`${r.name.padEnd(24)} ${r.usPerVector.toFixed(1).padStart(7)} µs/vector  ${r.bytesPerVector.toFixed(0).padStart(6)} bytes/vector`);
console.log(`float32JsonBytes ÷ JSON.stringify: time ${(results[1]!.usPerVector / results[0]!.usPerVector).toFixed(2)}, bytes ${(results[1]!.bytesPerVector / results[0]!.bytesPerVector).toFixed(2)}`);
