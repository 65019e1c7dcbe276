// Every rule of spec 2.1 and section 8, through the pure validation function.
import { describe, expect, it } from 'vitest';
import { validateEmbeddingRequest, textsOf, type ModelCapabilities } from '../../src/contract/index.ts';

const caps: ModelCapabilities = { modelName: 'legal-2-embedder', maxDimensions: 256, tasks: ['retrieval/query', 'retrieval/document'] };
const base = { model: 'legal-2-embedder', texts: ['Lease'] };

function detailOf(body: unknown, c = caps) {
  const r = validateEmbeddingRequest(body, c);
  if (r.ok) throw new Error('expected a problem');
  return { code: r.problem.code, detail: r.problem.detail };
}

describe('embedding request validation', () => {
  it('accepts a minimal request and fills the defaults', () => {
    const r = validateEmbeddingRequest(base, caps);
    expect(r).toEqual({ ok: true, value: { ...base, task: null, overflow_strategy: 'drop_end', dimensions: null, output_dtype: 'float' } });
  });

  it('accepts a single string as texts', () => {
    const r = validateEmbeddingRequest({ ...base, texts: 'A statute' }, caps);
    expect(r.ok && textsOf(r.value)).toEqual(['A statute']);
  });

  it('accepts every allowed value explicitly', () => {
    for (const task of ['retrieval/query', 'retrieval/document', null]) {
      const r = validateEmbeddingRequest({ ...base, task, overflow_strategy: null, dimensions: 256 }, caps);
      expect(r.ok).toBe(true);
    }
  });

  it.each([
    [{ texts: ['a'] }, 'model is required'],
    [{ ...base, model: 'other-model' }, 'model must be "legal-2-embedder"'],
    [{ model: 'legal-2-embedder' }, 'texts is required'],
    [{ ...base, texts: 5 }, 'texts must be a string or an array of 1 to 128 strings'],
    [{ ...base, texts: [] }, 'texts must hold at least 1 text'],
    [{ ...base, texts: Array(129).fill('x') }, 'texts must hold at most 128 texts'],
    [{ ...base, texts: ['a', 'b', 'c', ' \n\t'] }, 'texts[3] must contain at least one non-whitespace character'],
    [{ ...base, texts: '   ' }, 'texts must contain at least one non-whitespace character'],
    [{ ...base, texts: ['ok', '\u0085\u00a0\u2028\u3000'] }, 'texts[1] must contain at least one non-whitespace character'], // Unicode White_Space, NEL included
    [{ ...base, texts: ['a', 7] }, 'texts[1] must be a string'],
    [{ ...base, task: 'classification' }, 'task must be one of "retrieval/query", "retrieval/document" or null'],
    [{ ...base, overflow_strategy: 'drop_start' }, 'overflow_strategy must be "drop_end" or null'],
    [{ ...base, dimensions: 0 }, 'dimensions must be an integer of at least 1, or null'],
    [{ ...base, dimensions: 1.5 }, 'dimensions must be an integer of at least 1, or null'],
    [{ ...base, dimensions: '64' }, 'dimensions must be an integer of at least 1, or null'],
    [{ ...base, input: 'x' }, 'the request has unknown field "input"; allowed fields are model, texts, task, overflow_strategy, dimensions, output_dtype'],
    [[1, 2], 'the request body must be a JSON object'],
    [null, 'the request body must be a JSON object'],
  ])('rejects %j: %s', (body, expected) => {
    expect(detailOf(body)).toEqual({ code: 'validation', detail: expected });
  });

  it('names every unknown field', () => {
    expect(detailOf({ ...base, foo: 1, bar: 2 }).detail).toContain('unknown fields "foo", "bar"');
  });

  it('accepts exactly 128 texts', () => {
    expect(validateEmbeddingRequest({ ...base, texts: Array(128).fill('x') }, caps).ok).toBe(true);
  });

  it('answers dimensions above the maximum with Unsupported embedding dimension', () => {
    expect(detailOf({ ...base, dimensions: 257 })).toEqual({
      code: 'unsupportedDimension',
      detail: 'dimensions 257 exceeds the maximum of 256 for model "legal-2-embedder"; pass an integer from 1 to 256, or null for the default',
    });
  });

  // biome-ignore lint/correctness/noPrecisionLoss: the point is a number past 2^53, as a client may send it
  it.each([1e20, 9007199254740993, 2 ** 53])('answers any integer above the maximum (%d) with Unsupported embedding dimension, not a validation error', (dimensions) => {
    expect(detailOf({ ...base, dimensions }).code).toBe('unsupportedDimension');
  });

  it('answers a task the model lacks with Unsupported embedding task', () => {
    const r = detailOf({ ...base, task: 'retrieval/query' }, { ...caps, tasks: ['retrieval/document'] });
    expect(r.code).toBe('unsupportedTask');
    expect(r.detail).toContain('task "retrieval/query" is not supported');
  });

  it('uses the configured model name', () => {
    const c = { ...caps, modelName: 'my-model' };
    expect(validateEmbeddingRequest({ ...base, model: 'my-model' }, c).ok).toBe(true);
    expect(detailOf(base, c).detail).toBe('model must be "my-model"');
  });
});
