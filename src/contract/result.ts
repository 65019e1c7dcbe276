// The outcome of a pure contract function: the value, or the problem to answer with.
import type { Problem } from './problems.ts';

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: Problem };
