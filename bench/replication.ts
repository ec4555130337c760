/** One replication system under test, set up and streaming `BENCH_TABLE` from its source to its sink. */
export interface Replication {
  /** `ours`, or `native (streaming = off)` and the like: the rows of the report. */
  name: string;
  sourceUrl: string;
  sinkUrl: string;
  slot: string;
  /** Stops applying and returns once the source's walsender is gone; the slot keeps its position. */
  pause(): Promise<void>;
  /** Asks to apply again and returns at once: what follows is what the benchmark times. */
  resume(): Promise<void>;
  /** Called while paused before each drain (not timed): settings of this variant of the system. */
  prepare?(): Promise<void>;
}
