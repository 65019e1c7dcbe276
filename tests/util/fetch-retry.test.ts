// The model-file fetch of the local client (browser demo, workers): retried on a dropped
// connection or a server's 5xx, not on a 404 or an abort.
import { describe, expect, it } from 'vitest';
import { retryingFetch } from '../../src/util/fetch-retry.ts';

/** A fetch answering from a script: an Error is thrown (no answer), a number is that status. */
function scripted(steps: (number | Error)[]) {
  const calls: string[] = [];
  const fetchLike = (async (input: RequestInfo | URL) => {
    calls.push(String(input));
    const step = steps.shift() ?? 200;
    if (step instanceof Error) throw step;
    return new Response(String(step), { status: step });
  }) as typeof fetch;
  return { fetchLike, calls };
}

describe('retryingFetch', () => {
  it('tries again after no answer and after a 503, then answers', async () => {
    const { fetchLike, calls } = scripted([new TypeError('network error'), 503, 200]);
    const res = await retryingFetch(fetchLike, [0, 0])('/models/x/onnx/model.onnx');
    expect(res.status).toBe(200);
    expect(calls).toHaveLength(3);
  });

  it('gives up after its delays: the last answer, or the last error', async () => {
    expect((await retryingFetch(scripted([503, 503, 503]).fetchLike, [0, 0])('/a')).status).toBe(503);
    await expect(retryingFetch(scripted([new TypeError('a'), new TypeError('b'), new TypeError('network error')]).fetchLike, [0, 0])('/a')).rejects.toThrow('network error');
  });

  it('does not retry a 404 or a request its caller aborted, and wraps only once', async () => {
    const missing = scripted([404]);
    expect((await retryingFetch(missing.fetchLike, [0, 0])('/a')).status).toBe(404);
    expect(missing.calls).toHaveLength(1);
    const aborted = scripted([new DOMException('aborted', 'AbortError')]);
    const controller = new AbortController();
    controller.abort();
    await expect(retryingFetch(aborted.fetchLike, [0, 0])('/a', { signal: controller.signal })).rejects.toThrow('aborted');
    expect(aborted.calls).toHaveLength(1);
    const once = retryingFetch(missing.fetchLike);
    expect(retryingFetch(once)).toBe(once);
  });
});
