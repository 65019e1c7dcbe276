// `lexembed index` and `lexembed search <index>` as a user runs them (the real CLI in child
// processes, the static bundled model, PGlite in a folder): the summary a second run prints, the
// excerpt at the clause, exit status 2 for what the user must fix, a kill -9 mid-run that the
// next run finishes with nothing lost or doubled, and a second writer refused while one runs.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { openLocation } from '../../src/search-index/location.ts';
import { CLI, runCli } from '../support/cli.ts';
import { writeContracts } from '../support/contracts.ts';

const MODEL = ['--model', STATIC_MODEL_DIR];
// Each CLI run loads the model (a few seconds on a busy 2-core machine): generous time per test.
const SLOW_MS = 240_000;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-cli-index-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `lexembed index` in a child process, resolved at its first progress line. */
function startIndexing(args: string[]) {
  const child = spawn(process.execPath, [CLI, 'index', ...args, ...MODEL], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const progressed = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      if (/\[2\/\d+\]/.test(stderr)) resolve();
    });
    void exited.then(() => reject(new Error(`lexembed index exited before its second file:\n${stderr}`)));
  });
  return { child, progressed, exited, output: () => stdout + stderr };
}

/** Every file's passages present once: (file, chunk) unique, counts equal to the file rows' and the corpus counts'. */
async function integrity(location: string) {
  const sql = await openLocation(location, { create: false });
  try {
    const [row] = await sql.query<{ files: number; passages: number; doubled: number; recorded: number; counted: number }>(`select
      (select count(*) from lexembed_files)::int as files,
      (select count(*) from lexembed_passages)::int as passages,
      (select count(*) from (select file_id, chunk from lexembed_passages group by 1, 2 having count(*) > 1) d)::int as doubled,
      (select coalesce(sum(passages), 0) from lexembed_files)::int as recorded,
      (select df from lexembed_terms where term = -1)::int as counted`);
    return row!;
  } finally {
    await sql.close();
  }
}

describe('lexembed index, then lexembed search', () => {
  it('indexes a folder, says what a second run changed, and shows the clause that answers', async () => {
    const docs = join(dir, 'contracts');
    const index = join(dir, 'contracts.index');
    await writeContracts(docs, 8);
    const first = await runCli(['index', docs, '--index', index, ...MODEL]);
    expect(first.stdout).toContain('added 8, changed 0, renamed 0, removed 0, unchanged 0');
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/\[8\/8\] /);
    expect(first.stderr).not.toContain('dense search graph'); // a folder index has none (a server's index builds one)
    await writeContracts(docs, 1, 8);
    const second = await runCli(['index', docs, '--index', index, ...MODEL]);
    expect(second.stdout).toContain('added 1, changed 0, renamed 0, removed 0, unchanged 8');
    expect(second.stderr).toContain('contract-08.txt');
    expect(second.stderr).not.toContain('dense search graph');

    const search = await runCli(['search', index, 'Can either party terminate for convenience?', '--top', '3', ...MODEL]);
    expect(search.code).toBe(0);
    expect(search.stdout).toMatch(/^1\. \d\.\d{3} {2}contract-02\.pdf, pages? [\d–]+, passage 1\n {3}"… 3\. TERMINATION FOR CONVENIENCE\. Either party may terminate this Agreement for convenience/);
    const none = await runCli(['search', index, 'governing law', '--document', 'no-such-contract.pdf', ...MODEL]);
    expect([none.code, none.stdout]).toEqual([0, expect.stringContaining('no passages match in the files asked for (--document no-such-contract.pdf: no file of the index by that path?')]);
    const json = JSON.parse((await runCli(['search', index, 'governing law', '--json', '--top', '2', '--file', '*.md', ...MODEL])).stdout) as { file: string; excerpt: string; dense: number; sparse: number }[];
    expect(json).toHaveLength(2);
    expect(json[0]).toMatchObject({ file: 'contract-01.md', excerpt: expect.stringContaining('GOVERNING LAW. This Agreement is governed by the laws of the State of New York') });
  }, SLOW_MS);

  it('a --json larger than a pipe\'s buffer reaches the reader whole (the process waits for stdout before it exits)', async () => {
    const docs = join(dir, 'long');
    mkdirSync(docs);
    const clause = (n: number, k: number) => `Clause ${n}.${k}. The lessee shall maintain the premises numbered ${n} in good repair, pay the rent on the first day of each month, insure the building against fire and flood, and give notice in writing of any defect within ${k + 3} days.`;
    for (let n = 0; n < 12; n++) writeFileSync(join(docs, `lease-${n}.txt`), Array.from({ length: 40 }, (_, k) => clause(n, k)).join('\n\n'));
    const index = join(dir, 'long.index');
    expect((await runCli(['index', docs, '--index', index, ...MODEL])).code).toBe(0);
    // The same search written to a file, and through a pipe to a reader that waits 2 s first.
    const search = `"${process.execPath}" "${CLI}" search "${index}" "notice in writing of a defect" --json --top 100 --model "${STATIC_MODEL_DIR}" 2>/dev/null`;
    execFileSync('bash', ['-c', `${search} > "${join(dir, 'long.json')}"`]);
    const whole = readFileSync(join(dir, 'long.json'), 'utf8');
    expect(whole.length).toBeGreaterThan(2 ** 17);
    expect(JSON.parse(whole).length).toBeGreaterThan(90);
    const piped = execFileSync('bash', ['-c', `${search} | (sleep 2; wc -c)`], { encoding: 'utf8' });
    expect(Number(piped.trim())).toBe(Buffer.byteLength(whole));
  }, 240_000);

  it('exits 2 with the fix for what the user must change', async () => {
    const docs = join(dir, 'few');
    await writeContracts(docs, 1);
    const cases: [string[], RegExp][] = [
      [['search', join(dir, 'missing.index'), 'rent'], /no index \(or output of lexembed embed\) at .*missing\.index: make an index with npx lexembed index <folder of documents> --index /],
      [['search', mkdtempSync(join(dir, 'empty-')), 'rent', '--dense-only', '--sparse-only'], /--dense-only or --sparse-only, not both/],
      [['search', mkdtempSync(join(dir, 'empty-')), 'rent'], /no index at .*make one with lexembed index/],
      [['index', docs, '--index', docs], /is not a lexembed index .* not empty/],
      [['search', docs, 'rent'], /is not a lexembed index .*: search the folder lexembed index made, or make one: lexembed index .*few --index .*few\.index/],
      [['index', join(dir, 'gone'), '--index', join(dir, 'few.index')], /no such file or folder: .*gone\. Nothing was changed/],
      [['index', docs], /--index \(LEXEMBED_INDEX\) is required: a folder for the index/],
    ];
    for (const [args, message] of cases) {
      const run = await runCli([...args, ...MODEL]);
      expect([run.code, run.stderr], args.join(' ')).toEqual([2, expect.stringMatching(message)]);
    }
  }, SLOW_MS);

  it('after kill -9 mid-run, the next run finishes: nothing lost, nothing doubled, the same passages as one clean run', async () => {
    const docs = join(dir, 'many');
    await writeContracts(docs, 24);
    const index = join(dir, 'killed.index');
    const run = startIndexing([docs, '--index', index]);
    await run.progressed;
    run.child.kill('SIGKILL');
    expect(await run.exited).toBe(null);
    const partial = await integrity(index);
    expect(partial.files).toBeLessThan(24);

    const rerun = await runCli(['index', docs, '--index', index, ...MODEL]);
    expect(rerun.code).toBe(0);
    const [, added, unchanged] = /added (\d+), changed 0, renamed 0, removed 0, unchanged (\d+)/.exec(rerun.stdout)!;
    expect([Number(added) + Number(unchanged), Number(unchanged)]).toEqual([24, partial.files]);

    const clean = join(dir, 'clean.index');
    expect((await runCli(['index', docs, '--index', clean, ...MODEL])).code).toBe(0);
    const [after, reference] = [await integrity(index), await integrity(clean)];
    expect(after).toEqual(reference);
    expect(after).toMatchObject({ files: 24, doubled: 0, recorded: after.passages, counted: after.passages });
  }, SLOW_MS);

  it('refuses a second writer while one runs, naming the process; the first finishes', async () => {
    const docs = join(dir, 'writers');
    // Enough files that the first run is still writing (one transaction each) while the second starts.
    await writeContracts(docs, 120);
    const index = join(dir, 'writers.index');
    const first = startIndexing([docs, '--index', index]);
    await first.progressed;
    const second = await runCli(['index', docs, '--index', index, ...MODEL]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`is in use by process ${first.child.pid}`);
    const search = await runCli(['search', index, 'rent', ...MODEL]);
    expect([search.code, search.stderr]).toEqual([2, expect.stringContaining('in use by process')]);
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('added 120');
  }, SLOW_MS);

  it('says which files it left out and why, and exits 1 when one could not be read', async () => {
    const docs = join(dir, 'mixed');
    await writeContracts(docs, 2);
    writeFileSync(join(docs, 'broken.pdf'), '%PDF-1.7\n1 0 obj <<');
    writeFileSync(join(docs, 'old.doc'), new Uint8Array([0xd0, 0xcf, 0x11, 0xe0]));
    const run = await runCli(['index', docs, '--index', join(dir, 'mixed.index'), ...MODEL]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/added 2, .* failed 2/);
    expect(run.stdout).toMatch(/not indexed: broken\.pdf: .*PDF/);
    // A .doc is a document it cannot read, named with what to do (issue 66), not left out as another kind of file.
    expect(run.stdout).toMatch(/not indexed: old\.doc: a legacy Word \.doc file .*; save it as \.docx/);
  }, SLOW_MS);

  // A real small disk (tmpfs) needs root to mount; elsewhere this case is skipped, and says so.
  const canMount = process.getuid?.() === 0 && (() => {
    try {
      execFileSync('mount', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!canMount)('stops before the disk fills, exit 2 with the fix; after space is freed the next run finishes with nothing lost', async () => {
    const disk = join(dir, 'small-disk');
    mkdirSync(disk);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', disk]);
    try {
      const docs = join(dir, 'for-a-small-disk');
      await writeContracts(docs, 1);
      const index = join(disk, 'contracts.index');
      expect((await runCli(['index', docs, '--index', index, ...MODEL])).code).toBe(0);
      // Leave 64 MB (what a write keeps free) and 0.4 MB more (a few files' rows): the run must stop partway.
      const { bavail, bsize } = statfsSync(disk);
      writeFileSync(join(disk, 'ballast'), Buffer.alloc(Math.max(0, bavail * bsize - (64 + 0.4) * 1024 * 1024)));
      await writeContracts(docs, 120, 1);
      const full = await runCli(['index', docs, '--index', index, ...MODEL]);
      expect(full.code, full.stdout + full.stderr).toBe(2);
      expect(full.stderr).toMatch(/the disk that holds .*contracts\.index has \d+ MB free, and writing contract-\d+\.\w+ \(\d+ passages\) safely needs \d+ MB: free some space, or index into a location on a bigger disk, and run lexembed index again\. Nothing was lost/);
      const partial = await integrity(index);
      expect(partial.files).toBeGreaterThan(1);
      expect(partial.files).toBeLessThan(121);
      rmSync(join(disk, 'ballast'));
      const rerun = await runCli(['index', docs, '--index', index, ...MODEL]);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stdout).toContain(`added ${121 - partial.files}, changed 0, renamed 0, removed 0, unchanged ${partial.files}`);
      expect(await integrity(index)).toMatchObject({ files: 121, doubled: 0, recorded: expect.any(Number) });
      const after = await integrity(index);
      expect([after.recorded, after.counted]).toEqual([after.passages, after.passages]);
    } finally {
      execFileSync('umount', [disk]);
    }
  }, SLOW_MS);
});
