// A model's fingerprint: a short hash of what decides its vectors, the served ONNX graph, the
// tokenizer and lexembed.json (SHA-256 over the three files' bytes in that order). The same value
// in every runtime: Node hashes the files on disk (node/runtime/load-model.ts), the edge and the
// browser hash them here as they stream in through the fetch transformers.js loads them with, so
// an index made in one runtime can be checked against a model loaded in another. Beside it, the
// vectors fingerprint: the same files, but of lexembed.json only what makes a document's stored
// vectors, so a release that changes the query side alone keeps an index. Pure apart from fetch
// and the Cache API, which it is given or finds.
import { Sha256 } from './sha256.ts';
import { parseModelSettings, type ModelSettings } from './settings.ts';

/**
 * What a document's stored vectors (an index's passages, `lexembed embed --task retrieval/document`)
 * depend on, part by part, each `sha256:` and 16 hex digits. A release that leaves all four as
 * they were makes the same document vectors, whatever else it changes (the query side, the query
 * neighbours, the reranker, the id, the description).
 */
export interface VectorsFingerprint {
  /** The served ONNX graph file's bytes (fp32, fp16, int8 or fused: the one loaded). */
  readonly graph: string;
  /** tokenizer.json's bytes. */
  readonly tokenizer: string;
  /** lexembed.json's settings that decide how a document is read and made a dense vector (documentSettingsOf). */
  readonly document: string;
  /** lexembed.json's sparse table as it weighs a document (sparseDocumentTableOf); null where the model has none. */
  readonly sparse: string | null;
}

export type VectorPart = keyof VectorsFingerprint;

/** Each part in words, for a refusal that names what differs. */
export const VECTOR_PARTS: Readonly<Record<VectorPart, string>> = {
  graph: 'the ONNX graph (the weights)',
  tokenizer: 'the tokenizer (tokenizer.json)',
  document: "lexembed.json's document settings (max_input_tokens, pooling, dimensions, the retrieval/document prompt, document_form)",
  sparse: "lexembed.json's sparse table for documents (idf, term weights, stem classes, word pairs, k1, b, avg_len)",
};

/** The parts a document's dense vector depends on (its sparse vector: tokenizer, document and sparse). */
export const DENSE_PARTS: readonly VectorPart[] = ['graph', 'tokenizer', 'document'];

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

/**
 * The vectors fingerprint from the graph file's SHA-256 digest, tokenizer.json's bytes and
 * lexembed.json's value (as JSON.parse reads it; its defaults applied, so a default written out
 * and one left out hash alike). Node and the streaming path both call this.
 * @example vectorsFingerprint(graphDigest, tokenizerBytes, JSON.parse(lexembedJson)) // { graph: 'sha256:…', tokenizer: …, document: …, sparse: … }
 */
export function vectorsFingerprint(graphDigest: Uint8Array, tokenizer: Uint8Array, lexembedJson: unknown): VectorsFingerprint {
  const settings = parseModelSettings(lexembedJson, 'lexembed.json');
  const sparse = sparseDocumentTableOf(settings);
  return {
    graph: formatFingerprint(graphDigest),
    tokenizer: formatFingerprint(new Sha256().update(tokenizer).digest()),
    document: hashJson(documentSettingsOf(settings)),
    sparse: sparse && hashJson(sparse),
  };
}

/**
 * The settings a stored document's dense vector depends on beside the graph and the tokenizer: the
 * text is read as `prompt + text` (the retrieval/document prompt), cut at max_input_tokens, its
 * first id replaced by document_form's marker (at full width, max, unless the form says
 * otherwise), pooled (`pooling`), and cut to dimensions.default (what an index and `embed`
 * without --dimensions store) and normalised. Not in it: dtype (the graph loaded is hashed
 * itself), matryoshka (a list of widths offered), tasks, prompts of other tasks, the reranker.
 */
export function documentSettingsOf(settings: ModelSettings) {
  const form = settings.document_form;
  return {
    max_input_tokens: settings.max_input_tokens,
    prompt: settings.prompts['retrieval/document'] ?? '',
    pooling: settings.pooling,
    dimensions: { default: settings.dimensions.default, max: settings.dimensions.max },
    document_form: form ? { marker: form.marker, replaces: form.replaces, full_width_only: form.full_width_only } : null,
  };
}

/**
 * The sparse table as a document's `relative` vector uses it (sparse.ts sparseVector with query
 * false): k1, b and avg_len saturate a piece's count, idf says which pieces count, weight ÷ idf
 * weighs them (weight absent: idf, a factor of 1), canonical folds stem classes, bigrams adds the
 * word pairs. Not in it: expansion (query neighbours: a query's vector only) and recipe (a label).
 * Null without a sparse table.
 */
export function sparseDocumentTableOf(settings: ModelSettings) {
  const table = settings.sparse;
  if (!table) return null;
  const pairs = table.bigrams;
  return {
    k1: table.k1,
    b: table.b,
    avg_len: table.avg_len,
    idf: table.idf,
    weight: table.weight ?? table.idf,
    canonical: table.canonical ?? null,
    bigrams: pairs ? { rule: pairs.rule, weight: pairs.weight, slots: pairs.slots, continuations: pairs.continuations } : null,
  };
}

/**
 * The parts of `now` that differ from `made` among `parts` (both absent or equal: none).
 * @example vectorPartsThatDiffer(index.vectors, model.vectors) // ['sparse']
 */
export function vectorPartsThatDiffer(made: Partial<VectorsFingerprint>, now: Partial<VectorsFingerprint>, parts: readonly VectorPart[] = ['graph', 'tokenizer', 'document', 'sparse']): VectorPart[] {
  return parts.filter((part) => (made[part] ?? null) !== (now[part] ?? null));
}

/** The differing parts in words: "the tokenizer (tokenizer.json) and lexembed.json's sparse table …". */
export function describeVectorParts(parts: readonly VectorPart[]): string {
  const words = parts.map((p) => VECTOR_PARTS[p]);
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
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
  /** The fingerprint and the vectors fingerprint of the same files (read as `fingerprint` reads them); null when one cannot be read. */
  fingerprints(graphFile: string, fallback?: (file: string) => Promise<Response | undefined>): Promise<ModelFingerprints | null>;
}

/** A loaded model's identity: the whole fingerprint (servers show it) and the vectors fingerprint (indexes check it). */
export interface ModelFingerprints {
  readonly fingerprint: string;
  readonly vectors: VectorsFingerprint;
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
  const fingerprints = async (graphFile: string, fallback?: (file: string) => Promise<Response | undefined>): Promise<ModelFingerprints | null> => {
    for (const file of [graphFile, 'tokenizer.json', 'lexembed.json']) {
      if (graphs.has(file) || small.has(file)) continue;
      const response = await fallback?.(file);
      if (!response?.ok) return null;
      await hashed(file, response).arrayBuffer();
    }
    const graph = graphs.get(graphFile);
    if (!graph) return null;
    const tokenizer = small.get('tokenizer.json')!;
    const settings = small.get('lexembed.json')!;
    const all = graph.clone();
    all.update(tokenizer);
    all.update(settings);
    return {
      fingerprint: formatFingerprint(all.digest()),
      vectors: vectorsFingerprint(graph.clone().digest(), tokenizer, JSON.parse(new TextDecoder().decode(settings))),
    };
  };
  return {
    fetch: wrapped,
    fingerprints,
    fingerprint: async (graphFile, fallback) => (await fingerprints(graphFile, fallback))?.fingerprint ?? null,
  };
}

/** SHA-256 of a value's JSON (built here with its keys in a fixed order), as a fingerprint. */
function hashJson(value: unknown): string {
  return formatFingerprint(new Sha256().update(new TextEncoder().encode(JSON.stringify(value))).digest());
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
