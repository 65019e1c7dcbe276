// The same index in a PostgreSQL server with pgvector (`--index postgres://…`, the `pg` driver over
// the PostgreSQL wire protocol): PGlite with pgvector served by @electric-sql/pglite-socket, since
// Debian 12 has no pgvector package. `lexembed index` writes it from a child process; its
// searches give the same top 10 as the embedded engine's on the same documents, and a second run
// says what changed.
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/embedder/types.ts';
import { loadModelFolder, STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { openIndex } from '../../src/search-index/index.ts';
import { runCli } from '../support/cli.ts';
import { TOPICS, writeContracts } from '../support/contracts.ts';

let dir: string;
let db: PGlite;
let server: PGLiteSocketServer;
let url: string;
let embedder: Embedder;

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lexembed-pg-'));
  await writeContracts(join(dir, 'contracts'), 16);
  db = await PGlite.create({ extensions: { vector } });
  const port = await freePort();
  server = new PGLiteSocketServer({ db, port, host: '127.0.0.1' });
  await server.start();
  url = `postgres://postgres:secret@127.0.0.1:${port}/postgres`;
  embedder = await loadModelFolder(STATIC_MODEL_DIR, {});
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.close();
  await embedder?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('an index in PostgreSQL + pgvector', () => {
  it('is written by lexembed index over the wire, and a second run says what changed', async () => {
    const model = ['--model', STATIC_MODEL_DIR];
    const first = await runCli(['index', join(dir, 'contracts'), '--index', url, ...model]);
    expect([first.code, first.stdout]).toEqual([0, expect.stringContaining('added 16, changed 0, renamed 0, removed 0, unchanged 0')]);
    expect(first.stdout).toContain(`postgres://postgres:***@127.0.0.1`); // the password is not printed
    // A server's index takes its dense shortlist from pgvector's HNSW graph, built once after a first load.
    expect(first.stderr).toMatch(/building the dense search graph over \d+ passages \(once, after a first load/);
    await writeContracts(join(dir, 'contracts'), 1, 16);
    const second = await runCli(['index', join(dir, 'contracts'), '--index', url, ...model]);
    expect(second.stdout).toContain('added 1, changed 0, renamed 0, removed 0, unchanged 16');
    const search = await runCli(['search', url, 'late payment interest', '--json', '--top', '1', ...model]);
    expect(JSON.parse(search.stdout)[0]).toMatchObject({ file: expect.stringMatching(/^contract-(05|13)\./), excerpt: expect.stringContaining('interest at two percent per month') });
  }, 240_000);

  it('answers the same top 10 as the embedded engine on the same documents', async () => {
    const embedded = await openIndex(join(dir, 'embedded.index'), { embedder });
    const server = await openIndex(url, { embedder });
    try {
      await embedded.update([join(dir, 'contracts')]);
      expect(server.engine).toBe('postgres');
      const questions = [...TOPICS.map(([topic]) => `Which contract deals with ${topic}?`), 'Party 3A Ltd', 'notice in writing'];
      for (const question of questions) {
        for (const mode of ['hybrid', 'dense', 'sparse'] as const) {
          const [a, b] = [await embedded.search(question, { top: 10, mode }), await server.search(question, { top: 10, mode })];
          // Ties aside: passages of the same score (copies of the same text) in either order, and
          // of those tied with the tenth, either may be listed.
          const key = (h: { file: string; chunk: number; score: number }) => `${h.score.toFixed(4)} ${h.file}#${h.chunk}`;
          const cut = a.at(-1)?.score.toFixed(4);
          const tiesInOrder = (keys: string[]) => keys.map((k) => (k.startsWith(`${cut} `) ? `${cut} (tied with the last)` : k)).sort((x, y) => Number(y.split(' ')[0]) - Number(x.split(' ')[0]) || (x < y ? -1 : 1));
          expect(tiesInOrder(b.map(key)), `${mode}: ${question}`).toEqual(tiesInOrder(a.map(key)));
        }
      }
    } finally {
      await embedded.close();
      await server.close();
    }
  }, 240_000);
});
