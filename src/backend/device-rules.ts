// Where a model runs: WebGPU or the runtime's own CPU path (onnxruntime-node on a server, WASM in
// a browser). One pure decision for both, as a table of rules tried in order, from what was asked
// and the adapters the runtime reported (detection is each runtime's own: Dawn on Node,
// navigator.gpu in browsers).

export interface AdapterReport {
  /** vendor, architecture and description as the adapter reports them. */
  readonly name: string;
  /** A software (CPU-emulated) adapter: lavapipe, SwiftShader. */
  readonly fallback: boolean;
  /** The WebGPU features it offers (e.g. shader-f16), where the runtime reports them. */
  readonly features?: readonly string[];
}

/** What a runtime saw when it asked for WebGPU adapters. */
export interface WebGPUReport {
  /** false: this runtime has no WebGPU at all (no navigator.gpu, no Dawn). */
  readonly present: boolean;
  readonly adapters: readonly AdapterReport[];
  /** Errors met while asking for adapters, in the runtime's words. */
  readonly errors: readonly string[];
}

/** The runtime-specific words and choices the rules need. */
export interface DeviceRuntime<Cpu extends string> {
  /** The device used without WebGPU: 'cpu' on a server, 'wasm' in a browser. */
  readonly cpu: Cpu;
  /** How that path is named in reasons, e.g. 'onnxruntime-node' or 'WASM'. */
  readonly cpuName: string;
  /** Take a software fallback adapter under auto (default false: the CPU path is faster). */
  readonly allowFallbackAdapter?: boolean;
  /** The error for an explicit webgpu request that cannot be had (the runtime adds its install hint). */
  noAdapterError(seen: string, errors: string): Error;
}

export interface DeviceDecision<Cpu extends string> {
  readonly device: 'webgpu' | Cpu;
  readonly reason: string;
  readonly adapter?: AdapterReport;
}

interface Facts {
  readonly requested: string;
  readonly report: WebGPUReport;
  readonly hardware?: AdapterReport;
  readonly any?: AdapterReport;
  readonly seen: string;
  readonly errors: string;
}

type Rule<Cpu extends string> = {
  readonly when: (f: Facts, runtime: DeviceRuntime<Cpu>) => boolean;
  readonly decide: (f: Facts, runtime: DeviceRuntime<Cpu>) => DeviceDecision<Cpu>;
};

const fallbackNote = (a: AdapterReport) => (a.fallback ? ' (a software fallback adapter: correct but slow)' : '');

/** The rules, first match wins. */
function rules<Cpu extends string>(): Rule<Cpu>[] {
  return [
    { when: (f, r) => f.requested === r.cpu, decide: (_, r) => ({ device: r.cpu, reason: `${r.cpu} was requested (${r.cpuName})` }) },
    {
      when: (f) => f.requested === 'webgpu' && !f.any,
      decide: (f, r) => {
        throw r.noAdapterError(f.seen, f.errors);
      },
    },
    {
      when: (f) => f.requested === 'webgpu',
      decide: (f) => ({ device: 'webgpu', adapter: f.hardware ?? f.any, reason: `webgpu was requested; adapter: ${(f.hardware ?? f.any)!.name}${fallbackNote((f.hardware ?? f.any)!)}` }),
    },
    { when: (f) => f.hardware !== undefined, decide: (f) => ({ device: 'webgpu', adapter: f.hardware, reason: `auto: WebGPU adapter ${f.hardware!.name}` }) },
    {
      when: (f, r) => f.any !== undefined && r.allowFallbackAdapter === true,
      decide: (f) => ({ device: 'webgpu', adapter: f.any, reason: `auto: WebGPU adapter ${f.any!.name}${fallbackNote(f.any!)}, allowed by the caller` }),
    },
    {
      when: (f) => f.any !== undefined,
      decide: (f, r) => ({ device: r.cpu, reason: `auto: the only WebGPU adapters are software fallbacks (${f.seen}), slower than ${r.cpuName}; using ${r.cpu}` }),
    },
    {
      when: (f) => !f.report.present,
      decide: (_, r) => ({ device: r.cpu, reason: `auto: no WebGPU in this runtime (navigator.gpu is missing); using ${r.cpu}` }),
    },
    {
      when: () => true,
      decide: (f, r) => ({ device: r.cpu, reason: `auto: no WebGPU adapter (${f.report.errors.length ? f.report.errors.join(' | ') : 'none found'}); using ${r.cpu}` }),
    },
  ];
}

/**
 * Picks the device from what was asked ('auto', 'webgpu' or the runtime's CPU device) and what the
 * runtime reported; throws (the runtime's error) when webgpu was asked for and cannot be had.
 * @example decideDevice('auto', { present: true, adapters: [{ name: 'llvmpipe', fallback: true }], errors: [] }, server)
 *          // { device: 'cpu', reason: 'auto: the only WebGPU adapters are software fallbacks (llvmpipe (software fallback)), …' }
 */
export function decideDevice<Cpu extends string>(requested: 'auto' | 'webgpu' | Cpu, report: WebGPUReport, runtime: DeviceRuntime<Cpu>): DeviceDecision<Cpu> {
  const facts: Facts = {
    requested,
    report,
    hardware: report.adapters.find((a) => !a.fallback),
    any: report.adapters.find((a) => !a.fallback) ?? report.adapters[0],
    seen: report.adapters.length ? report.adapters.map((a) => `${a.name}${a.fallback ? ' (software fallback)' : ''}`).join('; ') : 'none',
    errors: report.errors.length ? ` Errors: ${report.errors.join(' | ')}.` : '',
  };
  const rule = rules<Cpu>().find((r) => r.when(facts, runtime))!;
  return rule.decide(facts, runtime);
}
