// Pooling on the GPU for onnxruntime-node's WebGPU provider: the model's last_hidden_state stays in
// GPU memory (preferredOutputLocation gpu-buffer) and a second, tiny session on the same device pools
// it, so a batch reads back [batch, hidden] floats instead of [batch, tokens, hidden] and JavaScript
// does not loop over them (64 texts × 128 tokens × 640 floats: 21 MB read back and ~12 ms of
// JavaScript pooling per batch otherwise). Reading a gpu-buffer output in Node is not possible
// (onnxruntime-node 1.30 aborts the process in getData: Node has no GPUDevice to map it with), so
// the hidden state is only ever handed to the pooling session, then disposed.
import * as ort from 'onnxruntime-node';
import type { PaddedBatch } from '../../backend/padding.ts';

/** The pooling graphs, from model/runtime/pooling_graphs.py (tests/node/runtime/device-pooling.test.ts checks they match). */
export const POOLING_GRAPHS = {
  mean: 'CAcSCGxleGVtYmVkOvkCCh8KBG1hc2sKBWF4aXMyEgVtYXNrMyIJVW5zcXVlZXplChwKBmhpZGRlbgoFbWFzazMSBm1hc2tlZCIDTXVsCjMKBm1hc2tlZAoFYXhpczESBnN1bW1lZCIJUmVkdWNlU3VtKg8KCGtlZXBkaW1zGACgAQIKMAoEbWFzawoFYXhpczESBWNvdW50IglSZWR1Y2VTdW0qDwoIa2VlcGRpbXMYAaABAgocCgZzdW1tZWQKBWNvdW50EgZwb29sZWQiA0RpdhISbGV4ZW1iZWRfbWVhbl9wb29sKg4IARAHOgEBQgVheGlzMSoOCAEQBzoBAkIFYXhpczJaMgoGaGlkZGVuEigKJggBEiIKBxIFYmF0Y2gKCBIGdG9rZW5zCg0SC2hpZGRlbl9zaXplWiEKBG1hc2sSGQoXCAESEwoHEgViYXRjaAoIEgZ0b2tlbnNiKAoGcG9vbGVkEh4KHAgBEhgKBxIFYmF0Y2gKDRILaGlkZGVuX3NpemVCBAoAEA0=',
  cls: 'CAcSCGxleGVtYmVkOuoBCiwKBmhpZGRlbgoFZmlyc3QSBnBvb2xlZCIGR2F0aGVyKgsKBGF4aXMYAaABAgoYCgRtYXNrEgZ1bnVzZWQiCElkZW50aXR5EhFsZXhlbWJlZF9jbHNfcG9vbCoMEAc6AQBCBWZpcnN0WjIKBmhpZGRlbhIoCiYIARIiCgcSBWJhdGNoCggSBnRva2VucwoNEgtoaWRkZW5fc2l6ZVohCgRtYXNrEhkKFwgBEhMKBxIFYmF0Y2gKCBIGdG9rZW5zYigKBnBvb2xlZBIeChwIARIYCgcSBWJhdGNoCg0SC2hpZGRlbl9zaXplQgQKABAN',
} as const;

/** The session option that keeps the model's hidden state on the GPU. */
export const KEEP_HIDDEN_ON_GPU = { preferredOutputLocation: { last_hidden_state: 'gpu-buffer' } } as const;

interface RawSession {
  run(feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>>;
}

export interface DevicePooling {
  /**
   * Runs the model session (created with KEEP_HIDDEN_ON_GPU) on `feeds` (its inputs, built from
   * `batch`) and pools on the device: one vector per row.
   */
  run(model: unknown, feeds: Record<string, unknown>, batch: PaddedBatch): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

export async function createDevicePooling(pooling: 'mean' | 'cls'): Promise<DevicePooling> {
  const session = await ort.InferenceSession.create(Buffer.from(POOLING_GRAPHS[pooling], 'base64'), { executionProviders: ['webgpu'] });
  return {
    async run(model, feeds, { dims, attentionMask }) {
      const output = await (model as RawSession).run(feeds as Record<string, ort.Tensor>);
      const hidden = output.last_hidden_state!;
      try {
        const mask = Float32Array.from(attentionMask, Number);
        const { pooled } = await session.run({ hidden, mask: new ort.Tensor('float32', mask, dims) });
        const data = (await pooled!.getData()) as Float32Array;
        const size = pooled!.dims[1]!;
        return Array.from({ length: dims[0] }, (_, row) => data.slice(row * size, (row + 1) * size));
      } finally {
        hidden.dispose();
      }
    },
    async dispose() {
      await session.release();
    },
  };
}
