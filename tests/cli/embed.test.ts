// `lexembed embed` end to end on a small corpus: formats, progress, bad rows, remote mode, and
// an interruption (SIGKILL) followed by a resume that loses and duplicates nothing.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { CLI, runCli, startServe } from '../support/cli.ts';

let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'lexembed-embed-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readOut = (path: string) => readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; embedding: number[] });
/**
 * The whole lines of an output a SIGKILL interrupted: the kill may land inside a write (Linux
 * stops a write to a file between pages for a fatal signal), tearing the last line, which is what
 * a resume cuts off.
 */
const wholeLines = (path: string) => {
  const text = readFileSync(path, 'utf8');
  return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
};
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
    expect(readOut(out2).map((x) => x.id)).toEqual([1, 3]); // line numbers, as numbers
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
    const partial = wholeLines(output).length;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(n);
    appendFileSync(output, '{"id":"r99999","embedd'); // as if the kill had torn a line

    const resumed = await embedStatic(input, output, '--batch-size', '50');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('cutting an incomplete last line');
    // The output's ids say what is done; its last complete row is where the killed run stopped.
    expect(resumed.stderr).toContain(`resuming: ${partial} of ${n} rows already in ${output} (its last row: id "r${partial - 1}"); ${n - partial} not there yet will be embedded`);
    const rows = readOut(output);
    expect(rows).toHaveLength(n);
    expect(new Set(rows.map((r) => r.id)).size).toBe(n);
    const byId = new Map(readOut(reference).map((r) => [r.id, r.embedding]));
    for (const r of rows) expect(r.embedding).toEqual(byId.get(r.id));
  }, 120_000); // several lexembed processes, each loading a model (~5 s each on 2 cores)

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
    const partial = wholeLines(output).map((line) => JSON.parse(line) as ChunkRow);
    expect(partial.length).toBeLessThan(ref.length);
    const last = partial.at(-1)!;
    const resumed = await embedStatic(input, output, ...args);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`(its last row: chunk ${last.chunk} of id "${last.id}")`);
    const rows = readOut(output) as unknown as ChunkRow[];
    expect(rows.map((r) => `${r.id}#${r.chunk}:${r.start}-${r.end}`)).toEqual(ref.map((r) => `${r.id}#${r.chunk}:${r.start}-${r.end}`));
    rows.forEach((r, i) => expect(r.embedding).toEqual(ref[i]!.embedding));
    // Other chunk options cannot resume into it, and a row output is not a chunk output.
    const other = await embedStatic(input, output, '--chunk-tokens', '60');
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/was made with other settings than this run.*--chunk-tokens \d+ there, 60 now/);
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
      expect(remote.map((x) => x.id)).toEqual([1, 2]);
      remote.forEach((row, i) => row.embedding.forEach((x, k) => expect(x).toBeCloseTo(local[i]!.embedding[k]!, 5)));
    } finally {
      await server.stop();
    }
  });

  it('records how an output was made and refuses to resume it with other dimensions, task or weights, naming the difference', async () => {
    const input = join(dir, 'meta.jsonl');
    writeFileSync(input, [JSON.stringify({ id: 7, text: 'Lease of premises' }), JSON.stringify({ id: 'b', text: 'Notice' })].join('\n') + '\n');
    const output = join(dir, 'meta.out.jsonl');
    const first = await embedStatic(input, output, '--dimensions', '64');
    expect(first.code, first.stderr).toBe(0);
    const meta = JSON.parse(readFileSync(`${output}.meta.json`, 'utf8'));
    expect(meta.settings).toMatchObject({ model: { name: 'legal-2-embedder-static', id: 'legal-2-embedder-static-v4.6' }, task: null, dimensions: 64, chunk_tokens: null });
    expect(meta.settings.model.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    // Ids keep their JSON type.
    expect(readOut(output).map((x) => x.id)).toEqual([7, 'b']);
    // The same settings resume (nothing to do); other ones are refused, naming what differs.
    const same = await embedStatic(input, output, '--dimensions', '64');
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain('embedded 0 rows');
    const dims = await embedStatic(input, output, '--dimensions', '128');
    expect(dims.code).toBe(2);
    expect(dims.stderr).toContain('dimensions 64 there, 128 now');
    const task = await embedStatic(input, output, '--dimensions', '64', '--task', 'retrieval/query');
    expect(task.stderr).toContain('task none (default) there, "retrieval/query" now');
    const weights = await embed(input, output, '--dimensions', '64');
    expect(weights.code).toBe(2);
    expect(weights.stderr).toMatch(/model id "legal-2-embedder-static-v[\d.]+" there, "legal-2-embedder-hybrid-v[\w.-]+" now; model fingerprint \(the weights\) "sha256:\w+" there, "sha256:\w+" now/);
    expect(readOut(output)).toHaveLength(2);
    // An output with rows but no settings file cannot be checked.
    rmSync(`${output}.meta.json`);
    expect((await embedStatic(input, output, '--dimensions', '64')).stderr).toContain('has rows but no');
  }, 120_000); // several lexembed processes, each loading a model (~5 s each on 2 cores)

  it('resumes and searches a document output with a release that keeps its document vectors, and refuses one that changes them, naming the part', async () => {
    const model = join(dir, 'tiny-release');
    cpSync(TEST_MODEL_DIR, model, { recursive: true });
    const release = (edit: (settings: Record<string, any>) => void) => {
      const path = join(model, 'lexembed.json');
      const settings = JSON.parse(readFileSync(path, 'utf8'));
      edit(settings);
      writeFileSync(path, JSON.stringify(settings));
    };
    const input = join(dir, 'release.jsonl');
    const row = (id: string, text: string) => `${JSON.stringify({ id, text })}
`;
    writeFileSync(input, row('a', 'The tenant shall pay rent monthly.') + row('b', 'Notice of termination must be in writing.'));
    const output = join(dir, 'release.out.jsonl');
    const run = (...extra: string[]) => runCli(['embed', input, '--output', output, '--model', model, '--task', 'retrieval/document', ...extra]);
    const search = () => runCli(['search', output, 'rent', '--model', model, '--json']);
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    const { model: recorded } = JSON.parse(readFileSync(`${output}.meta.json`, 'utf8')).settings;
    expect(recorded.vectors).toEqual({ graph: expect.stringMatching(/^sha256:[0-9a-f]{16}$/), tokenizer: expect.stringMatching(/^sha256:/), document: expect.stringMatching(/^sha256:/) });

    // A new id, description and query prompt: the rows resume, and the output is searched.
    release((s) => Object.assign(s, { id: 'tiny-v2', description: 'The next release.', prompts: { ...s.prompts, 'retrieval/query': 'question: ' } }));
    appendFileSync(input, row('c', 'Rent is due on the first day of each month.'));
    const resumed = await run();
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readOut(output).map((x) => x.id)).toEqual(['a', 'b', 'c']);
    const found = await search();
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout)).toHaveLength(3);

    // Another document prompt changes the document vectors: refused by both, naming it.
    release((s) => (s.prompts['retrieval/document'] = 'document: '));
    const refused = await run();
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/model vectors: lexembed\.json's document settings \(max_input_tokens, pooling, dimensions, the retrieval\/document prompt, document_form\) "sha256:\w{16}" there, "sha256:\w{16}" now/);
    const searched = await search();
    expect(searched.code).toBe(2);
    expect(searched.stderr).toMatch(/was embedded by model tiny-release \(fingerprint sha256:\w{16}\), and the query would be embedded by tiny-v2 \(fingerprint sha256:\w{16}\): their vectors do not compare, because lexembed\.json's document settings .* differs\. Search with the model that embedded it/);
  }, 120_000);

  it('validates --dimensions as the server does, counts truncated texts, warns on an empty input', async () => {
    const input = join(dir, 'long.jsonl');
    const long = 'The tenant shall keep the premises in good repair. '.repeat(120);
    writeFileSync(input, [JSON.stringify({ id: 'long', text: long }), JSON.stringify({ id: 'short', text: 'Rent' })].join('\n') + '\n');
    const tooWide = await embedStatic(input, join(dir, 'wide.jsonl'), '--dimensions', '4096');
    expect(tooWide.code).toBe(2);
    expect(tooWide.stderr).toContain('--dimensions 4096 exceeds the maximum of 1536 for model "legal-2-embedder-static"');
    expect(existsSync(join(dir, 'wide.jsonl'))).toBe(false);
    const cut = await embedStatic(input, join(dir, 'cut.jsonl'));
    expect(cut.code, cut.stderr).toBe(0);
    expect(cut.stderr).toContain("1 text(s) were longer than the model's maximum input (512 tokens) and were cut (drop_end)");
    expect(cut.stderr).toContain('--chunk-tokens');
    const chunked = await embedStatic(input, join(dir, 'chunked.jsonl'), '--chunk-tokens', '256');
    expect(chunked.stderr).not.toContain('were cut');
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '\n');
    const none = await embedStatic(empty, join(dir, 'none.jsonl'));
    expect(none.code).toBe(0);
    expect(none.stderr).toContain('warning: ' + empty + ' has no rows to embed');
  }, 120_000); // several lexembed processes, each loading a model (~5 s each on 2 cores)

  it('Ctrl-C stops after the batch being written and says how to resume', async () => {
    const input = join(dir, 'sigint.jsonl');
    writeFileSync(input, Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ id: i, text: `Clause ${i}: the lessee shall pay rent monthly in advance.` })).join('\n') + '\n');
    const output = join(dir, 'sigint.out.jsonl');
    const child = spawn(process.execPath, [CLI, 'embed', input, '--output', output, '--model', STATIC_MODEL_DIR, '--progress', 'never']);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (existsSync(output) && readFileSync(output, 'utf8').split('\n').length > 100) (clearInterval(poll), resolve());
      }, 20);
    });
    child.kill('SIGINT');
    expect(await code).toBe(130);
    expect(stderr).toMatch(/SIGINT: stopped; \d+ rows of this run are saved in .*sigint\.out\.jsonl \(\d+ of 20000 in all\)\. Run the same command again to resume/);
    const saved = readOut(output);
    expect(saved.length).toBeLessThan(20_000);
    expect(saved.map((r) => r.id)).toEqual(Array.from({ length: saved.length }, (_, i) => i));
  }, 120_000);

  it('--help wins over everything else on the line; unknown flags get a suggestion', async () => {
    const help = await runCli(['embed', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: lexembed embed');
    expect((await runCli(['embed', 'x.jsonl', '--bogus', '--help'])).stdout).toContain('Usage: lexembed embed');
    expect((await runCli(['serve', '--port', 'nope', '--help'])).stdout).toContain('Usage: lexembed serve');
    const typo = await runCli(['embed', 'x.jsonl', '--ouput', 'y.jsonl']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown option --ouput; did you mean --output?');
    expect((await runCli(['serve', '--prot', '9'])).stderr).toContain('did you mean --port?');
    const env = await runCli(['serve', '--model', join(dir, 'none')], { LEXEMBED_PORT: 'abc' });
    expect(env.stderr).toContain('--port (LEXEMBED_PORT) must be an integer from 0 to 65535; got "abc"');
  });

  it('--shard I/N: disjoint contiguous parts whose outputs, concatenated, are one run to the last digit; auto/N from JOB_COMPLETION_INDEX', async () => {
    const input = join(dir, 'shards.jsonl');
    writeFileSync(input, Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: i, text: `Section ${i}. The lessee shall pay ${i} dollars of rent.` })).join('\n') + '\n');
    const whole = join(dir, 'whole.jsonl');
    expect((await embedStatic(input, whole, '--batch-size', '37')).code).toBe(0);
    const parts: string[] = [];
    for (const i of [0, 1, 2]) {
      const out = join(dir, `shard-${i}.jsonl`);
      const r = i === 1 ? await runCli(['embed', input, '--output', out, '--model', STATIC_MODEL_DIR, '--shard', 'auto/3'], { JOB_COMPLETION_INDEX: '1' }) : await embedStatic(input, out, '--shard', `${i}/3`);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`shard ${i}/3: input rows`);
      parts.push(readFileSync(out, 'utf8'));
    }
    expect(parts.map((p) => p.trim().split('\n').length)).toEqual([333, 333, 334]);
    expect(parts.join('')).toBe(readFileSync(whole, 'utf8'));
    const other = await embedStatic(input, join(dir, 'shard-0.jsonl'), '--shard', '1/3');
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--shard "0\/3" there, "1\/3" now|ends with id/);
    expect((await embedStatic(input, join(dir, 's.jsonl'), '--shard', '3/3')).stderr).toContain('the shard index must be from 0 to 2');
    expect((await runCli(['embed', input, '--output', join(dir, 's.jsonl'), '--shard', 'auto/3'], { JOB_COMPLETION_INDEX: '' })).stderr).toContain('JOB_COMPLETION_INDEX');
  }, 180_000);

  it('explains a missing input or output', async () => {
    expect((await runCli(['embed'])).stderr).toContain('lexembed embed: --output is required: the JSONL file to write');
    const r = await runCli(['embed', join(dir, 'nope.jsonl'), '--output', join(dir, 'x.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no such input file');
  });
});
