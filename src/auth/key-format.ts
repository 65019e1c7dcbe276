// API keys of the form `lxk_v1_<secret>_<checksum>` (spec section 5): the secret is 32 base62
// characters from Web Crypto (~190 bits); the checksum is a CRC32 of `lxk_v1_<secret>` in 6
// base62 characters, so typos are caught before any store lookup and scanners can spot leaks.
// Pure and runtime-neutral: only Web Crypto and TextEncoder, no node:* imports.

export const KEY_PREFIX = 'lxk';
export const KEY_VERSION = 'v1';
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}_${KEY_VERSION}_([0-9A-Za-z]{${SECRET_LENGTH}})_([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`);

export type KeyParse = { readonly ok: true; readonly key: string } | { readonly ok: false; readonly reason: 'malformed' | 'checksum' };

/** A new random key, e.g. `lxk_v1_3kTq…_a81Zx0`. */
export function generateApiKey(): string {
  const secret = randomBase62(SECRET_LENGTH);
  const body = `${KEY_PREFIX}_${KEY_VERSION}_${secret}`;
  return `${body}_${checksumOf(body)}`;
}

/** Checks the shape and the checksum of a presented key, without any lookup. */
export function parseApiKey(key: string): KeyParse {
  const match = KEY_PATTERN.exec(key);
  if (!match) return { ok: false, reason: 'malformed' };
  const body = key.slice(0, key.length - CHECKSUM_LENGTH - 1);
  return checksumOf(body) === match[2] ? { ok: true, key } : { ok: false, reason: 'checksum' };
}

/** Hex SHA-256 of the key: the only form in which keys are stored. */
export async function hashApiKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** A short random id for key records, e.g. `key_8f3KQ2mZ`. */
export function generateId(prefix: string): string {
  return `${prefix}_${randomBase62(10)}`;
}

export function checksumOf(text: string): string {
  let n = crc32(new TextEncoder().encode(text));
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function randomBase62(length: number): string {
  // Rejection sampling keeps every character uniform (256 is not a multiple of 62).
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
