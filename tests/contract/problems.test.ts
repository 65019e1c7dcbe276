// The section 7 catalogue: titles, statuses and type anchors, exactly as the spec lists them.
import { describe, expect, it } from 'vitest';
import { PROBLEM_CATALOGUE, problem, toProblemDocument, ProblemDocumentSchema } from '../../src/contract/index.ts';

const SPEC_TABLE: [number, string, string][] = [
  [400, '#400-validation-error', 'Validation error'],
  [400, '#400-validation-error', 'Embedding input too large error'],
  [400, '#400-validation-error', 'Unsupported embedding dimension error'],
  [400, '#400-validation-error', 'Unsupported embedding task error'],
  [401, '#401-not-authenticated', 'Unauthorized API key error'],
  [401, '#401-not-authenticated', 'Incorrect API key error'],
  [402, '#402-payment-required', 'Account overdue error'],
  [403, '#403-access-forbidden', 'Access forbidden error'],
  [403, '#403-access-forbidden', 'No subscription error'],
  [413, '#413-request-too-large', 'Request too large error'],
  [500, '#500-internal-server-error', 'Internal server error'],
];

describe('problem catalogue', () => {
  it.each(SPEC_TABLE)('has %i %s "%s"', (status, anchor, title) => {
    const entry = Object.values(PROBLEM_CATALOGUE).find((e) => e.title === title);
    expect(entry).toBeDefined();
    expect(entry!.status).toBe(status);
    expect(`#${entry!.anchor}`).toBe(anchor);
  });

  it('builds a problem document with type under {docs_url}/api-reference/errors and a null instance', () => {
    const doc = toProblemDocument(problem('accountOverdue', 'pay'), 'https://docs.example.com/');
    expect(doc).toEqual({
      type: 'https://docs.example.com/api-reference/errors#402-payment-required',
      title: 'Account overdue error',
      status: 402,
      detail: 'pay',
      instance: null,
    });
    expect(ProblemDocumentSchema.parse(doc)).toEqual(doc);
  });
});
