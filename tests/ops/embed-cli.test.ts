// `lexembed embed` end to end on a small corpus: formats, progress, bad rows, remote mode, and
// an interruption (SIGKILL) followed by a resume that loses and duplicates nothing.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { CLI, runCli, startServe } from '../support/cli.ts';

let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'lexembed-embed-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readOut = (path: string) => readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; embedding: number[] });
const embed = (input: string, output: string, ...extra: string[]) => runCli(['embed', input, '--output', output, '--model', BUNDLED_MODEL_DIR, ...extra]);
// Tests of the command's mechanics that embed thousands of rows use the fast static model.
const embedStatic = (input: string, output: string, ...extra: string[]) => runCli(['embed', input, '--output', output, '--model', STATIC_MODEL_DIR, ...extra]);

describe('lexembed embed', () => {
  it('embeds JSONL into {id, embedding} lines with a progress bar showing rate and ETA', async () => {
    const input = join(dir, 'small.jsonl');
    writeFileSync(input, Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: `doc-${i}`, text: `Section ${i}: the lessee shall pay rent.` })).join('\n') + '\n');
    const output = join(dir, 'small.out.jsonl');
    const r = await embed(input, output, '--batch-size', '16', '--dimensions', '8', '--task', 'retrieval/document');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/\[#{30}\] 50\/50 100\.0% \d+ texts\/s ETA \d+s/);
    const rows = readOut(output);
    expect(rows.map((x) => x.id)).toEqual(Array.from({ length: 50 }, (_, i) => `doc-${i}`));
    expect(rows[0]!.embedding).toHaveLength(8);
    expect(Math.hypot(...rows[0]!.embedding)).toBeCloseTo(1, 5);
  });

  it('reads CSV (quoted fields across lines) and plain text', async () => {
    const csv = join(dir, 'c.csv');
    writeFileSync(csv, 'id,text\na,"Rent, payable ""monthly""\nin advance"\nb,Notice of default\n');
    const out1 = join(dir, 'c.out.jsonl');
    expect((await embed(csv, out1)).code).toBe(0);
    expect(readOut(out1).map((x) => x.id)).toEqual(['a', 'b']);
    const txt = join(dir, 't.txt');
    writeFileSync(txt, 'first text\n\nthird line text\n');
    const out2 = join(dir, 't.out.jsonl');
    expect((await embed(txt, out2)).code).toBe(0);
    expect(readOut(out2).map((x) => x.id)).toEqual(['1', '3']);
  });

  it('reports bad rows by line number: stop by default, skip on request', async () => {
    const input = join(dir, 'bad.jsonl');
    writeFileSync(input, ['{"id":"a","text":"ok"}', '{"id":"b","text":"   "}', 'not json', '{"text":"no id"}', '{"id":"a","text":"dup"}', '{"id":"c","text":"fine"}'].join('\n') + '\n');
    const stopOut = join(dir, 'bad-stop.jsonl');
    const stopped = await embed(input, stopOut);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain(`${input}:2: "text" has no non-whitespace character; fix it, or pass --on-error skip`);
    expect(readOut(stopOut).map((x) => x.id)).toEqual(['a']);
    const skipOut = join(dir, 'bad-skip.jsonl');
    const skipped = await embed(input, skipOut, '--on-error', 'skip');
    expect(skipped.code).toBe(0);
    for (const expected of [':2: "text" has no non-whitespace', ':3: not valid JSON', ':4: missing "id"', ':5: duplicate id "a"']) expect(skipped.stderr).toContain(expected);
    expect(readOut(skipOut).map((x) => x.id)).toEqual(['a', 'c']);
  });

  it('resumes after being killed mid-run without losing or duplicating rows', async () => {
    const input = join(dir, 'big.jsonl');
    const n = 4000;
    writeFileSync(input, Array.from({ length: n }, (_, i) => JSON.stringify({ id: `r${i}`, text: `Clause ${i}. ` + 'The parties agree to indemnify each other. '.repeat(3) })).join('\n') + '\n');
    const reference = join(dir, 'big.reference.jsonl');
    expect((await embedStatic(input, reference, '--batch-size', '50')).code).toBe(0);

    const output = join(dir, 'big.out.jsonl');
    // The fast static model: this is about resuming, and the kill must land mid-run.
    const child = spawn(process.execPath, [CLI, 'embed', input, '--output', output, '--model', STATIC_MODEL_DIR, '--batch-size', '50'], { stdio: 'ignore' });
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (existsSync(output) && readFileSync(output, 'utf8').split('\n').length > 200) (clearInterval(poll), resolve());
      }, 5);
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const partial = readFileSync(output, 'utf8').split('\n').filter(Boolean).length;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(n);
    appendFileSync(output, '{"id":"r99999","embedd'); // as if the kill had torn a line

    const resumed = await embedStatic(input, output, '--batch-size', '50');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('cutting an incomplete last line');
    // Only the output's tail is read: its last complete row says how far the killed run got.
    expect(resumed.stderr).toContain(`resuming after id "r${partial - 1}": ${partial} rows already`);
    const rows = readOut(output);
    expect(rows).toHaveLength(n);
    expect(new Set(rows.map((r) => r.id)).size).toBe(n);
    const byId = new Map(readOut(reference).map((r) => [r.id, r.embedding]));
    for (const r of rows) expect(r.embedding).toEqual(byId.get(r.id));
  });

  it('--chunk-tokens: 1,000 long documents as chunk rows with offsets, killed twice and resumed with nothing lost or repeated', async () => {
    const input = join(dir, 'long.jsonl');
    const docs = Array.from({ length: 1000 }, (_, i) => ({
      id: `d${i}`,
      text: Array.from({ length: 6 + (i % 5) }, (_, k) => `${k + 1}. Clause ${i}.${k}: the Lessee shall indemnify the Lessor against “all losses” under § ${k}; naïve café terms.`).join('\n').repeat(3),
    }));
    writeFileSync(input, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
    const args = ['--chunk-tokens', '120', '--overlap-tokens', '16', '--batch-size', '64', '--progress', 'always'];
    const reference = join(dir, 'long.reference.jsonl');
    const full = await embedStatic(input, reference, ...args);
    expect(full.code, full.stderr).toBe(0);
    expect(full.stderr).toMatch(/\] 1000\/1000 100\.0% \d+ documents\/s ETA \S+ · \d+ chunks/);
    type ChunkRow = { id: string; chunk: number; start: number; end: number; embedding: number[] };
    const ref = readOut(reference) as unknown as ChunkRow[];
    expect(full.stdout).toContain(`embedded 1000 documents as ${ref.length} chunks`);
    expect(ref.length).toBeGreaterThan(3000);
    // Offsets: each chunk is its document's slice, chunks numbered from 0 in order.
    const textOf = new Map(docs.map((d) => [d.id, d.text]));
    for (const r of ref.slice(0, 200)) expect(textOf.get(r.id)!.slice(r.start, r.end).length).toBe(r.end - r.start);
    expect(ref.filter((r) => r.id === 'd0').map((r) => r.chunk)).toEqual([...Array(ref.filter((r) => r.id === 'd0').length).keys()]);

    const output = join(dir, 'long.out.jsonl');
    for (const atLeast of [600, 1800]) {
      const child = spawn(process.execPath, [CLI, 'embed', input, '--output', output, '--model', STATIC_MODEL_DIR, ...args], { stdio: 'ignore' });
      await new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (existsSync(output) && readFileSync(output, 'utf8').split('\n').length > atLeast) (clearInterval(poll), resolve());
        }, 5);
      });
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    const partial = readOut(output) as unknown as ChunkRow[];
    expect(partial.length).toBeLessThan(ref.length);
    const last = partial.at(-1)!;
    const resumed = await embedStatic(input, output, ...args);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`resuming after chunk ${last.chunk} of id "${last.id}"`);
    const rows = readOut(output) as unknown as ChunkRow[];
    expect(rows.map((r) => `${r.id}#${r.chunk}:${r.start}-${r.end}`)).toEqual(ref.map((r) => `${r.id}#${r.chunk}:${r.start}-${r.end}`));
    rows.forEach((r, i) => expect(r.embedding).toEqual(ref[i]!.embedding));
    // Other chunk options cannot resume into it, and a row output is not a chunk output.
    const other = await embedStatic(input, output, '--chunk-tokens', '60');
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/it was written with other --chunk-tokens\/--overlap-tokens; use those, or choose another --output/);
    const rowsInto = await embedStatic(input, output);
    expect(rowsInto.stderr).toMatch(/was written with --chunk-tokens \(its rows are chunks\); run with the same options, or choose another --output/);
    expect((await embedStatic(input, join(dir, 'x.jsonl'), '--chunk-tokens', '9999')).stderr).toMatch(/--chunk-tokens\/--overlap-tokens: the chunk size must be an integer from 1 to \d+ tokens/);
    expect((await embedStatic(input, join(dir, 'y.jsonl'), '--overlap-tokens', '5')).stderr).toContain('--overlap-tokens needs --chunk-tokens');
  }, 300_000);

  it('refuses to resume into an output written from another input, saying so', async () => {
    const input = join(dir, 'other.jsonl');
    writeFileSync(input, JSON.stringify({ id: 'a', text: 'Lease' }) + '\n');
    const output = join(dir, 'other.out.jsonl');
    writeFileSync(output, JSON.stringify({ id: 'zz', embedding: [1, 0] }) + '\n');
    const r = await embedStatic(input, output);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`ends with id "zz", which ${input} does not hold: it was written from another input; choose another --output`);
    writeFileSync(output, 'not json\n');
    expect((await embedStatic(input, output)).stderr).toContain('does not end with an {id, embedding} row');
  });

  it('embeds through a remote server with the client library', async () => {
    const server = await startServe(['--no-auth', '--model', BUNDLED_MODEL_DIR]);
    try {
      const input = join(dir, 'remote.txt');
      writeFileSync(input, 'alpha clause\nbeta clause\n');
      const remoteOut = join(dir, 'remote.out.jsonl');
      const r = await runCli(['embed', input, '--output', remoteOut, '--remote', `${server.url}/v1`]);
      expect(r.code, r.stderr).toBe(0);
      const localOut = join(dir, 'local.out.jsonl');
      await embed(input, localOut);
      const [remote, local] = [readOut(remoteOut), readOut(localOut)];
      expect(remote.map((x) => x.id)).toEqual(['1', '2']);
      remote.forEach((row, i) => row.embedding.forEach((x, k) => expect(x).toBeCloseTo(local[i]!.embedding[k]!, 5)));
    } finally {
      await server.stop();
    }
  });

  it('explains a missing input or output', async () => {
    expect((await runCli(['embed'])).stderr).toContain('lexembed embed: --output is required: the JSONL file to write');
    const r = await runCli(['embed', join(dir, 'nope.jsonl'), '--output', join(dir, 'x.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no such input file');
  });
});
