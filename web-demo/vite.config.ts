// The demo: built into web-demo/dist and served by `vite preview` with the cross-origin
// isolation headers multi-threaded WASM needs. Model files and onnxruntime-web's WASM are copied
// into public/ by scripts/copy-assets.mjs: no CDN, no model hub.
import { defineConfig } from 'vite';

const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root: import.meta.dirname,
  server: { headers: isolation },
  preview: { headers: isolation, port: 4173, strictPort: false },
  optimizeDeps: { exclude: ['@huggingface/transformers', 'onnxruntime-web'] },
  worker: { format: 'es' },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 2000 },
});
