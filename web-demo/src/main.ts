// The demo page: loads the model in a Web Worker, embeds the sample passages once, and ranks
// them for each query with scores, timings and a similarity heat map; and searches a long
// document (pasted, a text file, or a PDF or DOCX read in the page), cut into token chunks with
// offsets, highlighting the best passages in place and naming their page or paragraph.
import { PASSAGES, SAMPLE_QUERY } from './passages.ts';
import type { Chunk, FromWorker, Mode, ToWorker } from './protocol.ts';
import { SAMPLE_DOCUMENTS } from './samples.ts';
import { messageOf } from '../../src/util/message-of.ts';
import { excerptOf } from '../../src/search-index/excerpt.ts';
import { DocumentError, extractDocument, setPdfWorkerSrc, unitAt, type ExtractedDocument } from '../../src/documents/extract.ts';
import pdfWorkerUrl from 'pdfjs-dist/build/pdf.worker.min.mjs?url';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
let worker: Worker;
let passageVectors: number[][] = [];
/** The passages read as queries: the heat map's rows. */
let passageQueryVectors: number[][] = [];
let nextId = 0;
const waiting = new Map<number, (m: FromWorker) => void>();

function start(mode: Mode) {
  worker?.terminate();
  worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
  $('search-button').setAttribute('disabled', '');
  showLoadProgress(0);
  $('index-document').setAttribute('disabled', '');
  $('document-search').setAttribute('disabled', '');
  documentChunks = [];
  setStatus(mode.kind === 'local' ? 'Loading the model…' : 'Connecting to the server…');
  document.body.dataset.ready = 'false';
  delete document.body.dataset.backend;
  delete document.body.dataset.dtype;
  delete document.body.dataset.graph;
  delete document.body.dataset.modelId;
  delete document.body.dataset.fingerprint;
  worker.onmessage = async (event: MessageEvent<FromWorker>) => {
    const m = event.data;
    if (m.type === 'progress') showLoadProgress(m.fraction);
    else if (m.type === 'ready') {
      showLoadProgress(1);
      document.body.dataset.backend = m.backend;
      if (m.dtype) document.body.dataset.dtype = m.dtype;
      if (m.graph) document.body.dataset.graph = m.graph;
      if (m.modelId) document.body.dataset.modelId = m.modelId;
      if (m.fingerprint) document.body.dataset.fingerprint = m.fingerprint;
      setStatus(`Backend: ${m.backend} — ${m.reason}. Loaded in ${m.loadMs.toFixed(0)} ms. Embedding ${PASSAGES.length} passages…`);
      const t = await embed(PASSAGES.map((p) => p.text), 'retrieval/document');
      passageVectors = t.vectors;
      // The heat map's rows read each passage as a query: two document-form vectors share a slack
      // component (docs/api.md, Tasks) that would inflate passage · passage.
      passageQueryVectors = (await embed(PASSAGES.map((p) => p.text), 'retrieval/query')).vectors;
      const identity = m.modelId ? ` Model ${m.modelId}${m.fingerprint ? ` (${m.fingerprint})` : ''}.` : '';
      setStatus(`Backend: ${m.backend} — ${m.reason}. Loaded in ${m.loadMs.toFixed(0)} ms; ${PASSAGES.length} passages embedded in ${t.ms.toFixed(0)} ms.${identity}`);
      renderHeatmap(null);
      document.body.dataset.ready = 'true';
      $('search-button').removeAttribute('disabled');
      $('index-document').toggleAttribute('disabled', m.backend === 'server');
      if (m.backend === 'server') setDocumentStatus('Chunking uses the in-page model’s tokenizer: choose “In this page” to search a long document.');
    } else if (m.type === 'failed') {
      setStatus(`Could not load: ${m.message}`);
      document.body.dataset.ready = 'failed';
    } else waiting.get(m.id)?.(m), waiting.delete(m.id);
  };
  post({ type: 'init', mode });
}

function post(m: ToWorker) {
  worker.postMessage(m);
}

function embed(texts: string[], task: 'retrieval/query' | 'retrieval/document'): Promise<{ vectors: number[][]; ms: number }> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, (m) => (m.type === 'embedded' ? resolve({ vectors: m.vectors, ms: m.ms }) : reject(new Error(m.type === 'error' ? m.message : 'unexpected'))));
    post({ type: 'embed', id, texts, task });
  });
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

async function search(query: string) {
  const t0 = performance.now();
  const { vectors, ms } = await embed([query], 'retrieval/query');
  const q = vectors[0]!;
  const ranked = PASSAGES.map((p, i) => ({ p, score: dot(q, passageVectors[i]!) })).sort((a, b) => b.score - a.score);
  $('results').innerHTML = '';
  for (const { p, score } of ranked) {
    const li = document.createElement('li');
    li.dataset.testid = 'result';
    li.dataset.id = p.id;
    li.innerHTML = `<span class="score">${score.toFixed(3)}</span><span class="source">${p.source}</span><br>`;
    li.append(p.text);
    $('results').append(li);
  }
  $('timings').textContent = `query embedded in ${ms.toFixed(1)} ms; ranked ${PASSAGES.length} passages in ${(performance.now() - t0 - ms).toFixed(1)} ms`;
  renderHeatmap(q);
  document.body.dataset.searched = String(Number(document.body.dataset.searched ?? 0) + 1);
}

function renderHeatmap(q: number[] | null) {
  const rows = [...(q ? [{ label: 'query', v: q }] : []), ...PASSAGES.map((p, i) => ({ label: p.source, v: passageQueryVectors[i]! }))];
  // Shaded against the map's largest score: a query's score against a document depends on the model (v4.3's and v4.4's are ~0.2–0.6).
  const top = Math.max(1e-6, ...rows.flatMap((r) => passageVectors.map((pv) => dot(r.v, pv))));
  const color = (s: number) => `hsl(210, 80%, ${Math.round(97 - Math.max(0, s / top) * 55)}%)`;
  const head = `<tr><th></th>${PASSAGES.map((p) => `<th title="${p.source}">${p.id.split('-')[0]}</th>`).join('')}</tr>`;
  const body = rows
    .map((r) => `<tr><th title="${r.label}">${r.label}</th>${passageVectors.map((pv) => { const s = dot(r.v, pv); return `<td style="background:${color(s)}" title="${s.toFixed(3)}">${s.toFixed(2)}</td>`; }).join('')}</tr>`)
    .join('');
  $('heatmap').innerHTML = `<table data-testid="heatmap">${head}${body}</table>`;
}

function setStatus(text: string) {
  $('status').textContent = text;
}

function showLoadProgress(fraction: number) {
  ($('load-progress') as HTMLProgressElement).value = fraction;
  $('load-percent').textContent = `${Math.round(fraction * 100)} %`;
}

// --- the long document ------------------------------------------------------------------------
/** Chunk size and overlap of the document search, in tokens. */
const CHUNK_TOKENS = 128;
const OVERLAP_TOKENS = 16;
let documentText = '';
let documentChunks: Chunk[] = [];
let chunkVectors: number[][] = [];

function setDocumentStatus(text: string) {
  $('document-status').textContent = text;
}

function chunk(text: string): Promise<Chunk[]> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, (m) => (m.type === 'chunked' ? resolve(m.chunks) : reject(new Error(m.type === 'error' ? m.message : 'unexpected'))));
    post({ type: 'chunk', id, text, size: CHUNK_TOKENS, overlap: OVERLAP_TOKENS });
  });
}

/** Cuts the document into chunks and embeds them as documents, in batches, with progress. */
async function indexDocument() {
  const text = ($('document') as HTMLTextAreaElement).value;
  if (!text.trim()) return setDocumentStatus('Paste, drop or load a document first.');
  document.body.dataset.docReady = 'false';
  $('document-search').setAttribute('disabled', '');
  const progress = $('document-progress') as HTMLProgressElement;
  progress.hidden = false;
  progress.value = 0;
  const started = performance.now();
  const chunks = await chunk(text);
  const vectors: number[][] = [];
  for (let i = 0; i < chunks.length; i += 32) {
    setDocumentStatus(`Embedding chunk ${i + 1} to ${Math.min(i + 32, chunks.length)} of ${chunks.length}…`);
    vectors.push(...(await embed(chunks.slice(i, i + 32).map((c) => c.text), 'retrieval/document')).vectors);
    progress.value = vectors.length / chunks.length;
  }
  documentText = text;
  documentChunks = chunks;
  chunkVectors = vectors;
  const tokens = chunks.reduce((n, c) => n + c.tokens, 0);
  setDocumentStatus(
    `${text.length.toLocaleString('en')} characters → ${chunks.length} chunks of at most ${CHUNK_TOKENS} tokens (${OVERLAP_TOKENS} overlapping; ${tokens.toLocaleString('en')} tokens in all), embedded in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
  );
  renderDocument([]);
  $('document-results').innerHTML = '';
  $('document-search').removeAttribute('disabled');
  document.body.dataset.docReady = 'true';
  document.body.dataset.chunks = String(chunks.length);
}

/** Line number (from 1) of a character offset. */
const lineOf = (offset: number) => documentText.slice(0, offset).split('\n').length;

/** Where a chunk is: its page(s) or paragraph(s) in a PDF or DOCX read here (set on `li` too), else its lines. */
function whereIs(c: Chunk, li: HTMLElement): string {
  const doc = loadedDocument && loadedDocument.text === documentText ? loadedDocument : null;
  const [first, last] = doc ? [unitAt(doc, c.start), unitAt(doc, Math.max(c.start, c.end - 1))] : [lineOf(c.start), lineOf(c.end)];
  const unit = doc?.unit ?? 'line';
  if (doc) li.dataset[unit] = String(first);
  return first === last ? `${unit} ${first}` : `${unit}s ${first}–${last}`;
}

async function searchDocument(query: string) {
  const { vectors } = await embed([query], 'retrieval/query');
  const ranked = documentChunks.map((c, i) => ({ c, i, score: dot(vectors[0]!, chunkVectors[i]!) })).sort((a, b) => b.score - a.score).slice(0, 5);
  const list = $('document-results');
  list.innerHTML = '';
  for (const [rank, { c, i, score }] of ranked.entries()) {
    const li = document.createElement('li');
    li.dataset.testid = 'document-result';
    li.dataset.start = String(c.start);
    li.dataset.end = String(c.end);
    li.innerHTML = `<span class="score">${score.toFixed(3)}</span><span class="where">chunk ${i + 1} of ${documentChunks.length} · ${whereIs(c, li)} · characters ${c.start.toLocaleString('en')}–${c.end.toLocaleString('en')}</span><br>`;
    // The sentences that answer, as the CLI and MCP show them (a chunk often starts mid-clause).
    const excerpt = document.createElement('span');
    excerpt.className = 'excerpt';
    excerpt.textContent = excerptOf(c.text, query, 240);
    li.append(excerpt);
    li.addEventListener('click', () => document.querySelector(`#document-view mark[data-rank="${rank}"]`)?.scrollIntoView({ block: 'center', behavior: 'smooth' }));
    list.append(li);
  }
  renderDocument(ranked.slice(0, 3).map(({ c }, rank) => ({ start: c.start, end: c.end, rank })));
  document.querySelector('#document-view mark[data-rank="0"]')?.scrollIntoView({ block: 'center' });
  document.body.dataset.docSearched = String(Number(document.body.dataset.docSearched ?? 0) + 1);
}

/** The document as text, with the given ranges marked; where ranges overlap, the better-ranked one keeps the characters. */
function renderDocument(marks: { start: number; end: number; rank: number }[]) {
  const view = $('document-view');
  view.textContent = '';
  const claimed: { start: number; end: number; rank: number }[] = [];
  for (const m of [...marks].sort((a, b) => a.rank - b.rank)) {
    // The parts of m no better-ranked range holds.
    let parts = [{ start: m.start, end: m.end }];
    for (const c of claimed) parts = parts.flatMap((p) => [{ start: p.start, end: Math.min(p.end, c.start) }, { start: Math.max(p.start, c.end), end: p.end }]).filter((p) => p.end > p.start);
    claimed.push(...parts.map((p) => ({ ...p, rank: m.rank })));
  }
  let at = 0;
  for (const c of claimed.sort((a, b) => a.start - b.start)) {
    view.append(documentText.slice(at, c.start));
    const mark = document.createElement('mark');
    mark.dataset.rank = String(c.rank);
    if (c.rank === 0) mark.className = 'best';
    mark.textContent = documentText.slice(c.start, c.end);
    view.append(mark);
    at = c.end;
  }
  view.append(documentText.slice(at));
}

/** The selector's first option while the box holds the reader's own file or text: it must not go on naming a sample. */
const ownDocument = new Option('', 'own');

/** Names the box's content in the selector: `label` for the reader's own, null for the sample chosen. */
function nameOwnDocument(label: string | null) {
  const select = $('sample') as HTMLSelectElement;
  if (label === null) return ownDocument.remove();
  ownDocument.text = label;
  if (!ownDocument.parentElement) select.prepend(ownDocument);
  select.value = ownDocument.value;
}

function loadSample() {
  const sample = SAMPLE_DOCUMENTS.find((d) => d.id === ($('sample') as HTMLSelectElement).value) ?? SAMPLE_DOCUMENTS[0]!;
  nameOwnDocument(null);
  ($('sample') as HTMLSelectElement).value = sample.id;
  ($('document') as HTMLTextAreaElement).value = sample.text;
  const examples = $('document-examples');
  examples.innerHTML = '';
  for (const q of sample.queries) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = q.text;
    b.addEventListener('click', () => {
      ($('document-query') as HTMLInputElement).value = q.text;
      if (documentChunks.length) void searchDocument(q.text).catch((error) => setDocumentStatus(`Search failed: ${messageOf(error)}`));
    });
    examples.append(b);
  }
  setDocumentStatus(`Loaded “${sample.title}” (${sample.text.length.toLocaleString('en')} characters); press “Chunk and embed”.`);
}

for (const d of SAMPLE_DOCUMENTS) $('sample').append(new Option(d.title, d.id));
$('load-sample').addEventListener('click', loadSample);
$('index-document').addEventListener('click', () => void indexDocument().catch((error) => setDocumentStatus(`Could not embed the document: ${messageOf(error)}`)));
$('document-query-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const query = ($('document-query') as HTMLInputElement).value.trim();
  if (query && documentChunks.length) void searchDocument(query).catch((error) => setDocumentStatus(`Search failed: ${messageOf(error)}`));
});
/** The PDF or DOCX the box holds, read in this page: its pages' or paragraphs' starts name where a passage is. */
let loadedDocument: (ExtractedDocument & { name: string }) | null = null;
// Any file is read by its bytes (extractDocument): a .doc, an image or a renamed file is named
// for what it is, with what to do, as the CLI names it; text files fill the box as they are.
const readFile = async (file: File) => {
  loadedDocument = null;
  setDocumentStatus(`Reading ${file.name}…`);
  try {
    await setPdfWorkerSrc(pdfWorkerUrl);
    const doc = await extractDocument(new Uint8Array(await file.arrayBuffer()), file.name);
    if (doc.kind === 'text') {
      ($('document') as HTMLTextAreaElement).value = doc.text;
      nameOwnDocument(`Your file: ${file.name}`);
      setDocumentStatus(`Loaded ${file.name} (${file.size.toLocaleString('en')} bytes); press “Chunk and embed”.`);
      return;
    }
    loadedDocument = { ...doc, name: file.name };
    ($('document') as HTMLTextAreaElement).value = doc.text;
    nameOwnDocument(`Your file: ${file.name}`);
    document.body.dataset.documentUnits = String(doc.starts.length);
    setDocumentStatus(`Read ${file.name} in this page: ${doc.starts.length} ${doc.unit}${doc.starts.length === 1 ? '' : 's'}, ${doc.text.length.toLocaleString('en')} characters; press “Chunk and embed”.`);
  } catch (error) {
    // A DocumentError's message starts with the file's name, which this sentence already says.
    setDocumentStatus(`Could not read ${file.name}: ${error instanceof DocumentError ? error.reason : messageOf(error)}`);
  }
};
$('file').addEventListener('change', () => {
  const file = ($('file') as HTMLInputElement).files?.[0];
  if (file) void readFile(file);
});
$('document').addEventListener('input', () => nameOwnDocument('Your text'));
$('document').addEventListener('dragover', (e) => e.preventDefault());
$('document').addEventListener('drop', (e) => {
  const file = (e as DragEvent).dataTransfer?.files[0];
  if (!file) return;
  e.preventDefault();
  void readFile(file);
});

// Example statute queries.
for (const q of [SAMPLE_QUERY.text, 'how long does copyright last', 'can a debt collector call me at night', 'notice before eviction']) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = q;
  b.addEventListener('click', () => {
    ($('query') as HTMLInputElement).value = q;
    if (document.body.dataset.ready === 'true') void search(q).catch((error) => setStatus(`Search failed: ${messageOf(error)}`));
  });
  $('examples').append(b);
}

// ?dtype=fp32|q8|auto picks the in-page model's precision (default auto; used by bench:browser).
const dtypeParam = new URLSearchParams(location.search).get('dtype');
const requestedDtype = dtypeParam === 'fp32' || dtypeParam === 'q8' ? dtypeParam : 'auto';
// ?graph=plain|fused|auto picks the graph (default auto: a folder's fused graph on WebGPU).
const graphParam = new URLSearchParams(location.search).get('graph');
const requestedGraph = graphParam === 'plain' || graphParam === 'fused' ? graphParam : 'auto';

function currentMode(): Mode {
  const kind = (document.querySelector('input[name=mode]:checked') as HTMLInputElement).value;
  return kind === 'remote'
    ? { kind: 'remote', baseURL: ($('server-url') as HTMLInputElement).value, apiKey: ($('api-key') as HTMLInputElement).value }
    : { kind: 'local', device: ($('device') as HTMLSelectElement).value as 'auto' | 'webgpu' | 'wasm', dtype: requestedDtype, graph: requestedGraph, before: new URLSearchParams(location.search).get('before') === '1' };
}

$('query-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const query = ($('query') as HTMLInputElement).value.trim();
  if (query) void search(query).catch((error) => setStatus(`Search failed: ${messageOf(error)}`));
});
$('apply').addEventListener('click', () => start(currentMode()));

// For tests and the console: send any request through the current client.
(window as unknown as { lexembed: unknown }).lexembed = {
  create: (params: unknown) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, (m) => resolve(m));
      post({ type: 'create', id, params });
    }),
  openai: (params: unknown) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, (m) => resolve(m));
      post({ type: 'openai', id, params });
    }),
  rerank: (params: unknown) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, (m) => resolve(m));
      post({ type: 'rerank', id, params });
    }),
};

// ?device=wasm|webgpu|auto picks the in-page backend at load (used by the browser tests).
const requested = new URLSearchParams(location.search).get('device');
if (requested === 'wasm' || requested === 'webgpu' || requested === 'auto') ($('device') as HTMLSelectElement).value = requested;
start(currentMode());
