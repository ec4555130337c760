/** A record id as the store writes it: a UUID in its canonical hyphenated form. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a value can be a record id. An id in a path is checked before any query, so that one
 * that cannot name a record is a 404 like any other unknown id, never PostgreSQL's cast error.
 */
export const isRecordId = (value: string): boolean => UUID.test(value);
