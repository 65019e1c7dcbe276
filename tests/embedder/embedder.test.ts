// The embedder conformance suite on the CPU path: the real tiny BERT through transformers.js +
// onnxruntime-node (tests/node/webgpu.test.ts runs the same suite on WebGPU).
import { loadModelFolder, TEST_MODEL_DIR } from '../../src/node/load-model.ts';
import { describeEmbedderConformance } from './conformance.ts';

describeEmbedderConformance('cpu (onnxruntime-node), test model', () => loadModelFolder(TEST_MODEL_DIR, { device: 'cpu' }), { exactRepeat: true });
