// lexembed's vectors in a real vector store: SQLite (Node's built-in node:sqlite, Node ≥ 22.13)
// with sqlite-vec's vec0 tables (float32, int8 and bit, straight from output_dtype) and FTS5's
// BM25, as docs/models.md shows. A legal corpus is indexed through the HTTP client from an
// in-process server on the bundled static model; dense, keyword, hybrid (reciprocal-rank fusion)
// and binary-with-float-rescoring searches find the expected statute first. Node 20 skips it
// (no node:sqlite); `npm run test:node-versions` runs it on Node 22 and 24.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lexembed } from '../../src/client/index.ts';
import { createApp } from '../../src/http/app.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { startServer, type RunningServer } from '../../src/node/server.ts';
import type { Embedder } from '../../src/embedder/types.ts';
import { PASSAGES } from '../../web-demo/src/passages.ts';

const [MAJOR, MINOR] = process.versions.node.split('.').map(Number) as [number, number];
const HAS_SQLITE_EXTENSIONS = MAJOR > 22 || (MAJOR === 22 && MINOR >= 13);

const QUERIES = [
  { text: 'overtime pay for hours worked beyond forty in a workweek', expected: 'overtime' },
  { text: 'term of copyright: the life of the author and years after death', expected: 'copyright-duration' },
  { text: 'at what times may a debt collector contact a consumer', expected: 'debt-collection-hours' },
  { text: 'how large a security deposit may a housing provider require', expected: 'security-deposit' },
];

type Db = { exec(sql: string): void; prepare(sql: string): { run(...a: unknown[]): unknown; all(...a: unknown[]): Record<string, unknown>[] }; close(): void };
let db: Db;
let embedder: Embedder;
let server: RunningServer;
let client: Lexembed;
const f32 = (v: number[]) => new Uint8Array(new Float32Array(v).buffer);

describe.runIf(HAS_SQLITE_EXTENSIONS)('sqlite-vec and FTS5 (node:sqlite, Node ≥ 22.13: npm run test:node-versions) with lexembed vectors', () => {
  beforeAll(async () => {
    embedder = await loadModelFolder(STATIC_MODEL_DIR, { inference: 'main' });
    server = await startServer(createApp({ embedder }), { port: 0, host: '127.0.0.1' });
    client = new Lexembed({ apiKey: null, baseURL: `${server.url}/v1` });
    const { DatabaseSync } = (await import('node:sqlite')) as unknown as { DatabaseSync: new (path: string, options: { allowExtension: boolean }) => Db & { loadExtension(path: string): void } };
    const sqliteVec = await import('sqlite-vec');
    const database = new DatabaseSync(':memory:', { allowExtension: true });
    sqliteVec.load(database);
    db = database;
    // The few lines a user needs (docs/models.md): a vec0 table per type, FTS5 for keywords.
    const dims = embedder.settings.dimensions.default;
    db.exec(`create virtual table vf using vec0(embedding float[${dims}]);
             create virtual table vi using vec0(embedding int8[${dims}]);
             create virtual table vb using vec0(embedding bit[${dims}]);
             create virtual table docs using fts5(body);`);
    const texts = PASSAGES.map((p) => p.text);
    const create = (output_dtype: 'float' | 'int8' | 'ubinary') => client.embeddings.create({ model: 'legal-2-embedder-static', texts, task: 'retrieval/document', output_dtype });
    const [floats, int8s, bits] = await Promise.all([create('float'), create('int8'), create('ubinary')]);
    PASSAGES.forEach((p, i) => {
      const row = BigInt(i + 1);
      db.prepare('insert into vf(rowid, embedding) values (?, ?)').run(row, f32(floats.embeddings[i]!.embedding));
      db.prepare('insert into vi(rowid, embedding) values (?, vec_int8(?))').run(row, new Uint8Array(new Int8Array(int8s.embeddings[i]!.embedding).buffer));
      db.prepare('insert into vb(rowid, embedding) values (?, vec_bit(?))').run(row, new Uint8Array(bits.embeddings[i]!.embedding));
      db.prepare('insert into docs(rowid, body) values (?, ?)').run(row, p.text);
    });
  }, 60_000);
  afterAll(async () => {
    db?.close();
    await server?.close();
    await embedder?.dispose();
  });

  const idOf = (rowid: unknown) => PASSAGES[Number(rowid) - 1]!.id;
  const query = async (text: string, output_dtype: 'float' | 'int8' | 'ubinary' = 'float') =>
    (await client.embeddings.create({ model: 'legal-2-embedder-static', texts: [text], task: 'retrieval/query', output_dtype })).embeddings[0]!.embedding;
  const knn = (table: string, cast: string, vector: Uint8Array, k = 10) =>
    db.prepare(`select rowid from ${table} where embedding match ${cast} and k = ${k} order by distance`).all(vector).map((r) => r.rowid as number);
  const keyword = (text: string) =>
    db.prepare('select rowid from docs where docs match ? order by bm25(docs) limit 10').all([...new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu))].map((w) => `"${w}"`).join(' OR ')).map((r) => r.rowid as number);
  const rrf = (...rankings: number[][]) => {
    const score = new Map<number, number>();
    for (const ranking of rankings) ranking.forEach((id, rank) => score.set(id, (score.get(id) ?? 0) + 1 / (60 + rank + 1)));
    return [...score].sort((a, b) => b[1] - a[1]).map(([id]) => id);
  };

  it.each(QUERIES)('"$text": dense (float and int8), keyword and hybrid find $expected first', async ({ text, expected }) => {
    const dense = knn('vf', '?', f32(await query(text)));
    const dense8 = knn('vi', 'vec_int8(?)', new Uint8Array(new Int8Array(await query(text, 'int8')).buffer));
    const words = keyword(text);
    expect(idOf(dense[0])).toBe(expected);
    expect(idOf(dense8[0])).toBe(expected);
    expect(idOf(words[0])).toBe(expected);
    expect(idOf(rrf(dense, words)[0])).toBe(expected);
  });

  it('binary (Hamming) candidates rescored with the float vectors rank as the float search does', async () => {
    for (const { text, expected } of QUERIES) {
      const floatQuery = await query(text);
      const candidates = knn('vb', 'vec_bit(?)', new Uint8Array(await query(text, 'ubinary')), 5);
      const floats = new Map(db.prepare('select rowid, embedding from vf').all().map((r) => [r.rowid as number, new Float32Array((r.embedding as Uint8Array).slice().buffer)]));
      const rescored = [...candidates].sort((a, b) => dot(floats.get(b)!, floatQuery) - dot(floats.get(a)!, floatQuery));
      expect(idOf(rescored[0])).toBe(expected);
    }
  });
});

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((s, x, i) => s + x * b[i]!, 0);

