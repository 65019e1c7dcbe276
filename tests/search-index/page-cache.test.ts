// The embedded index's page cache (shared_buffers) follows the index's size: PGlite's default for a
// small one, three quarters of a large one's data up to 1 GB; LEXEMBED_INDEX_CACHE_MB sets it, and a
// bad value is an IndexError naming the variable, not an index called damaged.
import { closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IndexError } from '../../src/search-index/schema.ts';
import { openLocation } from '../../src/search-index/location.ts';
import { openPglite, pageCacheMbOf } from '../../src/search-index/sql.ts';

const dir = mkdtempSync(join(tmpdir(), 'lexembed-page-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A database folder whose data files add up to `mb` (sparse files: sizes without the disk). */
function dataOf(name: string, mb: number[]): string {
  const folder = join(dir, name);
  mkdirSync(join(folder, 'base', '5'), { recursive: true });
  mb.forEach((size, i) => {
    const fd = openSync(join(folder, 'base', '5', `${16384 + i}`), 'w');
    ftruncateSync(fd, size * 2 ** 20);
    closeSync(fd);
  });
  return folder;
}

describe('the embedded index\'s page cache', () => {
  it('is PGlite\'s 128 MB for a new or small index, three quarters of a larger one\'s data (in 16 MB steps), 1 GB at most', () => {
    expect(pageCacheMbOf(join(dir, 'none'), undefined)).toBe(128);
    expect(pageCacheMbOf(dataOf('small', [20, 40]), undefined)).toBe(128);
    expect(pageCacheMbOf(dataOf('recall', [738]), undefined)).toBe(560); // 553.5 MB up to a step
    expect(pageCacheMbOf(dataOf('million', [1024, 1024, 1024, 1024, 600]), undefined)).toBe(1024);
  });

  it('takes LEXEMBED_INDEX_CACHE_MB, and refuses a value that is not a size with what it must be', () => {
    const folder = dataOf('set', [738]);
    expect(pageCacheMbOf(folder, '64')).toBe(64);
    expect(pageCacheMbOf(folder, ' ')).toBe(560);
    for (const bad of ['lots', '8', '4096', '1.5', '1e2', '0x40', '-16']) expect(() => pageCacheMbOf(folder, bad), bad).toThrow(/^LEXEMBED_INDEX_CACHE_MB must be a whole number of MB from 16 to 2048 \(got ".*"\)/);
  });

  it('is the cache PGlite runs with; a bad setting stops the open with that message, not "damaged"', async () => {
    process.env.LEXEMBED_INDEX_CACHE_MB = '48';
    try {
      const sql = await openPglite(join(dir, 'db'));
      expect((await sql.query<{ shared_buffers: string }>('show shared_buffers'))[0]!.shared_buffers).toBe('48MB');
      await sql.close();
      process.env.LEXEMBED_INDEX_CACHE_MB = 'lots';
      const error = await openLocation(join(dir, 'an.index'), { create: true }).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(IndexError);
      expect((error as Error).message).toMatch(/^LEXEMBED_INDEX_CACHE_MB must be/);
      expect(existsSync(join(dir, 'an.index'))).toBe(false); // stopped before a folder was made
    } finally {
      delete process.env.LEXEMBED_INDEX_CACHE_MB;
    }
  }, 120_000);
});
