// One lease per request (src/embedder/admission.ts): its two gates (the meter, the queue), commit
// and settle; the embedder using the lease's room instead of reserving again; and the HTTP
// pipeline reserving from the declared size before reading a body, /invocations included.
import { describe, expect, it } from 'vitest';
import { problem, type Problem } from '../../src/contract/index.ts';
import { openLease, type UsageGate } from '../../src/embedder/admission.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { DEFAULT_SCHEDULER_LIMITS } from '../../src/embedder/scheduler.ts';
import { createApp } from '../../src/http/app.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

/** A meter gate that records what it is asked. */
function usageGate(answers: { admit?: Problem; charge?: Problem } = {}) {
  const calls: string[] = [];
  const gate: UsageGate = {
    admit: async () => (calls.push('admit'), answers.admit ?? null),
    charge: async (tokens) => (calls.push(`charge ${tokens}`), answers.charge ?? null),
    settle: async (tokens) => void calls.push(`settle ${tokens}`),
    headers: () => ({ ratelimit: 'r=1' }),
  };
  return { gate, calls };
}

const smallQueue = (maxQueueTokens: number) => createEmbedder(fakeSettings({ max_input_tokens: 64 }), createFakeBackend(), { ...DEFAULT_SCHEDULER_LIMITS, maxQueueTokens });

describe('openLease', () => {
  it('admits at the meter, holds queue room, commits the exact tokens, settles once and gives the room back', async () => {
    const embedder = smallQueue(100);
    const { gate, calls } = usageGate();
    const opened = await openLease({ usage: gate, queue: embedder.runtime.reserve, tokens: 60 });
    if (!opened.ok) throw new Error(opened.problem.detail ?? 'refused');
    const lease = opened.value;
    expect(lease.room?.tokens).toBe(60);
    // The held room is seen by everyone else: 60 + 50 passes the queue's 100.
    expect(embedder.runtime.reserve(50)).toMatchObject({ ok: false, problem: { code: 'unavailable' } });
    expect(await lease.commit(7)).toBeNull();
    expect(lease.headers()).toEqual({ ratelimit: 'r=1' });
    await lease.settle(7);
    await lease.settle(7);
    expect(calls).toEqual(['admit', 'charge 7', 'settle 7']);
    const after = embedder.runtime.reserve(100);
    expect(after.ok).toBe(true);
  });

  it('a meter refusal takes no queue room; a full queue gives the meter its place back', async () => {
    const embedder = smallQueue(100);
    const limited = problem('rateLimited', 'slow down');
    const refused = usageGate({ admit: limited });
    expect(await openLease({ usage: refused.gate, queue: embedder.runtime.reserve, tokens: 60 })).toEqual({ ok: false, problem: limited });
    // Nothing was held: another request can take the whole queue, which is then full for the next lease.
    const other = embedder.runtime.reserve(100);
    expect(other.ok).toBe(true);
    const full = usageGate();
    const outcome = await openLease({ usage: full.gate, queue: embedder.runtime.reserve, tokens: 60 });
    expect(outcome).toMatchObject({ ok: false, problem: { code: 'unavailable', detail: expect.stringMatching(/^the server is at capacity/) } });
    expect(full.calls).toEqual(['admit', 'settle null']);
  });

  it('without a declared size it takes no room: the embedder holds room for its own estimate', async () => {
    const opened = await openLease({ queue: smallQueue(100).runtime.reserve, tokens: null });
    expect(opened.ok && opened.value.room).toBeNull();
  });
});

describe('the embedder under a lease', () => {
  it('uses the room the lease holds (no second reservation) and commits the exact tokens before the model runs', async () => {
    const embedder = smallQueue(40);
    const { gate, calls } = usageGate();
    const opened = await openLease({ usage: gate, queue: embedder.runtime.reserve, tokens: 30 });
    if (!opened.ok) throw new Error('no lease');
    // Reserving its own estimate (~4 texts × 10 tokens) beside the lease's 30 would pass the queue's 40.
    const texts = ['one two three four five six seven', 'eight nine ten eleven twelve thirteen', 'a b c d e f g', 'h i j k l m n'];
    const result = await embedder.embed({ texts, task: null, overflowStrategy: null, dimensions: null }, { lease: opened.value });
    expect(result.ok).toBe(true);
    expect(calls).toEqual(['admit', `charge ${result.ok ? result.value.inputTokens : -1}`]);
    await opened.value.settle(result.ok ? result.value.inputTokens : null);
    expect(embedder.runtime.stats().queuedTokens).toBe(0);
    expect(embedder.runtime.reserve(40).ok).toBe(true);
  });

  it('a commit refused (rate limit, quota) refuses the request before the model runs', async () => {
    const backend = createFakeBackend();
    const embedder = createEmbedder(fakeSettings(), backend);
    const quota = problem('quotaExceeded', 'the month is used up');
    const opened = await openLease({ usage: usageGate({ charge: quota }).gate, tokens: null });
    if (!opened.ok) throw new Error('no lease');
    expect(await embedder.embed({ texts: ['a b'], task: null, overflowStrategy: null, dimensions: null }, { lease: opened.value })).toEqual({ ok: false, problem: quota });
    expect(backend.calls).toEqual([]);
  });
});

describe('the HTTP pipeline', () => {
  const body = JSON.stringify({ model: 'legal-2-embedder', texts: ['x '.repeat(2000)] });
  /** A body that records whether anyone read it. */
  function watchedBody() {
    const seen = { read: false };
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        seen.read = true;
        controller.enqueue(new TextEncoder().encode(body));
        controller.close();
      },
    }, { highWaterMark: 0 }); // pulled only when read
    return { stream, seen };
  }

  it('a full queue refuses a request from its declared size with a 503, without reading the body', async () => {
    const embedder = smallQueue(600);
    const app = createApp({ embedder });
    const held = embedder.runtime.reserve(500); // another request's room
    if (!held.ok) throw new Error('no room');
    const { stream, seen } = watchedBody();
    const res = await app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body: stream, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^the server is at capacity \(the queue holds 0 tokens \(and 500 more being tokenised\)/);
    expect(seen.read).toBe(false);
    held.value.release();
    const ok = await app.request('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(ok.status).toBe(200);
    expect(embedder.runtime.reserve(600).ok).toBe(true); // every lease gave its room back
  });

  it('/invocations reserves for the inner body as the direct route does', async () => {
    const embedder = smallQueue(600);
    const app = createApp({ embedder, deployment: 'proxy' });
    const held = embedder.runtime.reserve(500);
    if (!held.ok) throw new Error('no room');
    const invoke = () => app.request('/invocations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ path: '/v1/embeddings', data: JSON.parse(body) }) });
    expect((await invoke()).status).toBe(503);
    held.value.release();
    const ok = await invoke();
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toMatch(/\S/);
  });
});
