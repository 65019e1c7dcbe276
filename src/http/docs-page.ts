// The API reference page at /docs, rendered on the server from the OpenAPI document: no
// scripts, no CDN, nothing fetched by the browser but the page itself.

// biome-ignore lint/suspicious/noExplicitAny: walks an OpenAPI document of any shape
type Json = Record<string, any>;

const esc = (s: unknown) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function renderDocsPage(doc: Json, errorsPath: string): string {
  const operations = Object.entries(doc.paths as Json).flatMap(([path, methods]) =>
    Object.entries(methods as Json).map(([method, op]) => renderOperation(doc, path, method, op as Json)),
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(doc.info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{background:#f4f4f4;padding:.1rem .3rem;border-radius:3px}pre{padding:.6rem;overflow:auto}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.m{font-weight:bold;text-transform:uppercase;color:#fff;background:#2a6;padding:.1rem .4rem;border-radius:3px}.m.get{background:#36c}</style></head>
<body><h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1>
<p>${esc(doc.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${esc(doc.openapi)}). Errors: <a href="${esc(errorsPath)}">the errors page</a>, which every problem <code>type</code> links to.</p>
${doc.components.securitySchemes ? '<p>Authentication: <code>Authorization: Bearer &lt;API_KEY&gt;</code> (keys look like <code>lxk_v1_&lt;secret&gt;_&lt;checksum&gt;</code>).</p>' : ''}
${operations.join('\n')}
</body></html>`;
}

function renderOperation(doc: Json, path: string, method: string, op: Json): string {
  const body = op.requestBody?.content?.['application/json']?.schema;
  const schema = body?.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
  const fields = schema?.properties
    ? `<table><tr><th>field</th><th>required</th><th>type</th><th>default</th><th>description</th></tr>${Object.entries(schema.properties as Json)
        .map(
          ([name, p]) =>
            `<tr><td><code>${esc(name)}</code></td><td>${(schema.required ?? []).includes(name) ? 'yes' : 'no'}</td><td>${esc(typeOf(p))}</td><td>${'default' in p ? `<code>${esc(JSON.stringify(p.default))}</code>` : ''}</td><td>${esc(p.description ?? '')}</td></tr>`,
        )
        .join('')}</table>`
    : '';
  const responses = Object.entries(op.responses as Json)
    .map(([status, r]) => {
      const res = (r as Json).$ref ? doc.components.responses[(r as Json).$ref.split('/').pop()] : r;
      return `<tr><td>${esc(status)}</td><td>${esc(res.description ?? '')}</td></tr>`;
    })
    .join('');
  return `<section id="${esc(op.operationId)}"><h2><span class="m ${esc(method)}">${esc(method)}</span> <code>${esc(path)}</code></h2>
<p>${esc(op.summary ?? '')}</p>${fields}<h3>Responses</h3><table><tr><th>status</th><th>meaning</th></tr>${responses}</table></section>`;
}

function typeOf(p: Json): string {
  if (p.const !== undefined) return JSON.stringify(p.const);
  if (p.anyOf) return (p.anyOf as Json[]).map(typeOf).join(' | ');
  if (p.enum) return (p.enum as unknown[]).map((e) => JSON.stringify(e)).join(' | ');
  if (p.type === 'array') return `array of ${p.items ? typeOf(p.items) : 'any'}${p.maxItems ? ` (${p.minItems ?? 0}–${p.maxItems})` : ''}`;
  return String(p.type ?? 'any');
}
