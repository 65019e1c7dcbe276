// A folder of small contracts for the index tests: each names its parties and has numbered
// clauses, one clause a topic no other contract has, so a question has one right passage.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { runCli } from './cli.ts';
import { makeDocx, makePdf } from './documents.ts';

export const TOPICS = [
  ['security deposit', 'The Landlord shall return the security deposit within thirty days after the lease ends, less unpaid rent.'],
  ['governing law', 'This Agreement is governed by the laws of the State of New York, and its courts have exclusive jurisdiction.'],
  ['termination for convenience', 'Either party may terminate this Agreement for convenience on ninety days written notice.'],
  ['confidentiality', 'Each party shall keep the other party’s confidential information secret for five years after disclosure.'],
  ['force majeure', 'Neither party is liable for delay caused by flood, fire, war, epidemic or other events beyond its control.'],
  ['late payment interest', 'Invoices unpaid after thirty days bear interest at two percent per month until paid.'],
  ['assignment', 'Neither party may assign this Agreement without the prior written consent of the other party.'],
  ['limitation of liability', 'Neither party is liable for indirect or consequential loss, and total liability is capped at the fees paid.'],
] as const;

const FILLER = 'The parties have read this clause and agree to it. Words defined in the recitals have the same meaning in this clause. Headings are for convenience only.';

/** The text of contract `i`: parties, filler clauses and its topic clause (long ones span several passages). */
export function contractText(i: number, longer = false): string {
  const [topic, clause] = TOPICS[i % TOPICS.length]!;
  const clauses = [`AGREEMENT ${i + 1} between Party ${i}A Ltd and Party ${i}B Inc.`];
  const filler = longer ? 12 : 2;
  for (let k = 1; k <= filler; k++) clauses.push(`${k}. GENERAL. ${FILLER}`);
  clauses.push(`${filler + 1}. ${topic.toUpperCase()}. ${clause}`);
  return clauses.join('\n\n');
}

/** Writes `count` contracts into `dir` as TXT, Markdown, PDF (two pages) and DOCX in turn. */
export async function writeContracts(dir: string, count: number, from = 0): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const names: string[] = [];
  for (let i = from; i < from + count; i++) {
    const text = contractText(i, i % 3 === 0);
    const kind = i % 4;
    const name = `contract-${String(i).padStart(2, '0')}.${['txt', 'md', 'pdf', 'docx'][kind]}`;
    const paragraphs = text.split('\n\n');
    if (kind === 2) writeFileSync(join(dir, name), makePdf([paragraphs.slice(0, 2).flatMap(lines), paragraphs.slice(2).flatMap(lines)]));
    else if (kind === 3) writeFileSync(join(dir, name), await makeDocx(paragraphs));
    else writeFileSync(join(dir, name), text);
    names.push(name);
  }
  return names;
}

/**
 * `count` contracts in a new temporary folder (`dir/contracts`), indexed by the real CLI on the
 * static bundled model into `dir/contracts.index`; the caller removes `dir`.
 */
export async function indexedContracts(prefix: string, count: number): Promise<{ dir: string; index: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await writeContracts(join(dir, 'contracts'), count);
  const index = join(dir, 'contracts.index');
  const made = await runCli(['index', join(dir, 'contracts'), '--index', index, '--model', STATIC_MODEL_DIR]);
  if (made.code !== 0) throw new Error(`lexembed index exited ${made.code}:\n${made.stderr}`);
  return { dir, index };
}

/** A paragraph as lines of at most 80 characters (a PDF line longer than the page is cut off). */
function lines(paragraph: string): string[] {
  const out: string[] = [];
  for (const word of paragraph.split(' ')) {
    if (out.length && out[out.length - 1]!.length + word.length < 80) out[out.length - 1] += ` ${word}`;
    else out.push(word);
  }
  return out;
}
