// The demo page: loads the model in a Web Worker, embeds the sample passages once, and ranks
// them for each query with scores, timings and a similarity heat map.
import { PASSAGES } from './passages.ts';
import type { FromWorker, Mode, ToWorker } from './protocol.ts';
import { messageOf } from '../../src/util/message-of.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
let worker: Worker;
let passageVectors: number[][] = [];
let nextId = 0;
const waiting = new Map<number, (m: FromWorker) => void>();

function start(mode: Mode) {
  worker?.terminate();
  worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
  $('search-button').setAttribute('disabled', '');
  ($('load-progress') as HTMLProgressElement).value = 0;
  setStatus(mode.kind === 'local' ? 'Loading the model…' : 'Connecting to the server…');
  document.body.dataset.ready = 'false';
  delete document.body.dataset.backend;
  worker.onmessage = async (event: MessageEvent<FromWorker>) => {
    const m = event.data;
    if (m.type === 'progress') ($('load-progress') as HTMLProgressElement).value = m.fraction;
    else if (m.type === 'ready') {
      ($('load-progress') as HTMLProgressElement).value = 1;
      document.body.dataset.backend = m.backend;
      setStatus(`Backend: ${m.backend} — ${m.reason}. Loaded in ${m.loadMs.toFixed(0)} ms. Embedding ${PASSAGES.length} passages…`);
      const t = await embed(PASSAGES.map((p) => p.text), 'retrieval/document');
      passageVectors = t.vectors;
      setStatus(`Backend: ${m.backend} — ${m.reason}. Loaded in ${m.loadMs.toFixed(0)} ms; ${PASSAGES.length} passages embedded in ${t.ms.toFixed(0)} ms.`);
      document.body.dataset.ready = 'true';
      $('search-button').removeAttribute('disabled');
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

function renderHeatmap(q: number[]) {
  const rows = [{ label: 'query', v: q }, ...PASSAGES.map((p, i) => ({ label: p.source, v: passageVectors[i]! }))];
  const color = (s: number) => `hsl(210, 80%, ${Math.round(97 - Math.max(0, s) * 55)}%)`;
  const head = `<tr><th></th>${PASSAGES.map((p) => `<th title="${p.source}">${p.id.split('-')[0]}</th>`).join('')}</tr>`;
  const body = rows
    .map((r) => `<tr><th title="${r.label}">${r.label}</th>${passageVectors.map((pv) => { const s = dot(r.v, pv); return `<td style="background:${color(s)}" title="${s.toFixed(3)}">${s.toFixed(2)}</td>`; }).join('')}</tr>`)
    .join('');
  $('heatmap').innerHTML = `<table data-testid="heatmap">${head}${body}</table>`;
}

function setStatus(text: string) {
  $('status').textContent = text;
}

function currentMode(): Mode {
  const kind = (document.querySelector('input[name=mode]:checked') as HTMLInputElement).value;
  return kind === 'remote'
    ? { kind: 'remote', baseURL: ($('server-url') as HTMLInputElement).value, apiKey: ($('api-key') as HTMLInputElement).value }
    : { kind: 'local', device: ($('device') as HTMLSelectElement).value as 'auto' | 'webgpu' | 'wasm' };
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
