// The embedder conformance suite on the CPU path: the real tiny BERT through transformers.js +
// onnxruntime-node (tests/node/webgpu.test.ts runs the same suite on WebGPU).
import { loadModelFolder, TEST_MODEL_DIR } from '../../src/node/runtime/load-model.ts';
import { describeEmbedderConformance } from './conformance.ts';
import { createEmbedder } from '../../src/embedder/embedder.ts';
import { createFakeBackend, fakeSettings } from '../support/fake-backend.ts';

describeEmbedderConformance('cpu (onnxruntime-node), test model', () => loadModelFolder(TEST_MODEL_DIR, { device: 'cpu' }), { exactRepeat: true });
// Two inference lanes (worker threads with a session each) behind the one scheduler.
describeEmbedderConformance('cpu, two inference lanes, test model', () => loadModelFolder(TEST_MODEL_DIR, { device: 'cpu', lanes: 2, threads: 1 }), { exactRepeat: true });
// The same suite on the deterministic fake backend: the fake obeys the contract the real ones do.
describeEmbedderConformance('fake backend', async () => createEmbedder(fakeSettings(), createFakeBackend()), { exactRepeat: true });
