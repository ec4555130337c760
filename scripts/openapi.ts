// Writes the service's OpenAPI document, built without a database: `tsx scripts/openapi.ts [file]`
// (stdout without a file).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { openapiDocument } from './openapi-document.js';

const text = `${JSON.stringify(await openapiDocument(), null, 2)}\n`;
const file = process.argv[2];
if (file) {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text);
} else process.stdout.write(text);
