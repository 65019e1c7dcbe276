// Source-checkout entry of the adapter probe: registers tsx's loader, then runs the TypeScript.
import { register } from 'tsx/esm/api';

register();
await import('./probe-main.ts');
