/**
 * What the live feed tells about each pipeline: its latest state, stats and copy progress, and a
 * short history of throughput (events, and rows copied) and lag for the charts. Kept across page changes; cleared when the
 * project changes.
 */
import type { LiveTableProgress } from '../../../src/live/live-messages';
import type { VerificationView } from '../../../src/verify/verification-view';
import { type CopyFigures, CopyRate } from './copy-rate';
import { type FeedMessage, onFeedMessage } from './live-feed.svelte';

export type Phase = 'idle' | 'snapshot' | 'streaming';

export interface LivePipeline {
  /** When the last message about it came (ms since the epoch). */
  at: number;
  state?: string;
  error?: string | null;
  phase?: Phase;
  events_per_second?: number;
  replication_lag_ms?: number;
  replication_lag_bytes?: number | null;
  retained_wal_bytes?: number | null;
  last_checkpoint_at?: string | null;
  copying?: LiveTableProgress[];
  /** The tables being copied as one figure, with the copy's rows per second; absent when none is. */
  copy?: CopyFigures;
  /** The last schema review message: a proposal waiting, or decided. */
  schema?: { proposal_id: string | null; status: 'pending' | 'decided' };
  /** The last verification a message was about: started, a table done, ended, or its repair moved. */
  verification?: VerificationView;
}

/** Samples kept per pipeline: one a second, ten minutes. */
export const HISTORY_SECONDS = 600;

export interface StatsHistory {
  /** Unix seconds. */
  times: number[];
  eventsPerSecond: number[];
  /** Rows copied a second, as the service counts them between two messages; 0 when nothing is. */
  copyRowsPerSecond: number[];
  lagMs: number[];
}

export const livePipelines = $state<Record<string, LivePipeline>>({});

/** Bumped on every stats message, for charts to redraw. */
export const statsClock = $state({ tick: 0 });

const histories = new Map<string, StatsHistory>();
const copyRates = new Map<string, CopyRate>();

/** The throughput and lag samples received for `name` (not reactive: read with statsClock.tick). */
export function statsHistory(name: string): StatsHistory {
  let history = histories.get(name);
  if (!history) {
    history = { times: [], eventsPerSecond: [], copyRowsPerSecond: [], lagMs: [] };
    histories.set(name, history);
  }
  return history;
}

/** Forgets everything (another project). */
export function clearLivePipelines(): void {
  for (const name of Object.keys(livePipelines)) delete livePipelines[name];
  histories.clear();
  copyRates.clear();
  statsClock.tick += 1;
}

export function applyFeedMessage(message: FeedMessage): void {
  if (message.type === 'hello') return;
  const entry: LivePipeline = livePipelines[message.name] ?? { at: 0 };
  entry.at = Date.now();
  switch (message.type) {
    case 'pipeline.state':
      entry.state = message.state;
      entry.error = message.error;
      if (message.state !== 'running') {
        entry.phase = 'idle';
        entry.copy = undefined;
      }
      break;
    case 'pipeline.stats':
      entry.state = message.state;
      entry.phase = message.phase;
      entry.events_per_second = message.events_per_second;
      entry.replication_lag_ms = message.replication_lag_ms;
      entry.replication_lag_bytes = message.replication_lag_bytes;
      entry.retained_wal_bytes = message.retained_wal_bytes;
      entry.last_checkpoint_at = message.last_checkpoint_at;
      entry.copying = message.copying;
      entry.copy = copyRateOf(message.name).add(message.copying, entry.at);
      record(
        message.name,
        message.events_per_second,
        message.copy_rows_per_second,
        message.replication_lag_ms,
      );
      break;
    case 'pipeline.schema':
      entry.schema = { proposal_id: message.proposal_id, status: message.status };
      break;
    case 'pipeline.verification':
      entry.verification = message.verification;
      break;
  }
  livePipelines[message.name] = entry;
}

function copyRateOf(name: string): CopyRate {
  let rate = copyRates.get(name);
  if (!rate) {
    rate = new CopyRate();
    copyRates.set(name, rate);
  }
  return rate;
}

function record(name: string, eventsPerSecond: number, copyRowsPerSecond: number, lagMs: number) {
  const history = statsHistory(name);
  history.times.push(Date.now() / 1000);
  history.eventsPerSecond.push(eventsPerSecond);
  history.copyRowsPerSecond.push(copyRowsPerSecond);
  history.lagMs.push(lagMs);
  const excess = history.times.length - HISTORY_SECONDS;
  if (excess > 0) {
    history.times.splice(0, excess);
    history.eventsPerSecond.splice(0, excess);
    history.copyRowsPerSecond.splice(0, excess);
    history.lagMs.splice(0, excess);
  }
  statsClock.tick += 1;
}

onFeedMessage(applyFeedMessage);
