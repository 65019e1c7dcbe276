// What an operation answers (src/operations/): the response body and the tokens it fed the model,
// or a problem.
import type { Problem } from '../contract/index.ts';

/** What an operation answers: the response body, and the tokens fed to the model (for logs and metrics). */
export interface Answer<T> {
  readonly body: T;
  readonly inputTokens: number | null;
}

export type Outcome<T> = { readonly ok: true; readonly value: Answer<T> } | { readonly ok: false; readonly problem: Problem };

export const answer = <T>(body: T, inputTokens: number | null = null): Outcome<T> => ({ ok: true, value: { body, inputTokens } });
