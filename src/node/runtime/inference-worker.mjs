// Worker-thread entry: registers tsx's loader in this thread, then runs the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./inference-worker-main.ts');
