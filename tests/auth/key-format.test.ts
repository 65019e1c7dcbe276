import { describe, expect, it } from 'vitest';
import { checksumOf, generateApiKey, hashApiKey, parseApiKey } from '../../src/auth/key-format.ts';
import { createHashCache } from '../../src/auth/service.ts';

describe('API key format', () => {
  it('generates lxk_v1_<32 base62>_<6 base62> keys that parse', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^lxk_v1_[0-9A-Za-z]{32}_[0-9A-Za-z]{6}$/);
    expect(parseApiKey(key)).toEqual({ ok: true, key });
    expect(new Set(Array.from({ length: 50 }, generateApiKey)).size).toBe(50);
  });

  it('carries at least 160 bits of secret', () => {
    expect(32 * Math.log2(62)).toBeGreaterThanOrEqual(160);
  });

  it('rejects every one-character typo in the secret by checksum', () => {
    const key = generateApiKey();
    const secretStart = 'lxk_v1_'.length;
    for (let i = secretStart; i < secretStart + 32; i++) {
      const typo = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
      expect(parseApiKey(typo)).toEqual({ ok: false, reason: 'checksum' });
    }
  });

  it('rejects malformed keys', () => {
    for (const bad of ['', 'lxk_v1_short_abcdef', 'sk-123', `xyz_v1_${'a'.repeat(32)}_${'a'.repeat(6)}`, `lxk_v2_${'a'.repeat(32)}_${'a'.repeat(6)}`]) {
      expect(parseApiKey(bad)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('checksum is CRC32 in base62 (known vector)', () => {
    // CRC32("123456789") = 0xCBF43926 (the standard check value) = 3421780262 → base62 3jZRME
    expect(checksumOf('123456789')).toBe('3jZRME');
  });

  it('hashes with SHA-256 (hex)', async () => {
    expect(await hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('remembers hashes of presented keys: the same hash as hashApiKey, at most `size` keys, oldest out first', async () => {
    const [a, b, c] = [generateApiKey(), generateApiKey(), generateApiKey()];
    const hashed: string[] = [];
    const hash = createHashCache(2, (key) => {
      hashed.push(key);
      return hashApiKey(key);
    });
    for (const key of [a, b, a, b]) expect(await hash(key)).toBe(await hashApiKey(key));
    expect(hashed).toEqual([a, b]);
    await hash(c); // full: a, the oldest, goes
    await hash(b);
    await hash(a);
    expect(hashed).toEqual([a, b, c, a]);
  });
});
