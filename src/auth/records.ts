// Key and account records as zod schemas (the stores persist exactly these shapes).
import { z } from 'zod';
import type { Problem } from '../contract/problems.ts';

/** The API's operations a key can be allowed to use (spec section 1). */
export const RESOURCES = ['embeddings', 'enrichments', 'rerankings', 'extractions', 'classifications'] as const;
export type Resource = (typeof RESOURCES)[number];

export const KeyRecordSchema = z.object({
  id: z.string(),
  account: z.string(),
  /** Hex SHA-256 of the key; the key itself is never stored. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  created: z.string(),
  expires: z.string().nullable(),
  revoked: z.string().nullable(),
  resources: z.array(z.enum(RESOURCES)),
});
export type KeyRecord = z.infer<typeof KeyRecordSchema>;

export const AccountSchema = z.object({
  id: z.string(),
  active: z.boolean(),
  verified: z.boolean(),
  subscribed: z.boolean(),
  overdue: z.boolean(),
});
export type Account = z.infer<typeof AccountSchema>;
export type AccountPatch = Partial<Omit<Account, 'id'>>;

/** New accounts are active, verified and subscribed. */
export function newAccount(id: string, patch: AccountPatch = {}): Account {
  return { id, active: true, verified: true, subscribed: true, overdue: false, ...patch };
}

export type KeyState = 'active' | 'expired' | 'revoked';
export function keyState(record: KeyRecord, now: Date): KeyState {
  if (record.revoked) return 'revoked';
  if (record.expires && Date.parse(record.expires) <= now.getTime()) return 'expired';
  return 'active';
}

/** The authentication seam the HTTP app calls: return a problem to refuse, null to allow. */
export type Authenticate = (request: { authorization: string | null; resource: Resource }) => Problem | null | Promise<Problem | null>;
