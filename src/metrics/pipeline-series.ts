import { PIPELINE_STATES, type PipelineState } from '../../machines/pipeline.js';
import { CHANGE_OPS } from '../core/change.js';
import type { PipelineStats, TableProgress } from '../runtime/pipeline-stats.js';

/** One pipeline this process runs, as the metrics read it (an element of `supervisor.running()`). */
export interface PipelineSample {
  name: string;
  state: PipelineState;
  stats: PipelineStats;
}

/** The pipelines to read at scrape time. */
export type PipelineSource = () => readonly PipelineSample[];

/** One series of a metric: its label values and its value. */
export interface Series<L extends string> {
  labels: Record<L, string>;
  value: number;
}

/** Turns the pipelines running here into the series of one metric, at time `now` (ms). */
export type SeriesReader<L extends string> = (
  pipelines: readonly PipelineSample[],
  now: number,
) => Series<L>[];

type Pipeline = 'pipeline';
type Table = Pipeline | 'table';

/** Slot `wal_status` values PostgreSQL reports; each gets a series so that a change shows as 0 → 1. */
const WAL_STATUSES = ['reserved', 'extended', 'unreserved', 'lost'] as const;

/** One series per pipeline; a null value leaves the pipeline out (not known yet). */
const perPipeline =
  (value: (p: PipelineSample, now: number) => number | null): SeriesReader<Pipeline> =>
  (pipelines, now) =>
    pipelines.flatMap((p) => {
      const v = value(p, now);
      return v === null ? [] : [{ labels: { pipeline: p.name }, value: v }];
    });

/** One series per table of each pipeline's snapshot progress. */
const perTable =
  (value: (t: TableProgress) => number): SeriesReader<Table> =>
  (pipelines) =>
    pipelines.flatMap((p) =>
      [...p.stats.tables].map(([table, progress]) => ({
        labels: { pipeline: p.name, table },
        value: value(progress),
      })),
    );

/** 1 for the value in hand and 0 for the others of `known` (plus the value itself if unknown). */
const oneHot = <L extends string>(
  known: readonly string[],
  current: string,
  labels: (value: string) => Record<L, string>,
): Series<L>[] =>
  [...new Set([...known, current])].map((value) => ({
    labels: labels(value),
    value: value === current ? 1 : 0,
  }));

const state: SeriesReader<Pipeline | 'state'> = (pipelines) =>
  pipelines.flatMap((p) => oneHot(PIPELINE_STATES, p.state, (state) => ({ pipeline: p.name, state })));

const eventsTotal: SeriesReader<Pipeline | 'op'> = (pipelines) =>
  pipelines.flatMap((p) =>
    CHANGE_OPS.map((op) => ({ labels: { pipeline: p.name, op }, value: p.stats.eventsByOp[op] })),
  );

const slotWalStatus: SeriesReader<Pipeline | 'status'> = (pipelines) =>
  pipelines.flatMap((p) => {
    const status = p.stats.slot?.walStatus;
    return status ? oneHot(WAL_STATUSES, status, (s) => ({ pipeline: p.name, status: s })) : [];
  });

/** The series of each metric computed at scrape time, keyed by what they measure. */
export const pipelineSeries = {
  state,
  eventsTotal,
  eventsPerSecond: perPipeline((p, now) => p.stats.eventsPerSecond(now)),
  lagSeconds: perPipeline((p, now) => p.stats.lagMs(now) / 1000),
  lagBytes: perPipeline((p) => p.stats.lagBytes()),
  lastCheckpointSeconds: perPipeline((p) =>
    p.stats.lastCheckpointAt === null ? null : Date.parse(p.stats.lastCheckpointAt) / 1000,
  ),
  sinkErrorsTotal: perPipeline((p) => p.stats.sinkErrorsTotal),
  sourceStatusUpdatesFailedTotal: perPipeline((p) => p.stats.statusUpdatesFailedTotal),
  retries: perPipeline((p) => p.stats.retries),
  snapshotRowsDone: perTable((t) => t.rowsDone),
  // The total is an estimate from the source's statistics; it never shows less than what is done.
  snapshotRowsPlanned: perTable((t) => Math.max(t.rowsTotal, t.rowsDone)),
  snapshotPartitionsDone: perTable((t) => t.partitionsDone),
  snapshotPartitionsPlanned: perTable((t) => t.partitionsTotal),
  slotRetainedWalBytes: perPipeline((p) => p.stats.slot?.retainedWalBytes ?? null),
  slotWalStatus,
};
