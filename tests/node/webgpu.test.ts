// The Node GPU path for real: onnxruntime-node's own WebGPU provider (the default), and Dawn (the
// `webgpu` package) + onnxruntime-web's WebGPU build (--webgpu-runtime web). In CI
// the adapter is Mesa's lavapipe (software Vulkan, installed by .ci/run); with no adapter at all
// these tests fail with the start-up message, which lists the adapters seen and what to install.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR, loadModelFolder, STATIC_MODEL_DIR, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { decideServerDevice } from '../../src/node/runtime/webgpu/decide.ts';
import { dawnFlags } from '../../src/node/runtime/webgpu/detect.ts';
import type { Embedder, EmbedInput } from '../../src/embedder/types.ts';
import { describeEmbedderConformance } from '../embedder/conformance.ts';
import { runCli, startServe, type ServerProcess } from '../support/cli.ts';
import { cosine, GPU_TEXTS } from './gpu-fixtures.ts';

const input = (texts: string[], extra: Partial<EmbedInput> = {}): EmbedInput => ({ texts, task: null, overflowStrategy: 'drop_end', dimensions: null, ...extra });
const TEXTS = GPU_TEXTS;

describe('device choice (pure)', () => {
  const lavapipe = { name: 'mesa software llvmpipe', fallback: true };
  const nvidia = { name: 'nvidia hopper NVIDIA H100', fallback: false };

  it('auto takes a hardware adapter and says which', () => {
    const d = decideServerDevice('auto', { adapters: [lavapipe, nvidia], errors: [] });
    expect(d.device).toBe('webgpu');
    expect(d.reason).toContain('NVIDIA H100');
  });

  it('auto keeps onnxruntime-node when only a software fallback exists, and says why', () => {
    const d = decideServerDevice('auto', { adapters: [lavapipe], errors: [] });
    expect(d.device).toBe('cpu');
    expect(d.reason).toMatch(/software fallback.*llvmpipe.*using cpu/);
  });

  it('webgpu accepts a software adapter (correct, slow) but not none: the error lists adapters and what to install', () => {
    expect(decideServerDevice('webgpu', { adapters: [lavapipe], errors: [] }).reason).toContain('software fallback');
    expect(() => decideServerDevice('webgpu', { adapters: [], errors: ['no suitable backends found'] })).toThrow(
      /no WebGPU adapter is usable\. Adapters seen: none\. Errors: no suitable backends found\. Install: .*webgpu.*libvulkan1.*bookworm-backports mesa-vulkan-drivers/,
    );
  });

  it('cpu is cpu', () => {
    expect(decideServerDevice('cpu', null).device).toBe('cpu');
  });

  it('Dawn is opened with shader-f16 allowed on NVIDIA under Vulkan (as onnxruntime-node opens its own device), and the adapter asked for', () => {
    expect(dawnFlags()).toEqual(['enable-dawn-features=vulkan_enable_f16_on_nvidia']);
    expect(dawnFlags('NVIDIA')).toEqual(['adapter=NVIDIA', 'enable-dawn-features=vulkan_enable_f16_on_nvidia']);
  });
});

describeEmbedderConformance("webgpu (onnxruntime-node's provider, the default), test model", () => loadModelFolder(TEST_MODEL_DIR, { device: 'webgpu' }), { exactRepeat: false });
describeEmbedderConformance('webgpu (--webgpu-runtime web: Dawn + onnxruntime-web), test model', () => loadModelFolder(TEST_MODEL_DIR, { device: 'webgpu', webgpuRuntime: 'web' }), { exactRepeat: false });

it('the device reason says which WebGPU runtime runs the model; --gpu-adapter naming the default adapter keeps the native one', async () => {
  const cases = [
    [{ webgpuRuntime: 'native' }, "onnxruntime-node's WebGPU provider"],
    [{ webgpuRuntime: 'web' }, 'onnxruntime-web over Dawn'],
    [{ gpuAdapter: 'llvmpipe' }, "onnxruntime-node's WebGPU provider"], // lavapipe is the only, so the default, adapter here
  ] as const;
  for (const [options, says] of cases) {
    const embedder = await loadModelFolder(TEST_MODEL_DIR, { device: 'webgpu', ...options });
    expect(embedder.runtime.deviceReason, JSON.stringify(options)).toContain(`(${says})`);
    expect(embedder.runtime.deviceReason, 'no batch settings: limits as given, nothing measured').not.toContain('max batch tokens');
    expect(embedder.runtime.deviceReason?.includes('mean pooling on the GPU'), 'pooled on the GPU on the native runtime only').toBe(says.startsWith('onnxruntime-node'));
    await embedder.dispose();
  }
}, 120_000);

describe('WebGPU path against the CPU path', () => {
  const pairs: Record<string, { cpu: Embedder; gpu: Embedder }> = {};
  beforeAll(async () => {
    for (const [name, dir] of [['test model', TEST_MODEL_DIR], ['legal-2-embedder', BUNDLED_MODEL_DIR]] as const) {
      pairs[name] = { cpu: await loadModelFolder(dir, { device: 'cpu' }), gpu: await loadModelFolder(dir, { device: 'webgpu' }) };
    }
  }, 180_000);
  afterAll(async () => {
    for (const { cpu, gpu } of Object.values(pairs)) await Promise.all([cpu.dispose(), gpu.dispose()]);
  });

  it('reports the WebGPU adapter it runs on', () => {
    expect(pairs['test model']!.gpu.runtime.backendName).toMatch(/^transformers\.js \(webgpu on .+, worker thread\)$/);
    expect(pairs['test model']!.gpu.runtime.deviceReason).toMatch(/webgpu was requested; adapter: /);
  });

  it('compiles its pipelines at load (a warm-up batch before ready), not on the first request', () => {
    for (const { gpu, cpu } of Object.values(pairs)) {
      expect(gpu.runtime.deviceReason).toMatch(/; pipelines compiled at load \(warm-up \d+ ms\)$/);
      expect(cpu.runtime.deviceReason ?? '').not.toMatch(/warm-up/);
    }
  });

  for (const name of ['test model', 'legal-2-embedder']) {
    it(`${name}: same vectors (cosine >= 0.999), tokens and order for every task, truncation and dimensions`, async () => {
      const { cpu, gpu } = pairs[name]!;
      for (const extra of [{}, { task: 'retrieval/query' as const }, { task: 'retrieval/document' as const, dimensions: 32 }]) {
        const [a, b] = await Promise.all([cpu.embed(input(TEXTS, extra)), gpu.embed(input(TEXTS, extra))]);
        if (!a.ok || !b.ok) throw new Error('unexpected problem');
        expect(b.value.inputTokens).toBe(a.value.inputTokens);
        expect(b.value.vectors.map((v) => v.length)).toEqual(a.value.vectors.map((v) => v.length));
        for (const [i, v] of a.value.vectors.entries()) expect(cosine(v, b.value.vectors[i]!), `texts[${i}]`).toBeGreaterThanOrEqual(0.999);
      }
    });
  }
});

// Alone in its process state (the parity pairs above are disposed, the hybrid's ~2 GB among
// them, whose collection otherwise moves RSS by tens of MB), on the static model, which keeps 200
// requests quick on a software GPU.
describe('WebGPU memory', () => {
  let gpuStatic: Embedder;
  beforeAll(async () => void (gpuStatic = await loadModelFolder(STATIC_MODEL_DIR, { device: 'webgpu' })), 120_000);
  afterAll(() => gpuStatic?.dispose());

  it('memory stays bounded over repeated requests', async () => {
    // Without collection, RSS follows V8's garbage sawtooth (measured: +120 MB, then back, every
    // few hundred requests). Collected in both threads after each round it is flat (measured
    // within 10 MB over 600 requests), so a growth here is memory that nothing frees.
    expect(typeof (globalThis as { gc?: unknown }).gc, 'vitest runs with --expose-gc').toBe('function');
    const gpu = gpuStatic;
    const rss: number[] = [];
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 20; i++) {
        const r = await gpu.embed(input(TEXTS.map((t) => `${t} ${i}`.repeat(1 + ((i + round) % 3)))));
        expect(r.ok).toBe(true);
      }
      await gpu.runtime.collectGarbage!();
      rss.push(process.memoryUsage().rss / 2 ** 20);
    }
    // Round 0 is the warm-up (pipelines, buffer pools); 180 requests follow. A leak of 0.2 MB per
    // request (e.g. a batch's GPU buffers never returned) would add 36 MB.
    expect(Math.max(...rss.slice(1)) - rss[0]!, `RSS per round (MiB): ${rss.map(Math.round).join(' ')}`).toBeLessThan(24);
  }, 120_000);
});

describe('lexembed serve --device', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServe(['--no-auth', '--device', 'webgpu']);
  }, 120_000);
  afterAll(() => void server?.child.kill('SIGKILL'));

  it('answers /v1/embeddings on WebGPU with the CPU path vectors, and exits on SIGTERM', async () => {
    expect(server.output()).toMatch(/"device: webgpu was requested; adapter: /);
    // --max-batch-tokens auto (the default) measured this adapter at start-up and said what it chose.
    expect(server.output()).toMatch(/max batch tokens (512|1024|2048|4096|8192|16384|32768) \(auto, measured at 128 tokens a text: 1024: \d+ ms.*; stopped at .*\), max batch size \d+"/);
    expect((await (await fetch(`${server.url}/health`)).json()).backend).toMatch(/webgpu on /);
    const body = { model: 'legal-2-embedder', texts: TEXTS, task: 'retrieval/document', dimensions: 128 };
    const res = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { embeddings: { index: number; embedding: number[] }[]; usage: { input_tokens: number } };
    const cpu = await loadModelFolder(BUNDLED_MODEL_DIR, { device: 'cpu' });
    const ref = await cpu.embed(input(TEXTS, { task: 'retrieval/document', dimensions: 128 }));
    await cpu.dispose();
    if (!ref.ok) throw new Error('unexpected problem');
    expect(json.usage.input_tokens).toBe(ref.value.inputTokens);
    expect(json.embeddings.map((e) => e.index)).toEqual([0, 1, 2, 3]);
    for (const [i, e] of json.embeddings.entries()) expect(cosine(e.embedding, ref.value.vectors[i]!)).toBeGreaterThanOrEqual(0.999);

    // Lifecycle: the GPU device is released, so the process ends by itself after draining.
    const started = Date.now();
    expect(await server.stop(), server.output()).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 60_000);

  it('webgpu with no matching adapter stops start-up, listing the adapters seen and what to install', async () => {
    const { code, stderr } = await runCli(['serve', '--no-auth', '--port', '0', '--device', 'webgpu', '--gpu-adapter', 'no-such-gpu']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot load the model: --device webgpu: no WebGPU adapter matching --gpu-adapter "no-such-gpu" is usable\. Adapters seen: none\. Errors: .*Available adapters: .*Install: /);
  }, 60_000);

  it('auto logs which device and why (lavapipe is a software fallback: cpu); a bad value names the option', async () => {
    const auto = await startServe(['--no-auth', '--device', 'auto']);
    expect(await auto.stop()).toBe(0);
    expect(auto.output()).toMatch(/"device: auto: (WebGPU adapter .+|the only WebGPU adapters are software fallbacks .+ using cpu|no WebGPU adapter .+ using cpu)(; dtype q8 \(auto: the int8 graph [^"]+\))?"/);
    const bad = await runCli(['serve', '--device', 'gpu']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--device (LEXEMBED_DEVICE) must be "auto", "webgpu" or "cpu"; got "gpu"');
  }, 60_000);
});

describe('lexembed embed --device', () => {
  it('embeds a corpus on WebGPU with the vectors of --device cpu', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lexembed-gpu-embed-'));
    const input = join(dir, 'corpus.jsonl');
    writeFileSync(input, TEXTS.map((text, i) => JSON.stringify({ id: `t${i}`, text })).join('\n') + '\n');
    const rows = async (device: string) => {
      const output = join(dir, `${device}.jsonl`);
      const r = await runCli(['embed', input, '--output', output, '--device', device, '--task', 'retrieval/document', '--progress', 'never']);
      expect(r.code, r.stderr).toBe(0);
      if (device === 'webgpu') expect(r.stderr).toContain('lexembed embed: device: webgpu was requested; adapter: ');
      return readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; embedding: number[] });
    };
    const [gpu, cpu] = [await rows('webgpu'), await rows('cpu')];
    expect(gpu.map((r) => r.id)).toEqual(cpu.map((r) => r.id));
    for (const [i, r] of gpu.entries()) expect(cosine(r.embedding, cpu[i]!.embedding)).toBeGreaterThanOrEqual(0.999);
  }, 60_000);
});
