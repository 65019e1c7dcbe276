// What the ecosystem tests share: four statutes a retrieval must tell apart, the cosine of unit
// vectors, and a real `lexembed serve` (static model: fast) with a fresh file key store and its key.
import { STATIC_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { useServer } from '../support/cli.ts';

export const MODEL = 'legal-2-embedder-static';
export const STATUTES = [
  'A landlord shall return the security deposit to the tenant within 30 days after the tenancy ends, less lawful deductions for unpaid rent and damage.',
  'No person shall operate a motor vehicle on a highway while the person’s ability to operate it is impaired by alcohol or a drug.',
  'An employer shall pay an employee overtime at a rate of one and one-half times the regular wage for hours worked in excess of forty in a workweek.',
  'A will is not valid unless it is in writing and signed at its end by the testator in the presence of two witnesses.',
];

/** The cosine of two unit vectors: their dot product. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

/** The server for the calling test file (static model: fast); read `url` and `key` in tests. */
export function useKeyedServer(): { readonly url: string; readonly key: string; readonly dir: string } {
  return useServer(STATIC_MODEL_DIR);
}
