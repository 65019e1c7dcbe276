// The default key store of a single Node server: one JSON file under the data directory,
// replaced atomically (write temp, fsync, rename) under a lock file, so the CLI and a running
// server can both change it. Readers re-read when the file's inode changes, so a running
// server sees new keys, revocations and account changes without a restart.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AccountSchema, KeyRecordSchema, type Account, type KeyRecord } from '../records.ts';
import { withLimits, type KeyStore } from '../store.ts';
import { messageOf } from '../../util/message-of.ts';

export const KEYS_FILE = 'keys.json';
const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 10_000;

const FileSchema = z.object({ version: z.literal(1), keys: z.array(KeyRecordSchema), accounts: z.array(AccountSchema) });
type Contents = z.infer<typeof FileSchema>;

export function createFileKeyStore(dataDir: string): KeyStore {
  const file = join(dataDir, KEYS_FILE);
  let cache: { stamp: string; contents: Contents } | undefined;

  const read = (): Contents => {
    let stamp: string;
    try {
      const s = statSync(file);
      stamp = `${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, keys: [], accounts: [] };
      throw error;
    }
    if (cache?.stamp === stamp) return cache.contents;
    const raw = readFileSync(file, 'utf8');
    let parsed: Contents;
    try {
      parsed = FileSchema.parse(JSON.parse(raw));
    } catch (error) {
      throw new Error(`the key store ${file} is corrupt (${messageOf(error).slice(0, 200)}); restore it from a backup`);
    }
    cache = { stamp, contents: parsed };
    return parsed;
  };

  const update = async <T>(change: (contents: Contents) => T): Promise<T> => {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const release = await lock(`${file}.lock`);
    try {
      cache = undefined;
      const contents = structuredClone(read());
      const result = change(contents);
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(contents, null, 2) + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, file);
      return result;
    } finally {
      release();
    }
  };

  return {
    name: 'file',
    async insertKey(record: KeyRecord) {
      await update((c) => void c.keys.push(record));
    },
    async findKeyByHash(hash) {
      return structuredClone(read().keys.find((k) => k.hash === hash) ?? null);
    },
    async listKeys() {
      return structuredClone(read().keys);
    },
    async revokeKey(id, at) {
      return update((c) => {
        const k = c.keys.find((r) => r.id === id);
        if (!k) return null;
        k.revoked ??= at;
        return structuredClone(k);
      });
    },
    async setKeyLimits(id, limits) {
      return update((c) => {
        const i = c.keys.findIndex((r) => r.id === id);
        if (i < 0) return null;
        c.keys[i] = withLimits(c.keys[i]!, limits);
        return structuredClone(c.keys[i]!);
      });
    },
    async getAccount(id) {
      return structuredClone(read().accounts.find((a) => a.id === id) ?? null);
    },
    async putAccount(account: Account) {
      await update((c) => {
        const i = c.accounts.findIndex((a) => a.id === account.id);
        if (i >= 0) c.accounts[i] = account;
        else c.accounts.push(account);
      });
    },
    async listAccounts() {
      return structuredClone(read().accounts);
    },
    async close() {},
  };
}

async function lock(path: string): Promise<() => void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          unlinkSync(path);
        } catch {}
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(path).mtimeMs > LOCK_STALE_MS) unlinkSync(path); // left by a crashed process
      } catch {}
      if (Date.now() > deadline) throw new Error(`could not lock ${path} within ${LOCK_WAIT_MS / 1000} s; is another lexembed command stuck?`);
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    }
  }
}
