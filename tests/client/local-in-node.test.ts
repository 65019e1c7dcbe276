// createLocalClient is for browsers and web workers. Called in Node it must fail once, in a way
// the caller can catch, saying what to use instead; never as an unhandled rejection that ends the
// process (vitest fails a run that has one).
import { expect, it } from 'vitest';
import { createLocalClient } from '../../src/local/client.ts';

it('in Node, ready and every call reject with what to use instead, and nothing is left unhandled', async () => {
  const client = createLocalClient({ model: '/models/legal-2-embedder-static/' });
  await expect(client.ready).rejects.toThrow(/runs the model in a browser or a web worker.*loadModelFolder \(lexembed\/server\).*npx lexembed serve/);
  await expect(client.embeddings.create({ model: 'legal-2-embedder', texts: 'Lease' })).rejects.toThrow(/browser or a web worker/);
  await expect(client.chunkText('Lease')).rejects.toThrow(/browser or a web worker/);
});

it('a client whose ready is never awaited leaves no unhandled rejection behind', async () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', record);
  try {
    createLocalClient({ model: '/models/legal-2-embedder-static/' });
    // Unhandled rejections are reported after the microtask queue drains: give it two macrotask turns.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', record);
  }
});
