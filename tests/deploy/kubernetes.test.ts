// deploy/kubernetes/*.yaml, validated offline against the Kubernetes API schemas (the npm package
// kubernetes-models; no cluster is reachable here), then checked for what lexembed relies on:
// probes, drain timing, ports, the non-root read-only container, the Job's shards.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const DIR = join(PROJECT_ROOT, 'deploy', 'kubernetes');
type Doc = { apiVersion: string; kind: string; metadata: { name: string }; spec: any };
const docs: Doc[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(DIR, f), 'utf8')).map((d) => d.toJS() as Doc));
const find = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;

/** The kubernetes-models module of an apiVersion: "apps/v1" → apps/v1, "v1" → v1. */
async function modelClass(doc: Doc) {
  const module = doc.apiVersion.includes('/') ? doc.apiVersion : `v1`;
  const path = module === 'v1' ? 'kubernetes-models/v1' : `kubernetes-models/${module}`;
  const classes = (await import(path)) as Record<string, new (o: unknown) => { validate(): void }>;
  const Class = classes[doc.kind];
  if (!Class) throw new Error(`kubernetes-models has no ${doc.kind} in ${path}`);
  return Class;
}

describe('deploy/kubernetes', () => {
  it('has the Deployment, Service, HPA, PDB, the indexed Job and Redis', () => {
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual(
      ['Deployment/lexembed', 'Deployment/lexembed-redis', 'HorizontalPodAutoscaler/lexembed', 'Job/lexembed-embed', 'PersistentVolumeClaim/lexembed-redis', 'PodDisruptionBudget/lexembed', 'Service/lexembed', 'Service/lexembed-redis'].sort(),
    );
  });

  it.each(docs.map((d) => [`${d.kind}/${d.metadata.name}`, d] as const))('%s is valid against the Kubernetes API schema', async (_, doc) => {
    const Class = await modelClass(doc);
    expect(() => new Class(doc).validate()).not.toThrow();
  });

  it('the schema check can fail: a Deployment without a selector is refused', async () => {
    const bad = structuredClone(find('Deployment', 'lexembed'));
    delete bad.spec.selector;
    const Class = await modelClass(bad);
    expect(() => new Class(bad).validate()).toThrow();
  });

  it('the server: /readyz and /livez probes, a grace period longer than the drain, non-root and read-only, Redis from a Secret', () => {
    const pod = find('Deployment', 'lexembed').spec.template.spec;
    const c = pod.containers[0];
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe.httpGet.path).toBe('/livez');
    const env = Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e]));
    const drainDelay = Number(env.LEXEMBED_DRAIN_DELAY.value);
    const serverDrain = 10; // src/cli/serve.ts DRAIN_TIMEOUT_MS
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(drainDelay + serverDrain);
    expect(env.LEXEMBED_STORE.value).toBe('redis');
    expect(env.LEXEMBED_REDIS_URL.valueFrom.secretKeyRef.name).toBe('lexembed-redis');
    expect(env.LEXEMBED_NO_DEV_KEY.value).toBe('true');
    expect(pod.securityContext.runAsUser).toBe(10001); // the image's USER
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath).sort()).toEqual(['/data', '/tmp']);
    expect(c.ports[0].containerPort).toBe(8080); // the image's LEXEMBED_PORT
    expect(find('Service', 'lexembed').spec.ports[0].targetPort).toBe(c.ports[0].name);
  });

  it('the Job: indexed, one --shard auto/N per completion, through the Service', () => {
    const job = find('Job', 'lexembed-embed').spec;
    expect(job.completionMode).toBe('Indexed');
    const script = job.template.spec.containers[0].args.join(' ');
    expect(script).toContain(`--shard auto/${job.completions}`);
    expect(script).toContain(`shard-\${JOB_COMPLETION_INDEX}.jsonl`); // the shell expands the Job's index
    expect(script).toContain(`--remote http://${find('Service', 'lexembed').metadata.name}/v1`);
  });
});
