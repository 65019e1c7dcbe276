// A model's fingerprint: a short hash of what decides its vectors, the served ONNX graph, the
// tokenizer and lexembed.json (SHA-256 over the three files' bytes in that order). The same value
// in every runtime: Node hashes the files on disk (node/runtime/load-model.ts), the edge and the
// browser hash them here as they stream in through the fetch transformers.js loads them with, so
// an index made in one runtime can be checked against a model loaded in another. Pure apart from
// fetch and the Cache API, which it is given or finds.
import { Sha256 } from './sha256.ts';

/** What a fingerprint looks like: `sha256:` and the first 16 hex digits. */
export const formatFingerprint = (digest: Uint8Array): string =>
  `sha256:${Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('')}`;

/** The graph file transformers.js loads for `dtype` (its suffixes: fp16 → _fp16, q8 → _quantized), or the fused graph. */
export function graphFileOf(dtype: string, graph: 'plain' | 'fused' = 'plain'): string {
  if (graph === 'fused') return 'onnx/model_fused.onnx';
  return dtype === 'fp16' ? 'onnx/model_fp16.onnx' : dtype === 'q8' ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx';
}

/** The folder-relative name of a model file the fingerprint covers, or null (a URL's path decides). */
export function fingerprintedFile(url: string): string | null {
  const path = url.split(/[?#]/)[0]!;
  const match = /(?:^|\/)(onnx\/[^/]+\.onnx|tokenizer\.json|lexembed\.json)$/.exec(path);
  return match ? match[1]! : null;
}

export interface FingerprintingFetch {
  /** Use in place of the fetch it wraps: each model file's body is hashed as its reader reads it. */
  readonly fetch: typeof fetch;
  /**
   * The fingerprint for the graph that was loaded (`onnx/model_quantized.onnx`, …), once it and both
   * small files have been read whole; a file the loader took from elsewhere (transformers.js's
   * Cache API copy) is read from `fallback` (a plain fetch: this hashes what it answers). Null when
   * one of them cannot be read.
   */
  fingerprint(graphFile: string, fallback?: (file: string) => Promise<Response | undefined>): Promise<string | null>;
}

/** Wraps `inner` so the fingerprint of the files fetched through it can be told afterwards. */
export function fingerprintingFetch(inner: typeof fetch): FingerprintingFetch {
  const graphs = new Map<string, Sha256>();
  const small = new Map<string, Uint8Array>();
  const hashed = (file: string, response: Response): Response => {
    if (response.status !== 200 || !response.body) return response; // a 206 or a failure is not the file
    const graph = file.endsWith('.onnx') ? new Sha256() : null;
    const chunks: Uint8Array[] = [];
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (graph) graph.update(chunk);
          else chunks.push(chunk.slice());
          controller.enqueue(chunk);
        },
        flush() {
          if (graph) graphs.set(file, graph);
          else small.set(file, concat(chunks));
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const wrapped: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const response = await inner(input, init);
    const file = fingerprintedFile(url);
    const whole = (init?.method ?? 'GET').toUpperCase() === 'GET' && !new Headers(init?.headers).has('range');
    return file && whole ? hashed(file, response) : response;
  };
  return {
    fetch: wrapped,
    async fingerprint(graphFile, fallback) {
      for (const file of [graphFile, 'tokenizer.json', 'lexembed.json']) {
        if (graphs.has(file) || small.has(file)) continue;
        const response = await fallback?.(file);
        if (!response?.ok) return null;
        await hashed(file, response).arrayBuffer();
      }
      const graph = graphs.get(graphFile);
      if (!graph) return null;
      const all = graph.clone();
      all.update(small.get('tokenizer.json')!);
      all.update(small.get('lexembed.json')!);
      return formatFingerprint(all.digest());
    },
  };
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
