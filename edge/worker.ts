// The Worker this repository deploys and tests (edge/build.mjs bundles it): lexembed's edge
// handler with onnxruntime-web's WASM bundled as a module compiled at deploy time.
import ortWasmModule from './ort-wasm-simd-threaded.asyncify.wasm';
import { createEdgeHandler } from '../src/edge/handler.ts';

export type { Env } from '../src/edge/handler.ts';
export default createEdgeHandler({ wasmModule: ortWasmModule });
