// An index across model releases (a copy of the static bundled model, its files edited as a
// release would): one that changes only the query side, the id or the description keeps the index
// (it opens, searches as an index made by the new release does, and takes updates); one that
// changes what makes a passage's vectors is refused naming the part; an index written before
// lexembed recorded its vectors fingerprint is upgraded in place when its whole fingerprint matches.
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embedder/types.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { IndexError, openIndex, type SearchHit } from '../../src/search-index/index.ts';
import { openLocation } from '../../src/search-index/location.ts';
import { recordVectors } from '../../src/search-index/schema.ts';
import type { Sql } from '../../src/search-index/sql.ts';
import { contractText, TOPICS, writeContracts } from '../support/contracts.ts';

let dir: string;
let docs: string;
const QUESTIONS = TOPICS.slice(0, 4).map(([topic]) => `What does the contract say about ${topic}?`);

/** A copy of the static model as a release would ship it: `edit` changes its lexembed.json, `tokenizer` its tokenizer.json. */
function release(name: string, edit: (settings: Record<string, any>) => void = () => {}, tokenizer = false): string {
  const folder = join(dir, name);
  cpSync(STATIC_MODEL_DIR, folder, { recursive: true });
  const path = join(folder, 'lexembed.json');
  const settings = JSON.parse(readFileSync(path, 'utf8'));
  edit(settings);
  writeFileSync(path, JSON.stringify(settings));
  if (tokenizer) appendFileSync(join(folder, 'tokenizer.json'), '\n');
  return folder;
}

/** Runs `work` with the model in `folder` loaded, and disposes of it. */
async function withModel<T>(folder: string, work: (embedder: Embedder) => Promise<T>): Promise<T> {
  const embedder = await loadModelFolder(folder, { inference: 'main' });
  try {
    return await work(embedder);
  } finally {
    await embedder.dispose();
  }
}

/** Each question's hits (file, chunk, scores), searched in the index at `location` with `embedder`. */
async function hitsIn(location: string, embedder: Embedder): Promise<Pick<SearchHit, 'file' | 'chunk' | 'score' | 'dense' | 'sparse'>[][]> {
  const index = await openIndex(location, { embedder, create: false });
  try {
    const all = [];
    for (const question of QUESTIONS) all.push((await index.search(question, { top: 5 })).map(({ file, chunk, score, dense, sparse }) => ({ file, chunk, score, dense, sparse })));
    return all;
  } finally {
    await index.close();
  }
}

/** Indexes the contracts into a new index at `location` with `embedder`. */
async function indexInto(location: string, embedder: Embedder): Promise<void> {
  const index = await openIndex(location, { embedder });
  try {
    await index.update([docs]);
  } finally {
    await index.close();
  }
}

/** The message of the IndexError opening the index at `location` with the model in `folder` throws. */
const refusal = (location: string, folder: string) =>
  withModel(folder, async (embedder) => {
    const error = await openIndex(location, { embedder, create: false }).then(
      async (index) => (await index.close(), null),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(IndexError);
    return (error as Error).message;
  });

/** The index's recorded settings, read from its table. */
async function recorded(location: string): Promise<{ model: { id: string; fingerprint: string; vectors?: Record<string, string | null> } }> {
  const raw = await openLocation(location, { create: false });
  try {
    const [row] = await raw.query<{ settings: { model: { id: string; fingerprint: string; vectors?: Record<string, string | null> } } }>('select settings from lexembed_index');
    return row!.settings;
  } finally {
    await raw.close();
  }
}

let original: string;
let queryRelease: string;
let made: string;
let old: string;
let fresh: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-release-'));
  docs = join(dir, 'contracts');
  await writeContracts(docs, 4);
  original = release('v1');
  // What v4.5 → v4.6 did, and more: a new id and description, other query neighbours, another query prompt.
  queryRelease = release('v2-query-side', (s) => {
    s.id = 'legal-2-embedder-static-v9.9';
    s.description = 'A release that changes the query side only.';
    s.sparse.expansion.weight = 0.5;
    s.sparse.expansion.threshold = 0.5;
    s.prompts['retrieval/query'] = 'Represent this legal question: ';
  });
  made = join(dir, 'made-by-v1.index');
  await withModel(original, (embedder) => indexInto(made, embedder));
  // An index as lexembed wrote them before it recorded the vectors fingerprint.
  old = join(dir, 'old.index');
  cpSync(made, old, { recursive: true });
  const raw = await openLocation(old, { create: false });
  await raw.query(`update lexembed_index set settings = settings #- '{model,vectors}'`);
  await raw.close();
  // The same contracts indexed by the query-side release itself.
  fresh = join(dir, 'made-by-v2.index');
  await withModel(queryRelease, (embedder) => indexInto(fresh, embedder));
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a model release that keeps the document vectors', () => {
  it('keeps the index: it opens, searches as an index the release made itself does, and takes updates', async () => {
    const before = await recorded(made);
    await withModel(queryRelease, async (embedder) => {
      // The whole fingerprint moved: a check by it alone refuses this index.
      expect(embedder.settings.fingerprint).not.toBe(before.model.fingerprint);
      expect(before.model.vectors?.sparse).toMatch(/^sha256:[0-9a-f]{16}$/);
      expect(embedder.settings.vectors).toEqual(before.model.vectors);
      const kept = await hitsIn(made, embedder);
      expect(kept).toEqual(await hitsIn(fresh, embedder));
      expect(kept.map((hits) => hits[0]!.file.slice(0, 11))).toEqual(['contract-00', 'contract-01', 'contract-02', 'contract-03']);
      const index = await openIndex(made, { embedder });
      try {
        writeFileSync(join(docs, 'contract-04.md'), contractText(4));
        expect(await index.update([docs])).toMatchObject({ added: ['contract-04.md'], unchanged: 4 });
        expect((await index.search('force majeure flood fire war', { top: 1 }))[0]!.file).toBe('contract-04.md');
      } finally {
        await index.close();
        rmSync(join(docs, 'contract-04.md'));
      }
    });
    // The index still records the model that made it.
    expect((await recorded(made)).model).toEqual(before.model);
  }, 180_000);
});

describe('a model release that changes the document vectors: refused, naming what changed', () => {
  const what = /Use the model that made the index \(--model <its folder>, the same --dtype\), or index into a new location$/;

  it('the sparse table for documents', async () => {
    const message = await refusal(made, release('v3-sparse', (s) => (s.sparse.b = 0.7)));
    expect(message).toMatch(/holds vectors of model legal-2-embedder-static-v4\.6 and this model is legal-2-embedder-static-v4\.6: their vectors do not compare, because lexembed\.json's sparse table for documents \(idf, term weights, stem classes, word pairs, k1, b, avg_len\) differs \(sparse sha256:\w{16} there, sha256:\w{16} now\)/);
    expect(message).toMatch(what);
  }, 120_000);

  it('a document setting of the dense vector, and the tokenizer', async () => {
    const pooling = await refusal(made, release('v3-pooling', (s) => (s.pooling = 'mean')));
    expect(pooling).toMatch(/because lexembed\.json's document settings \(max_input_tokens, pooling, dimensions, the retrieval\/document prompt, document_form\) differs \(document sha256:\w{16} there, sha256:\w{16} now\)\./);
    expect(pooling).toMatch(what);
    const prompt = await refusal(made, release('v3-prompt', (s) => (s.prompts['retrieval/document'] = 'passage: ')));
    expect(prompt).toMatch(/because lexembed\.json's document settings .* differs \(document /);
    const tokenizer = await refusal(made, release('v3-tokenizer', () => {}, true));
    expect(tokenizer).toMatch(/because the tokenizer \(tokenizer\.json\) differs \(tokenizer sha256:\w{16} there, sha256:\w{16} now\)\./);
  }, 180_000);
});

describe('an index written before lexembed recorded its vectors fingerprint', () => {
  it('is refused as before when its whole fingerprint differs, and upgraded in place, embedding nothing, when it matches', async () => {
    const { model } = await recorded(old);
    expect(model.vectors).toBeUndefined();

    // Only the whole fingerprint to go by: a release that changed it is refused, as before.
    expect(await refusal(old, queryRelease)).toMatch(/holds vectors of model legal-2-embedder-static-v4\.6 \(fingerprint sha256:\w{16}, 1536 dimensions\), and this model is legal-2-embedder-static-v9\.9 \(fingerprint sha256:\w{16}, 1536 dimensions\): their vectors do not compare/);
    expect((await recorded(old)).model.vectors).toBeUndefined();

    // The model that made it: accepted, its vectors fingerprint recorded; nothing embedded again.
    const hits = await withModel(original, async (embedder) => {
      const passages = (await openLocation(old, { create: false }).then(async (sql) => {
        try {
          return await sql.query<{ n: number }>('select count(*)::int as n from lexembed_passages');
        } finally {
          await sql.close();
        }
      }))[0]!.n;
      const found = await hitsIn(old, embedder);
      expect((await recorded(old)).model).toEqual({ ...model, vectors: embedder.settings.vectors });
      expect((await recorded(old)).model.vectors?.graph).toMatch(/^sha256:[0-9a-f]{16}$/);
      const index = await openIndex(old, { embedder });
      try {
        expect(await index.update([docs])).toMatchObject({ added: [], changed: [], unchanged: 4, passagesAdded: 0 });
        expect((await index.stats()).passages).toBe(passages);
      } finally {
        await index.close();
      }
      return found;
    });
    // From then on, a release that keeps the document vectors keeps it.
    expect(await withModel(queryRelease, (embedder) => hitsIn(old, embedder))).toEqual(await withModel(queryRelease, (embedder) => hitsIn(fresh, embedder)));
    expect(hits.map((h) => h[0]!.file.slice(0, 11))).toEqual(['contract-00', 'contract-01', 'contract-02', 'contract-03']);
  }, 240_000);
});

describe('recordVectors on a server that takes no writes', () => {
  it('leaves the index as it is (a read replica searches it; a writer records them), and any other failure is thrown', async () => {
    const failing = (code: string) => ({ transaction: async () => Promise.reject(Object.assign(new Error('refused'), { code })) }) as unknown as Sql;
    const vectors = { graph: 'sha256:0', tokenizer: 'sha256:1', document: 'sha256:2', sparse: 'sha256:3' };
    expect(await recordVectors(failing('25006'), vectors)).toBe(false);
    await expect(recordVectors(failing('53100'), vectors)).rejects.toThrow('refused');
  });
});
