// Writes the API client's types from the service's own OpenAPI document (built without a database):
// `tsx scripts/generate-client.ts` rewrites src/client/api-schema.ts; `--check` only compares, and
// fails when the checked-in file is not what the document gives (a route changed without it).
import { readFile, writeFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import { openapiDocument } from './openapi-document.js';

const TARGET = new URL('../src/client/api-schema.ts', import.meta.url);
const HEADER =
  "// Generated from the service's OpenAPI document by `npm run generate:client`: do not edit.\n" +
  '// `.ci/run` fails when this file differs from what the document gives.\n\n';

const document = await openapiDocument();
// openapi-typescript takes the document as its own OpenAPI 3 type; ours is the same JSON, untyped.
const ast = await openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { alphabetize: true });
const text = HEADER + astToString(ast);

if (process.argv.includes('--check')) {
  const current = await readFile(TARGET, 'utf8').catch(() => '');
  if (current !== text) {
    process.stderr.write(
      'src/client/api-schema.ts is not what the OpenAPI document gives: run `npm run generate:client` and commit it\n',
    );
    process.exit(1);
  }
} else await writeFile(TARGET, text);
