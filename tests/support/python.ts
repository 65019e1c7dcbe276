// The Python interpreter with numpy and onnx (Debian's python3-onnx is /usr/bin/python3's; the
// python3 on PATH may be another one), for tests that run model/*.py for real.
import { execFileSync } from 'node:child_process';

export function pythonWithOnnx(): string {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', 'import numpy, onnx'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // next one
    }
  }
  throw new Error('no python3 with numpy and onnx: apt-get install python3-onnx (.ci/run installs it)');
}
