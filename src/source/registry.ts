import type { SourceKind } from '../core/source.js';
import { postgresSourceKind } from './postgres/postgres-source.js';

/** Every kind of source, one line each: a source is a folder exporting its kind. */
const KINDS: readonly SourceKind[] = [postgresSourceKind];

const BY_TYPE = new Map(KINDS.map((k) => [k.type, k]));

/** The source kind of a connection type, or undefined when that type cannot be a source. */
export const findSourceKind = (type: string): SourceKind | undefined => BY_TYPE.get(type);
