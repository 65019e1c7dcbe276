// A folder of legal documents in, answers out, as a user runs it: `lexembed embed <folder>` on
// real PDF, DOCX, Markdown and text files (and the files that give no text: a scan, an encrypted
// PDF, an image), then `lexembed search` naming file and page of the passage that answers.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli, startServe } from '../support/cli.ts';
import { makeDocx, makeOle, makePdf } from '../support/documents.ts';

let dir: string;
let folder: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-documents-'));
  folder = join(dir, 'contracts');
  mkdirSync(join(folder, 'leases'), { recursive: true });
  writeFileSync(
    join(folder, 'leases', 'lease.pdf'),
    makePdf([
      ['RESIDENTIAL LEASE AGREEMENT', '1. Rent. The Tenant shall pay the Landlord a monthly rent of 1,200 dollars', 'on the first day of each month, by bank transfer.'],
      ['2. Termination. Either party may terminate this lease by giving the other', 'at least sixty days written notice before the end of a month.'],
      ['3. Governing law. This lease is governed by the laws of the Province of Ontario.', '4. Pets. No dogs or cats may be kept on the premises.'],
    ]),
  );
  writeFileSync(
    join(folder, 'nda.docx'),
    await makeDocx([
      'MUTUAL NON-DISCLOSURE AGREEMENT',
      '',
      '1. Confidential Information means all information disclosed by one party to the other that is marked confidential.',
      '2. Return of materials. On request, the receiving party shall return or destroy all documents containing Confidential Information.',
      '3. Term. The obligations of confidentiality survive for five years after disclosure.',
    ]),
  );
  writeFileSync(join(folder, 'privacy.md'), '# Privacy policy\n\nWe keep personal data for two years after the account is closed.\n\nYou may ask us to delete your personal data at any time.\n');
  writeFileSync(join(folder, 'notes.txt'), 'Board minutes: the board approved the annual budget.\n');
  writeFileSync(join(folder, 'scan.pdf'), makePdf([['signed page']], { scan: true }));
  writeFileSync(join(folder, 'locked.pdf'), makePdf([['top secret']], { password: 'hunter2' }));
  writeFileSync(join(folder, 'logo.png'), new Uint8Array([0x89, 0x50, 0x4e, 0x47]));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Row = { id: string; chunk: number; start: number; end: number; page?: number; paragraph?: number; line?: number; embedding: number[] };
const readOut = (path: string) => readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Row);

describe('lexembed embed on a folder of documents, then lexembed search', () => {
  const output = () => join(dir, 'contracts.jsonl');

  it('stops at the first file that gives no text, naming it and what to do; the documents before it are saved', async () => {
    const r = await runCli(['embed', folder, '--output', output(), '--model', BUNDLED_MODEL_DIR, '--task', 'retrieval/document', '--chunk-tokens', '48', '--progress', 'never']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('left out 1 file(s) that are not PDF, DOCX, TXT or Markdown');
    expect(r.stderr).toMatch(/lexembed embed: locked\.pdf: the PDF is password-protected; save an unprotected copy .*; or pass --on-error skip to leave it out \(the documents before it are saved/);
    // Walked in name order: leases/lease.pdf comes before locked.pdf, and its chunks are saved.
    expect(new Set(readOut(output()).map((x) => x.id))).toEqual(new Set(['leases/lease.pdf']));
  });

  it('with --on-error skip embeds every readable document into chunks that name their page, paragraph or line, and reports the rest', async () => {
    const r = await runCli(['embed', folder, '--output', output(), '--model', BUNDLED_MODEL_DIR, '--task', 'retrieval/document', '--chunk-tokens', '48', '--on-error', 'skip', '--progress', 'never']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/skipped locked\.pdf: the PDF is password-protected/);
    expect(r.stderr).toMatch(/skipped scan\.pdf: none of its 1 page has a text layer \(a scanned PDF\?\); lexembed does no OCR/);
    expect(r.stderr).toMatch(/resuming: 1 of 4 documents already in .*contracts\.jsonl \(its last row: chunk \d+ of id "leases\/lease\.pdf"\); 3 not there yet will be embedded/);
    expect(r.stdout).toMatch(/embedded 3 documents as \d+ chunks into .*contracts\.jsonl \(1 already there, 2 skipped\)/);
    const rows = readOut(output());
    expect(new Set(rows.map((x) => x.id))).toEqual(new Set(['leases/lease.pdf', 'notes.txt', 'nda.docx', 'privacy.md']));
    const pages = rows.filter((x) => x.id === 'leases/lease.pdf').map((x) => x.page!);
    expect(pages).toEqual(expect.arrayContaining([1, 2])); // the page each chunk starts on
    expect(pages.every((p) => p >= 1 && p <= 3)).toBe(true);
    expect(rows.filter((x) => x.id === 'nda.docx').every((x) => typeof x.paragraph === 'number')).toBe(true);
    expect(rows.filter((x) => x.id === 'privacy.md').every((x) => typeof x.line === 'number')).toBe(true);
    const meta = JSON.parse(readFileSync(`${output()}.meta.json`, 'utf8'));
    expect(meta.source).toMatchObject({ format: 'documents', inputs: [folder] });
    expect(meta.settings.chunk_tokens).toBe(48);

    const again = await runCli(['embed', folder, '--output', output(), '--model', BUNDLED_MODEL_DIR, '--task', 'retrieval/document', '--chunk-tokens', '48', '--on-error', 'skip', '--progress', 'never']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/embedded 0 documents .*\(4 already there, 2 skipped\)/); // both unreadable files are named again
    expect(readOut(output())).toHaveLength(rows.length);
  });

  it('a file added to the folder is embedded on the next run, wherever it sorts (none silently left out)', async () => {
    const out = join(dir, 'added.jsonl');
    const args = ['--output', out, '--model', BUNDLED_MODEL_DIR, '--task', 'retrieval/document', '--on-error', 'skip', '--progress', 'never'];
    expect((await runCli(['embed', folder, ...args])).code).toBe(0);
    const before = new Set(readOut(out).map((x) => x.id));
    writeFileSync(join(folder, '0000-new-service-agreement.txt'), 'SERVICE AGREEMENT. The Supplier shall answer support calls within four hours.\n');
    try {
      const r = await runCli(['embed', folder, ...args]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/resuming: 4 of 5 documents already in .*added\.jsonl .*; 1 not there yet will be embedded/);
      expect(r.stdout).toMatch(/embedded 1 documents as \d+ chunks into .*added\.jsonl \(4 already there, 2 skipped\)/);
      expect(new Set(readOut(out).map((x) => x.id))).toEqual(new Set([...before, '0000-new-service-agreement.txt']));
    } finally {
      rmSync(join(folder, '0000-new-service-agreement.txt'));
    }
  });

  it('a document changed since it was embedded is refused, named, with what to do; unchanged again, the run resumes', async () => {
    const changing = join(dir, 'changing');
    mkdirSync(changing, { recursive: true });
    const nda = 'NON-DISCLOSURE AGREEMENT. Each party keeps the other party\'s information secret for five years.\n';
    writeFileSync(join(changing, 'nda.txt'), nda);
    writeFileSync(join(changing, 'lease.txt'), 'LEASE. The tenant pays rent monthly in advance.\n');
    const out = join(dir, 'changing.jsonl');
    const args = ['--output', out, '--model', BUNDLED_MODEL_DIR, '--task', 'retrieval/document', '--progress', 'never'];
    expect((await runCli(['embed', changing, ...args])).code).toBe(0);
    writeFileSync(join(changing, 'nda.txt'), nda.replace('five', 'ten'));
    const changed = await runCli(['embed', changing, ...args]);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/1 document\(s\) changed since they were embedded into .*changing\.jsonl: nda\.txt\. .*Embed into a new --output, or index the folder with lexembed index/);
    writeFileSync(join(changing, 'nda.txt'), nda);
    const again = await runCli(['embed', changing, ...args]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/embedded 0 documents as 0 chunks into .*\(2 already there/);
  }, 120_000);

  it('search finds the clause that answers, with its file and page, and the passage itself', async () => {
    const r = await runCli(['search', output(), 'How much notice must be given to end the lease?', '--model', BUNDLED_MODEL_DIR, '--top', '3']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(/^1\. 0\.\d{3} {2}leases\/lease\.pdf, pages? 2(–3)?, chunk \d+, characters \d+–\d+$/);
    expect(r.stdout.split('\n')[1]).toContain('sixty days written notice');

    const json = await runCli(['search', output(), 'how long is personal data kept', '--model', BUNDLED_MODEL_DIR, '--json', '--top', '2']);
    expect(json.code, json.stderr).toBe(0);
    const hits = JSON.parse(json.stdout) as { rank: number; score: number; id: string; line?: number; text: string }[];
    expect(hits[0]).toMatchObject({ rank: 1, id: 'privacy.md', line: expect.any(Number), text: expect.stringContaining('two years') });

    const reranked = await runCli(['search', output(), 'Who must give back confidential documents?', '--model', BUNDLED_MODEL_DIR, '--rerank', '--json', '--top', '1']);
    expect(reranked.code, reranked.stderr).toBe(0);
    expect(JSON.parse(reranked.stdout)[0]).toMatchObject({ id: 'nda.docx', paragraph: expect.any(Number), cosine: expect.any(Number), text: expect.stringContaining('return or destroy') });
  }, 120_000); // three CLI runs, each loading the model: generous on a busy machine

  it('search through a lexembed server (--remote) finds what the local model finds', async () => {
    const server = await startServe(['--no-auth', '--model', BUNDLED_MODEL_DIR]);
    try {
      const query = 'How much notice must be given to end the lease?';
      const [remote, local] = await Promise.all([
        runCli(['search', output(), query, '--remote', `${server.url}/v1`, '--json', '--top', '3']),
        runCli(['search', output(), query, '--model', BUNDLED_MODEL_DIR, '--json', '--top', '3']),
      ]);
      expect(remote.code, remote.stderr).toBe(0);
      const ids = (out: string) => (JSON.parse(out) as { id: string; chunk: number; score: number }[]).map((h) => [h.id, h.chunk, h.score.toFixed(4)]);
      expect(ids(remote.stdout)).toEqual(ids(local.stdout));
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('shards: two machines\' outputs, concatenated, are one run\'s', async () => {
    const run = (extra: string[], out: string) => runCli(['embed', folder, '--output', out, '--model', STATIC_MODEL_DIR, '--chunk-tokens', '48', '--on-error', 'skip', '--progress', 'never', ...extra]);
    const [whole, first, second] = await Promise.all([run([], join(dir, 'whole.jsonl')), run(['--shard', '0/2'], join(dir, 's0.jsonl')), run(['--shard', '1/2'], join(dir, 's1.jsonl'))]);
    for (const r of [whole, first, second]) expect(r.code, r.stderr).toBe(0);
    expect(first.stdout).toMatch(/shard 0\/2: input rows 1–3 of 6/);
    const key = (rows: Row[]) => rows.map((x) => `${x.id}#${x.chunk}@${x.page ?? x.paragraph ?? x.line}`);
    expect([...key(readOut(join(dir, 's0.jsonl'))), ...key(readOut(join(dir, 's1.jsonl')))]).toEqual(key(readOut(join(dir, 'whole.jsonl'))));
  }, 120_000);

  it('search refuses a model whose vectors do not compare with the output\'s, saying which and how', async () => {
    const r = await runCli(['search', output(), 'termination notice', '--model', STATIC_MODEL_DIR]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/was embedded by model legal-2-embedder-hybrid-v[\d.]+ \(fingerprint sha256:[0-9a-f]{16}\), and the query would be embedded by legal-2-embedder-static-v[\d.]+ .*Search with the model that embedded it/);
    const missing = await runCli(['search', join(dir, 'nothing.jsonl'), 'x']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
  });
});

// One behaviour for a file that gives no text, however it is given: in a folder, alone, or to
// lexembed index, the message names the file, says what is wrong and what to do.
describe('a legacy Word file, a renamed one and a cut-off PDF, however they are given', () => {
  const LEGACY = /old\.doc: a legacy Word \.doc file \(Word 97–2003\), a format lexembed does not read; save it as \.docx/;
  const embed = (inputs: string[], out: string, extra: string[] = []) => runCli(['embed', ...inputs, '--output', join(dir, out), '--model', STATIC_MODEL_DIR, '--progress', 'never', ...extra]);
  let mixed: string;
  beforeAll(() => {
    mixed = join(dir, 'mixed');
    mkdirSync(mixed);
    writeFileSync(join(mixed, 'lease.txt'), 'The Tenant shall pay rent monthly.\n');
    writeFileSync(join(mixed, 'old.doc'), makeOle('WordDocument'));
    const pdf = makePdf([['1. Rent. The Tenant shall pay rent monthly.'], ['2. Notice. Sixty days.']]);
    writeFileSync(join(mixed, 'cut.pdf'), pdf.slice(0, Math.floor(pdf.length * 0.6)));
    writeFileSync(join(dir, 'report.docx'), makeOle('WordDocument'));
    writeFileSync(join(dir, 'scan-0001'), makeOle('WordDocument'));
  });

  it('in a folder, a .doc is not left out but named with what to do, as a cut-off PDF is', async () => {
    const stopped = await embed([mixed], 'mixed-stop.jsonl');
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stderr).not.toContain('left out');
    expect(stopped.stderr).toMatch(/lexembed embed: cut\.pdf: a PDF cut off before its end .*; get the file again .*; or pass --on-error skip to leave it out/);
    const skipped = await embed([mixed], 'mixed-skip.jsonl', ['--on-error', 'skip']);
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(skipped.stderr).toMatch(new RegExp(`skipped ${LEGACY.source}`));
    expect(skipped.stderr).toMatch(/skipped cut\.pdf: a PDF cut off before its end/);
    expect(skipped.stdout).toMatch(/embedded 1 documents .*\(0 already there, 2 skipped\)/);
  }, 240_000);

  it('given alone, a Word 97–2003 file is recognised by its bytes (named .doc, .docx or nothing), with or without --on-error skip', async () => {
    const alone = await embed([join(mixed, 'old.doc')], 'alone.jsonl');
    expect(alone.code, alone.stderr).toBe(1);
    expect(alone.stderr).toMatch(LEGACY);
    expect(alone.stderr).not.toMatch(/texts\[\d+\]/);
    const renamed = await embed([join(dir, 'report.docx')], 'renamed.jsonl', ['--on-error', 'skip']);
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(renamed.stderr).toContain(`skipped ${join(dir, 'report.docx')}: its name ends in .docx, but it is a legacy Word .doc file (Word 97–2003), a format lexembed does not read; save it as .docx`);
    expect(renamed.stderr).not.toMatch(/central directory|https?:/);
    const unnamed = await embed([join(dir, 'scan-0001')], 'unnamed.jsonl', ['--on-error', 'skip']);
    expect(unnamed.code, unnamed.stderr).toBe(0);
    expect(unnamed.stderr).toMatch(/skipped .*scan-0001: a legacy Word \.doc file/);
  }, 240_000);

  it('lexembed index names the .doc and the cut-off PDF as not indexed, with what to do', async () => {
    const r = await runCli(['index', mixed, '--index', join(dir, 'mixed.index'), '--model', STATIC_MODEL_DIR]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/added 1, .*failed 2/);
    expect(r.stdout).toMatch(new RegExp(`not indexed: ${LEGACY.source}`));
    expect(r.stdout).toMatch(/not indexed: cut\.pdf: a PDF cut off before its end .*; get the file again/);
    expect(r.stdout).not.toContain('left out');
  }, 240_000);
});
