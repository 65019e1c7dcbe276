// The pure access decision: each row of the order, and that earlier rows win.
import { describe, expect, it } from 'vitest';
import { decideAccess } from '../../src/auth/decide.ts';
import { generateApiKey } from '../../src/auth/key-format.ts';
import { newAccount, type KeyRecord } from '../../src/auth/records.ts';

const now = new Date('2026-06-01T00:00:00Z');
const key = generateApiKey();
const header = `Bearer ${key}`;
const record: KeyRecord = { id: 'key_1', account: 'acme', hash: 'a'.repeat(64), created: '2026-01-01T00:00:00Z', expires: null, revoked: null, resources: ['embeddings'] };
const account = newAccount('acme');
const decide = (h: string | null, r: KeyRecord | null = record, a = account) => {
  const p = decideAccess(h, r, a, 'embeddings', now);
  return p && { code: p.code, detail: p.detail };
};

describe('decideAccess', () => {
  it('allows an active key of a good account', () => expect(decide(header)).toBeNull());

  it.each([
    ['missing', null, /no API key was sent/],
    ['empty', '  ', /no API key was sent/],
    ['not Bearer', `Basic ${key}`, /Bearer scheme/],
    ['malformed', 'Bearer sk-abc', /malformed/],
    ['bad checksum', `Bearer ${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`, /checksum/],
  ])('401 Incorrect API key when %s', (_, h, detail) => {
    const r = decide(h);
    expect(r?.code).toBe('incorrectKey');
    expect(r?.detail).toMatch(detail);
  });

  it('401 Incorrect API key when unknown, expired or revoked', () => {
    expect(decide(header, null)?.code).toBe('incorrectKey');
    expect(decide(header, { ...record, expires: '2026-05-31T23:59:59Z' })?.detail).toMatch(/expired/);
    expect(decide(header, { ...record, revoked: '2026-05-01T00:00:00Z' })?.detail).toMatch(/revoked/);
  });

  it('401s challenge with WWW-Authenticate: Bearer, naming invalid_token when a key was sent; other refusals do not', () => {
    const challenge = (h: string | null, r: KeyRecord | null = record, a = account) => decideAccess(h, r, a, 'embeddings', now)?.headers?.['www-authenticate'];
    expect(challenge(null)).toBe('Bearer');
    expect(challenge('  ')).toBe('Bearer');
    expect(challenge('Bearer sk-abc')).toBe('Bearer error="invalid_token"');
    expect(challenge(header, null)).toBe('Bearer error="invalid_token"');
    expect(challenge(header, { ...record, resources: ['rerankings'] })).toBe('Bearer error="invalid_token"');
    expect(challenge(header, record, { ...account, overdue: true })).toBeUndefined();
  });

  it('401 Unauthorized API key for a key without the resource', () => {
    expect(decide(header, { ...record, resources: ['rerankings'] })?.code).toBe('unauthorizedKey');
  });

  it('402, then 403 no subscription, then 403 forbidden', () => {
    expect(decide(header, record, { ...account, overdue: true })?.code).toBe('accountOverdue');
    expect(decide(header, record, { ...account, subscribed: false })?.code).toBe('noSubscription');
    expect(decide(header, record, { ...account, active: false })?.code).toBe('accessForbidden');
    expect(decide(header, record, { ...account, verified: false })?.detail).toMatch(/e-mail/);
  });

  it('applies the order: revoked beats overdue; overdue beats unsubscribed; unsubscribed beats inactive', () => {
    const bad = { ...account, overdue: true, subscribed: false, active: false };
    expect(decide(header, { ...record, revoked: 'x' }, bad)?.code).toBe('incorrectKey');
    expect(decide(header, { ...record, resources: [] }, bad)?.code).toBe('unauthorizedKey');
    expect(decide(header, record, bad)?.code).toBe('accountOverdue');
    expect(decide(header, record, { ...bad, overdue: false })?.code).toBe('noSubscription');
  });

  it('never echoes key material', () => {
    for (const h of [header, `Bearer ${key}x`, `Basic ${key}`]) {
      for (const r of [null, record, { ...record, revoked: 'x' }]) expect(JSON.stringify(decide(h, r))).not.toContain(key.slice(7, 20));
    }
  });
});
