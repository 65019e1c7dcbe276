// Key and account records as zod schemas (the stores persist exactly these shapes).
import { z } from 'zod';
import type { Problem } from '../contract/problems.ts';

/** The API's operations a key can be allowed to use (spec section 1). */
export const RESOURCES = ['embeddings', 'enrichments', 'rerankings', 'extractions', 'classifications'] as const;
export type Resource = (typeof RESOURCES)[number];
/**
 * Those a lexembed server answers; the others are authenticated and answered 404 (route-table.ts),
 * so `lexembed keys create` offers and accepts only these.
 */
export const SERVED_RESOURCES = ['embeddings', 'rerankings'] as const satisfies readonly Resource[];

export const KeyRecordSchema = z.object({
  id: z.string(),
  account: z.string(),
  /** Hex SHA-256 of the key; the key itself is never stored. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  created: z.string(),
  expires: z.string().nullable(),
  revoked: z.string().nullable(),
  resources: z.array(z.enum(RESOURCES)),
  /** Requests per minute this key may make (absent or null: no limit). */
  rpm: z.number().int().positive().nullable().optional(),
  /** Input tokens per minute this key may use (absent or null: no limit). */
  tpm: z.number().int().positive().nullable().optional(),
});
export type KeyRecord = z.infer<typeof KeyRecordSchema>;

export const AccountSchema = z.object({
  id: z.string(),
  active: z.boolean(),
  verified: z.boolean(),
  subscribed: z.boolean(),
  overdue: z.boolean(),
  /** Input tokens the account may use per calendar month, UTC (absent or null: no quota). */
  monthly_tokens: z.number().int().positive().nullable().optional(),
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

/** Who a request was allowed as: the key and its account (for metering and limits). */
export interface Principal {
  readonly key: KeyRecord;
  readonly account: Account;
}

/** An authentication decision: a problem refuses; a principal or null (no keys in use) allows. */
export type AuthDecision = Problem | Principal | null;

/** Whether a decision refuses the request. */
export const isRefusal = (decision: AuthDecision): decision is Problem => decision !== null && 'code' in decision;

/** The authentication seam the HTTP app calls: return a problem to refuse, the principal (or null) to allow. */
export type Authenticate = (request: { authorization: string | null; resource: Resource }) => AuthDecision | Promise<AuthDecision>;
