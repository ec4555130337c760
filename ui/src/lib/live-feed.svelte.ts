/**
 * The one WebSocket to `/v1/live`: opened on the page's own origin (ws: or wss: as the page),
 * reopened by itself with a capped exponential backoff, its status shown by the live indicator.
 */
import type { LiveMessage } from '../../../src/live/live-messages';

/** What the feed carries (src/live/live-messages.ts). */
export type FeedMessage = LiveMessage;

export type FeedStatus = 'idle' | 'connecting' | 'live' | 'reconnecting';

export const feed = $state<{ status: FeedStatus; retryInSeconds: number | null; version: string | null }>({
  status: 'idle',
  retryInSeconds: null,
  version: null,
});

const MIN_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;

type Listener = (message: FeedMessage) => void;
const listeners = new Set<Listener>();
const reconnectListeners = new Set<() => void>();

let socket: WebSocket | null = null;
let retries = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let countdownTimer: ReturnType<typeof setInterval> | undefined;
let wanted = false;
let everOpened = false;

/** Calls `listener` for every message; returns the unsubscribe function. */
export function onFeedMessage(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Calls `listener` each time the feed is back after a break (messages may have been missed). */
export function onFeedReconnect(listener: () => void): () => void {
  reconnectListeners.add(listener);
  return () => reconnectListeners.delete(listener);
}

/** Opens the feed (again, at once: after signing in or switching project). */
export function connectFeed(): void {
  wanted = true;
  retries = 0;
  everOpened = false;
  closeSocket();
  open();
}

/** Closes the feed and stops reconnecting (signed out). */
export function disconnectFeed(): void {
  wanted = false;
  closeSocket();
  feed.status = 'idle';
  feed.retryInSeconds = null;
}

export function feedUrl(location: Location = window.location): string {
  const protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${protocol}//${location.host}/v1/live`;
}

function open() {
  clearTimers();
  feed.status = retries === 0 && !everOpened ? 'connecting' : 'reconnecting';
  feed.retryInSeconds = null;
  const ws = new WebSocket(feedUrl());
  socket = ws;
  ws.onmessage = (event) => {
    const message = parse(event.data);
    if (!message) return;
    if (message.type === 'hello') {
      feed.version = message.version;
      feed.status = 'live';
      const wasBack = everOpened;
      everOpened = true;
      retries = 0;
      if (wasBack) for (const listener of reconnectListeners) listener();
    }
    for (const listener of listeners) listener(message);
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    if (wanted) scheduleRetry();
  };
}

function scheduleRetry() {
  const base = Math.min(MIN_DELAY_MS * 2 ** retries, MAX_DELAY_MS);
  const delay = base / 2 + Math.random() * (base / 2);
  retries += 1;
  feed.status = 'reconnecting';
  const due = Date.now() + delay;
  feed.retryInSeconds = Math.ceil(delay / 1000);
  countdownTimer = setInterval(() => {
    feed.retryInSeconds = Math.max(0, Math.ceil((due - Date.now()) / 1000));
  }, 1_000);
  retryTimer = setTimeout(open, delay);
}

function closeSocket() {
  clearTimers();
  const ws = socket;
  socket = null;
  if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000);
}

function clearTimers() {
  clearTimeout(retryTimer);
  clearInterval(countdownTimer);
}

function parse(data: unknown): FeedMessage | null {
  if (typeof data !== 'string') return null;
  try {
    const message = JSON.parse(data) as FeedMessage;
    return typeof message === 'object' && message !== null && typeof message.type === 'string'
      ? message
      : null;
  } catch {
    return null;
  }
}
