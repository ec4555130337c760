import type { AuditEvent } from './audit-event.js';

/** The most characters one text field of an event keeps (an actor name, a target, an address). */
export const MAX_FIELD_CHARS = 256;
/** The most characters of JSON one event's details keep. */
export const MAX_DETAILS_CHARS = 4096;
/** The most characters one string inside the details keeps. */
const MAX_DETAIL_STRING_CHARS = 512;
const MARK = '…[truncated]';

/** PostgreSQL refuses NUL in text and jsonb: a refused call that sent one is still recorded. */
const printable = (text: string) => text.replaceAll('\0', '\\0');

function clip(raw: string, max: number): string {
  const text = printable(raw);
  return text.length <= max ? text : `${text.slice(0, max - MARK.length)}${MARK}`;
}

const clipOptional = (text: string | undefined) =>
  text === undefined ? undefined : clip(text, MAX_FIELD_CHARS);

function clipValues(value: unknown): unknown {
  if (typeof value === 'string') return clip(value, MAX_DETAIL_STRING_CHARS);
  if (Array.isArray(value)) return value.map(clipValues);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [clip(key, MAX_FIELD_CHARS), clipValues(inner)]),
    );
  }
  return value;
}

/**
 * An event no larger than the trail keeps: whatever a caller can put into it (a name, a target, a
 * detail) is cut, and the cut is marked, so that one call cannot grow the append-only trail by
 * more than a few kilobytes. Details still too large after their strings are cut are replaced by
 * a note saying how large they were.
 */
export function boundedEvent(event: AuditEvent): AuditEvent {
  const details =
    event.details === undefined ? undefined : (clipValues(event.details) as Record<string, unknown>);
  const json = details === undefined ? '' : JSON.stringify(details);
  return {
    ...event,
    actorName: clip(event.actorName, MAX_FIELD_CHARS),
    action: clip(event.action, MAX_FIELD_CHARS),
    target: clipOptional(event.target),
    sourceAddress: clipOptional(event.sourceAddress),
    requestId: clipOptional(event.requestId),
    clientRequestId: clipOptional(event.clientRequestId),
    details:
      json.length > MAX_DETAILS_CHARS
        ? { truncated: true, original_chars: json.length, keys: Object.keys(details ?? {}).slice(0, 20) }
        : details,
  };
}
