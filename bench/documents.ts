// `npm run bench:documents`: a folder of 100 mixed legal documents (40 PDF of 2–12 pages, 30 DOCX,
// 30 TXT, written by tests/support/documents.ts) made searchable with the two commands a user
// types — `lexembed embed <folder>` and `lexembed search` — and where the time goes: text
// extraction alone (pages/s for PDF, documents/s for DOCX and text) against the whole embed run
// on the same folder, in the same run.
// Usage: npm run bench:documents -- [--model <dir>] [--documents 100] [--chunk-tokens 256]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { extractDocument } from '../src/documents/extract.ts';
import { BUNDLED_MODEL_DIR, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { makeDocx, makePdf } from '../tests/support/documents.ts';

const { values } = parseArgs({ options: { model: { type: 'string', default: BUNDLED_MODEL_DIR }, documents: { type: 'string', default: '100' }, 'chunk-tokens': { type: 'string', default: '256' } } });
const CLI = join(PROJECT_ROOT, 'bin', 'lexembed.js');
const count = Number(values.documents);

const TOPICS = ['rent and deposits', 'termination and notice', 'confidential information', 'limitation of liability', 'governing law and disputes', 'assignment and subcontracting', 'data protection', 'force majeure'];
/** A clause of about 40 words on `topic`, numbered. */
const clause = (n: number, topic: string) =>
  `${n}. ${topic[0]!.toUpperCase()}${topic.slice(1)}. The parties agree that the provisions on ${topic} set out in this section apply to every obligation under this agreement, unless a schedule signed by both parties provides otherwise in writing, and that any notice under this section is given in writing to the address stated above.`;
/** Lines of at most ~90 characters (one PDF text line each). */
const lines = (text: string) => text.match(/.{1,90}(\s|$)/g)!.map((l) => l.trim());

const dir = mkdtempSync(join(tmpdir(), 'lexembed-bench-documents-'));
const folder = join(dir, 'corpus');
mkdirSync(folder);
try {
  let pdfPages = 0;
  for (let i = 0; i < count; i++) {
    const topic = TOPICS[i % TOPICS.length]!;
    const name = `doc-${String(i).padStart(3, '0')}`;
    if (i % 10 < 4) {
      const pages = 2 + (i % 11);
      pdfPages += pages;
      writeFileSync(join(folder, `${name}.pdf`), makePdf(Array.from({ length: pages }, (_, p) => [0, 1, 2].flatMap((k) => lines(clause(p * 3 + k + 1, TOPICS[(i + p + k) % TOPICS.length]!))))));
    } else if (i % 10 < 7) writeFileSync(join(folder, `${name}.docx`), await makeDocx(Array.from({ length: 12 }, (_, k) => clause(k + 1, TOPICS[(i + k) % TOPICS.length]!))));
    else writeFileSync(join(folder, `${name}.txt`), Array.from({ length: 12 }, (_, k) => clause(k + 1, topic)).join('\n\n'));
  }
  console.log(`${count} documents in ${folder}: ${Math.ceil((count * 4) / 10)} PDF (${pdfPages} pages), ${Math.floor((count * 3) / 10)} DOCX, ${Math.floor((count * 3) / 10)} TXT; model ${values.model}`);

  // Extraction alone, in this process, twice (the first warms pdfjs and mammoth up); the second timed.
  const files = (await import('node:fs')).readdirSync(folder).sort();
  const timing = { pdf: 0, docx: 0, txt: 0 };
  let characters = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (const f of files) {
      const bytes = readFileSync(join(folder, f));
      const t0 = performance.now();
      const doc = await extractDocument(bytes, f);
      if (pass === 1) (timing[f.slice(f.lastIndexOf('.') + 1) as keyof typeof timing] += performance.now() - t0), (characters += doc.text.length);
    }
  }
  const extractS = (timing.pdf + timing.docx + timing.txt) / 1000;
  console.log(`extraction: PDF ${(pdfPages / (timing.pdf / 1000)).toFixed(0)} pages/s, DOCX ${((count * 0.3) / (timing.docx / 1000)).toFixed(0)} documents/s, TXT ${((count * 0.3) / (timing.txt / 1000)).toFixed(0)} documents/s; all ${count} documents (${characters.toLocaleString('en')} characters) in ${extractS.toFixed(2)} s`);

  // The two commands, as a user runs them.
  const out = join(dir, 'corpus.jsonl');
  const t1 = performance.now();
  execFileSync(process.execPath, [CLI, 'embed', folder, '--output', out, '--model', values.model!, '--task', 'retrieval/document', '--chunk-tokens', values['chunk-tokens']!, '--progress', 'never'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const embedS = (performance.now() - t1) / 1000;
  const chunks = readFileSync(out, 'utf8').trim().split('\n').length;
  const t2 = performance.now();
  const hits = execFileSync(process.execPath, [CLI, 'search', out, 'how much notice must be given to terminate', '--model', values.model!, '--top', '3'], { encoding: 'utf8' });
  const searchS = (performance.now() - t2) / 1000;
  console.log(`lexembed embed: ${count} documents → ${chunks} chunks in ${embedS.toFixed(1)} s (extraction ${((extractS / embedS) * 100).toFixed(0)} % of it; ${(chunks / embedS).toFixed(1)} chunks/s in all, start-up included)`);
  console.log(`lexembed search: ${searchS.toFixed(1)} s (model load included); best hit: ${hits.split('\n')[0]}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
