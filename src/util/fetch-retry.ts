// A fetch that tries again when the network hiccups: model files are many megabytes, and a busy
// dev server or a dropped connection must not leave a page on "Could not load: network error".
// Retries (after 0.3 s, then 1 s) a request that got no answer, or a 408, 429 or 5xx; never one
// the caller aborted. Runs anywhere fetch does (browsers, workers, Node, edge).

const RETRYING = Symbol.for('lexembed.retryingFetch');
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

export function retryingFetch(base: typeof fetch, delaysMs: readonly number[] = [300, 1000]): typeof fetch {
  if ((base as { [RETRYING]?: boolean })[RETRYING]) return base;
  const wrapped = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= delaysMs.length;
      try {
        const response = await base(input, init);
        if (last || !RETRY_STATUSES.has(response.status)) return response;
        await response.body?.cancel().catch(() => {});
      } catch (error) {
        if (last || init?.signal?.aborted) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, delaysMs[attempt]));
    }
  };
  return Object.assign(wrapped, { [RETRYING]: true }) as typeof fetch;
}
