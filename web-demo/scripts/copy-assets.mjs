// Copies the bundled model folder into web-demo/public, so the demo serves it itself
// (onnxruntime-web's WASM is bundled by Vite from the worker's ?url imports).
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const demo = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(demo, '..');
const pub = join(demo, 'public');
rmSync(join(pub, 'models'), { recursive: true, force: true });
mkdirSync(join(pub, 'models'), { recursive: true });
cpSync(join(root, 'models', 'legal-2-embedder'), join(pub, 'models', 'legal-2-embedder'), { recursive: true, filter: (p) => !p.endsWith('.md') });
rmSync(join(pub, 'ort'), { recursive: true, force: true });
console.log(`copied the model into ${pub}`);
