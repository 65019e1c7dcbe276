// `npm run bench:document-questions`: questions that name their contract among many ("term in the
// CONSTRUCTION MANAGEMENT AGREEMENT") searched through a lexembed index, with and without the
// document's own context (its opening: title, parties) in the same run. A contract's name is in its
// first passage only, so without it the best hit is often the right contract's title page, not the
// clause. Prints, for each: the right contract at rank 1, the right passage at ranks 1 and 5, and
// the same clause asked within its one contract (--document) without the name, which must not get
// worse.
// The contracts are rebuilt from ../shared/data/legal-pairs/contracts-lexpredict.jsonl.gz (EDGAR
// exhibits: each contract's title, then its headed sections in order); the model was trained on
// heading → section pairs of these files, so clause matching is flattered here: the figure that
// matters is the difference the document context makes on the same index.
// Usage: npm run bench:document-questions -- [--contracts 60] [--per-contract 8] [--model …] [--keep DIR]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { BUNDLED_MODEL_DIR, loadModelFolder, PROJECT_ROOT } from '../src/node/runtime/load-model.ts';
import { openIndex, type SearchHit } from '../src/search-index/index.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: BUNDLED_MODEL_DIR },
    pairs: { type: 'string', default: resolve(PROJECT_ROOT, '../shared/data/legal-pairs/contracts-lexpredict.jsonl.gz') },
    contracts: { type: 'string', default: '60' },
    'per-contract': { type: 'string', default: '8' },
    keep: { type: 'string' },
  },
});

interface Clause {
  readonly heading: string;
  readonly start: number;
  readonly end: number;
}
interface Contract {
  readonly file: string;
  readonly title: string;
  readonly text: string;
  readonly clauses: Clause[];
}

/** The contracts: each with a title no other contract of the source has, 10–80 headed sections. */
function buildContracts(count: number): Contract[] {
  const rows = gunzipSync(readFileSync(values.pairs!)).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { query: string; text: string; doc: string; kind?: string });
  const byDoc = new Map<string, { query: string; text: string }[]>();
  for (const r of rows) if (r.kind === 'heading') byDoc.set(r.doc, [...(byDoc.get(r.doc) ?? []), r]);
  const titleOf = (doc: string) => doc.split('/').pop()!.replace(/\.txt$/, '').split('_').slice(2).join('_').trim();
  const titles = new Map<string, number>();
  for (const doc of byDoc.keys()) titles.set(titleOf(doc), (titles.get(titleOf(doc)) ?? 0) + 1);
  const eligible = [...byDoc.keys()].sort().filter((d) => titles.get(titleOf(d)) === 1 && titleOf(d).length >= 12 && byDoc.get(d)!.length >= 10 && byDoc.get(d)!.length <= 80);
  const step = eligible.length / count;
  return Array.from({ length: Math.min(count, eligible.length) }, (_, i) => {
    const doc = eligible[Math.floor(i * step)]!;
    const title = titleOf(doc);
    let text = `${title}\n\n`;
    const clauses: Clause[] = [];
    let previous = '';
    for (const [k, r] of byDoc.get(doc)!.entries()) {
      if (previous.includes(r.text.slice(0, 200))) continue; // a subsection inside its parent's text
      previous = r.text;
      const start = text.length;
      text += `${k + 1}. ${r.query}. ${r.text}\n\n`;
      clauses.push({ heading: r.query, start, end: text.length });
    }
    return { file: `contract-${String(i).padStart(3, '0')}.txt`, title, text, clauses };
  });
}

/** Questions: clause headings that several contracts share (so the contract's name is what tells them apart). */
function questionsOf(contracts: readonly Contract[], perContract: number) {
  const norm = (h: string) => h.toLowerCase().replace(/[^a-z ]+/g, ' ').replace(/\s+/g, ' ').trim();
  const shared = new Map<string, number>();
  for (const c of contracts) for (const h of new Set(c.clauses.map((x) => norm(x.heading)))) shared.set(h, (shared.get(h) ?? 0) + 1);
  return contracts.flatMap((c) =>
    c.clauses
      .filter((x) => (shared.get(norm(x.heading)) ?? 0) >= 3 && norm(x.heading).split(' ').length <= 5 && norm(x.heading).length >= 4)
      .filter((x, i, all) => all.findIndex((y) => norm(y.heading) === norm(x.heading)) === i)
      .slice(0, perContract)
      .map((x) => ({ contract: c, clause: x, named: `${norm(x.heading)} in the ${c.title}`, plain: norm(x.heading) })),
  );
}

const isClause = (h: SearchHit, file: string, clause: Clause) => h.file === file && h.start <= clause.start + 40 && h.end > clause.start;

const contracts = buildContracts(Number(values.contracts));
const questions = questionsOf(contracts, Number(values['per-contract']));
const work = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), 'lexembed-document-questions-'));
const docs = join(work, 'contracts');
mkdirSync(docs, { recursive: true });
for (const c of contracts) writeFileSync(join(docs, c.file), c.text);
const embedder = await loadModelFolder(resolve(values.model!), { batch: { tokens: 'auto', size: 'auto' } });
const index = await openIndex(join(work, 'index'), { embedder });
const started = performance.now();
const report = await index.update([docs]);
const stats = await index.stats();
console.log(`${contracts.length} contracts, ${stats.passages} passages (${report.added.length + report.changed.length} indexed in ${((performance.now() - started) / 1000).toFixed(0)} s); ${questions.length} questions naming their contract`);

const rows: [string, string, string, string, string][] = [];
for (const context of [false, true]) {
  let contract1 = 0;
  let passage1 = 0;
  let passage5 = 0;
  let within1 = 0;
  let within5 = 0;
  const times: number[] = [];
  for (const q of questions) {
    const t = performance.now();
    const hits = await index.search(q.named, { top: 5, documentContext: context });
    times.push(performance.now() - t);
    if (hits[0]?.file === q.contract.file) contract1++;
    if (hits[0] && isClause(hits[0], q.contract.file, q.clause)) passage1++;
    if (hits.some((h) => isClause(h, q.contract.file, q.clause))) passage5++;
    const inside = await index.search(q.plain, { top: 5, document: q.contract.file, documentContext: context });
    if (inside[0] && isClause(inside[0], q.contract.file, q.clause)) within1++;
    if (inside.some((h) => isClause(h, q.contract.file, q.clause))) within5++;
  }
  const pct = (n: number) => `${((100 * n) / questions.length).toFixed(1)} %`;
  times.sort((a, b) => a - b);
  const ms = `${times[Math.floor(times.length / 2)]!.toFixed(0)} ms`;
  rows.push([context ? 'with the document context (default)' : 'without (the baseline: passages alone)', pct(contract1), `${pct(passage1)} / ${pct(passage5)}`, `${pct(within1)} / ${pct(within5)}`, ms]);
}
console.log('| search | right contract at 1 | right passage at 1 / in top 5 | within the one contract, unnamed: at 1 / top 5 | p50 per search (query embedding included) |');
console.log('|---|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
await index.close();
await embedder.dispose();
if (!values.keep) rmSync(work, { recursive: true, force: true });
