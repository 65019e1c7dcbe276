// The progress line of long CLI commands: a bar redrawn in place on a terminal, a plain line
// every second otherwise (logs, CI), with rate and ETA.
export interface Progress {
  advance(n: number): void;
  end(): void;
}

/**
 * @param unit what is counted ("texts", "documents")
 * @param extra appended to each line, e.g. the chunks written so far
 */
export function createProgress(total: number, already: number, mode: 'auto' | 'always' | 'never', write: (s: string) => void, unit = 'texts', extra: () => string = () => ''): Progress {
  const tty = Boolean(process.stderr.isTTY);
  const enabled = mode !== 'never';
  const started = performance.now();
  let doneNow = 0;
  let lastDraw = 0;
  const render = () => {
    const done = already + doneNow;
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? doneNow / seconds : 0;
    const left = Math.max(0, total - done);
    const eta = rate > 0 ? `${formatSeconds(left / rate)}` : '?';
    const width = 30;
    const filled = total ? Math.round((done / total) * width) : width;
    return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${total ? ((done / total) * 100).toFixed(1) : '100.0'}% ${rate.toFixed(0)} ${unit}/s ETA ${eta}${extra()}`;
  };
  return {
    advance(n: number) {
      doneNow += n;
      if (!enabled) return;
      const now = performance.now();
      if (tty && now - lastDraw > 100) (process.stderr.write(`\r${render()}`), (lastDraw = now));
      else if (!tty && now - lastDraw > 1000) (write(render()), (lastDraw = now));
    },
    end() {
      if (!enabled) return;
      if (tty) process.stderr.write(`\r${render()}\n`);
      else write(render());
    },
  };
}

function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.ceil(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
