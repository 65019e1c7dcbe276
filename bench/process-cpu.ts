// CPU time of a whole process (every thread: the event loop, workers, onnxruntime's pool), read
// from /proc on Linux, so a benchmark can charge a server for exactly what it spent.
import { readFileSync } from 'node:fs';

const CLK_TCK = 100; // Linux USER_HZ

/** User + system CPU seconds of every thread of `pid` so far; NaN where /proc cannot say (not Linux). */
export function cpuSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}
