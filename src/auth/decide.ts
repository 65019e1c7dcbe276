// The one pure access decision of spec section 5: from the presented Authorization header,
// the key record and account found for it, and the resource, to allow (null) or a problem.
import { problem, type Problem } from '../contract/problems.ts';
import { parseApiKey } from './key-format.ts';
import { keyState, type Account, type KeyRecord, type Resource } from './records.ts';

const CREATE_KEY = 'create a key with `lexembed keys create --account <id>`';

/** Extracts the key from `Authorization: Bearer <key>`, or says why it cannot be used. */
export function presentedKey(authorization: string | null): { ok: true; key: string } | { ok: false; problem: Problem } {
  if (!authorization?.trim()) {
    return { ok: false, problem: problem('incorrectKey', `no API key was sent; send the header "Authorization: Bearer <API_KEY>" (${CREATE_KEY})`) };
  }
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization.trim());
  if (!match) {
    return { ok: false, problem: problem('incorrectKey', 'the Authorization header must use the Bearer scheme: "Authorization: Bearer <API_KEY>"') };
  }
  const parsed = parseApiKey(match[1] ?? '');
  if (!parsed.ok) {
    const why =
      parsed.reason === 'malformed'
        ? 'the API key is malformed; keys look like lxk_v1_<secret>_<checksum>'
        : 'the API key fails its checksum, so it was mistyped or truncated; copy it again exactly';
    return { ok: false, problem: problem('incorrectKey', why) };
  }
  return { ok: true, key: parsed.key };
}

/**
 * Decides access in the order of the spec: 401 incorrect (missing, not Bearer, malformed,
 * bad checksum, unknown, expired, revoked); 401 unauthorised for the resource; 402 overdue;
 * 403 no subscription; 403 inactive or unverified. Never echoes key material. Its 401s carry
 * `WWW-Authenticate` (RFC 9110 11.6.1): `Bearer`, and `error="invalid_token"` when a key was
 * sent (RFC 6750 3.1).
 */
export function decideAccess(
  authorization: string | null,
  record: KeyRecord | null,
  account: Account | null,
  resource: Resource,
  now: Date,
): Problem | null {
  const refused = decide(authorization, record, account, resource, now);
  if (!refused || (refused.code !== 'incorrectKey' && refused.code !== 'unauthorizedKey')) return refused;
  const challenge = authorization?.trim() ? 'Bearer error="invalid_token"' : 'Bearer';
  return { ...refused, headers: { ...refused.headers, 'www-authenticate': challenge } };
}

function decide(authorization: string | null, record: KeyRecord | null, account: Account | null, resource: Resource, now: Date): Problem | null {
  const presented = presentedKey(authorization);
  if (!presented.ok) return presented.problem;
  if (!record) return problem('incorrectKey', `the API key does not exist; check it, or ${CREATE_KEY}`);
  const state = keyState(record, now);
  if (state === 'expired') return problem('incorrectKey', `the API key ${record.id} expired at ${record.expires}; ${CREATE_KEY}`);
  if (state === 'revoked') return problem('incorrectKey', `the API key ${record.id} was revoked; ${CREATE_KEY}`);
  if (!record.resources.includes(resource)) {
    return problem('unauthorizedKey', `the API key ${record.id} is not authorised for ${resource}; create a key with --resources ${resource}`);
  }
  if (!account) return problem('accessForbidden', `the account ${record.account} of this key does not exist; contact the administrator`);
  if (account.overdue) return problem('accountOverdue', `the account ${account.id} has overdue invoices; pay them to restore access`);
  if (!account.subscribed) {
    return problem('noSubscription', `the account ${account.id} is not subscribed to the usage-based API plan; subscribe to use the API`);
  }
  if (!account.active) return problem('accessForbidden', `the account ${account.id} is inactive; contact the administrator to reactivate it`);
  if (!account.verified) return problem('accessForbidden', `the account ${account.id} has not verified its e-mail address; verify it to use the API`);
  return null;
}
