// The version the code reports (OpenAPI info.version) is package.json's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/http/openapi.ts';
import { INTERFACE_VERSION, LEXEMBED_VERSION } from '../../src/version.ts';

it("src/version.ts says package.json's version, and the OpenAPI document reports it beside the interface version", () => {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
  expect(LEXEMBED_VERSION).toBe(pkg.version);
  const doc = buildOpenApiDocument({ modelName: 'legal-2-embedder', docsUrl: '/docs', authenticated: false, routes: [] }) as { info: Record<string, unknown> };
  expect(doc.info).toMatchObject({ version: pkg.version, 'x-interface-version': INTERFACE_VERSION });
});
