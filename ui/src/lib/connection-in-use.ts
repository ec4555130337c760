/** The pipelines a 409 CONNECTION_IN_USE names, from its details when given, else its message. */
import type { ApiError } from './api';

export interface ConnectionUser {
  name: string;
  state: string | null;
}

export function pipelinesUsing(error: ApiError): ConnectionUser[] {
  const details = (error.body as { details?: { pipelines?: unknown } } | null)?.details;
  const fromMessage = [...error.message.matchAll(/'([^']+)' \(([a-z_]+)\)/g)].map((m) => ({
    name: m[1] as string,
    state: m[2] as string,
  }));
  if (Array.isArray(details?.pipelines)) {
    return details.pipelines.map((name) => ({
      name: String(name),
      state: fromMessage.find((p) => p.name === name)?.state ?? null,
    }));
  }
  return fromMessage;
}
