import { assign, fromCallback, fromPromise, setup } from 'xstate';

/**
 * The control plane of one pipeline. Pure: no I/O here. The runtime provides the three actors
 * (and may provide the `backoff` delay) with `pipelineMachine.provide({ actors, delays })`:
 * - `prepare`: checks the source and sink and creates what the pipeline owns (publication, target
 *   tables); rejects with a PrepareFailure, retried with backoff when `retryable`.
 * - `replicate`: runs the data plane (snapshot, then streaming) until stopped, reporting only
 *   coarse facts back: PHASE, PROGRESS, FAILED, SCHEMA_CHANGE.
 * - `drain`: waits until the data plane has flushed and let go of its connections.
 */

/** States as the API shows them: the top-level state of the machine. */
export const PIPELINE_STATES = [
  'stopped',
  'starting',
  'running',
  'stopping',
  'paused',
  'pending_schema_approval',
  'failed',
] as const;
export type PipelineState = (typeof PIPELINE_STATES)[number];

/** Actions a person can request through `PUT /v1/pipelines/{name}/state`. */
export const PIPELINE_ACTIONS = ['start', 'stop', 'pause', 'resume'] as const;
export type PipelineAction = (typeof PIPELINE_ACTIONS)[number];

export type Phase = 'snapshot' | 'streaming';

export type PipelineEvent =
  | { type: 'START' }
  | { type: 'STOP' }
  | { type: 'PAUSE' }
  | { type: 'RESUME' }
  | { type: 'APPROVE' }
  | { type: 'REJECT' }
  | { type: 'PHASE'; phase: Phase }
  /**
   * The data plane is healthy again since it (re)started: the sink durably took something, or the
   * stream caught up with the source with nothing to apply and the sink open. Failures so far are over.
   */
  | { type: 'PROGRESS' }
  | {
      type: 'FAILED';
      message: string;
      retryable: boolean;
      unreachable?: boolean;
      /** The least wait before the next attempt that the failure's cause asks for, in milliseconds. */
      retryAfterMs?: number;
    }
  | { type: 'SCHEMA_CHANGE' }
  /** The definition changed: restart the data plane with it (hot reload). */
  | { type: 'RELOAD' };

export interface PipelineContext {
  pipelineId: string;
  /** The last failure, shown to the user; cleared by a successful (re)start. */
  error: string | null;
  /** Consecutive transient failures; reset when the data plane makes durable progress again. */
  retries: number;
  /** The least wait before the next attempt that the last failure's cause asked for (absent: none). */
  retryAfterMs?: number;
  resumeAs: NonNullable<PipelineInput['resumeAs']>;
}

export interface PipelineInput {
  pipelineId: string;
  /** Where the pipeline should be when its actor starts (restored at process start). */
  resumeAs?: 'stopped' | 'running' | 'paused' | 'failed';
  /** The error a failed pipeline was left with. */
  error?: string | null;
}

/**
 * Transient failures are retried this many times in a row before the pipeline fails. Once
 * running, a server that cannot be reached (`unreachable`) is retried for as long as it takes, at
 * the capped backoff: nothing is lost meanwhile (the source's slot holds the changes), and the
 * pipeline catches up by itself when the server returns. A start stays bounded: `starting` cannot
 * be stopped (the spec's table), so it must end by itself. A pipeline that was running when the
 * service stopped, or whose worker died, is restored straight to `running` rather than through
 * `starting`, so the same patience holds for it, and stop and pause work while it waits.
 */
export const MAX_RETRIES = 8;

/** The longest wait between two attempts. */
export const MAX_RETRY_DELAY_MS = 60_000;

/** Capped exponential backoff: 1 s, 2 s, 4 s … 60 s (or `capMs`). */
export const retryDelayMs = (retries: number, capMs = MAX_RETRY_DELAY_MS) =>
  Math.min(1_000 * 2 ** retries, capMs);

/**
 * The wait before the next attempt: the capped backoff, or longer when the last failure's cause
 * asked for it (a receiver's `Retry-After`, a full spool disk).
 */
export const retryWaitMs = (
  context: Pick<PipelineContext, 'retries' | 'retryAfterMs'>,
  capMs = MAX_RETRY_DELAY_MS,
) => Math.max(retryDelayMs(context.retries - 1, capMs), context.retryAfterMs ?? 0);

/** What `prepare` rejects with: a message, whether waiting may cure it, and the least wait its cause asks for. */
export interface PrepareFailure {
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
}

const retryAfterOf = (error: unknown): number => {
  const ms =
    typeof error === 'object' && error !== null ? (error as Partial<PrepareFailure>).retryAfterMs : 0;
  return typeof ms === 'number' && ms > 0 ? ms : 0;
};

const errorMessage = (error: unknown) =>
  error instanceof Error
    ? error.message
    : typeof error === 'object' && error !== null && 'message' in error
      ? String((error as PrepareFailure).message)
      : String(error);

const isRetryableFailure = (error: unknown, retries: number) =>
  typeof error === 'object' &&
  error !== null &&
  (error as Partial<PrepareFailure>).retryable === true &&
  retries < MAX_RETRIES;

export const pipelineMachine = setup({
  types: {
    context: {} as PipelineContext,
    events: {} as PipelineEvent,
    input: {} as PipelineInput,
  },
  actors: {
    prepare: fromPromise<void, { pipelineId: string }>(async () => {
      throw new Error('prepare is provided by the runtime');
    }),
    replicate: fromCallback<PipelineEvent, { pipelineId: string }>(() => {
      throw new Error('replicate is provided by the runtime');
    }),
    drain: fromPromise<void, { pipelineId: string }>(async () => {
      throw new Error('drain is provided by the runtime');
    }),
  },
  guards: {
    canRetry: ({ context, event }) =>
      event.type === 'FAILED' &&
      event.retryable &&
      (event.unreachable === true || context.retries < MAX_RETRIES),
  },
  delays: {
    backoff: ({ context }) => retryWaitMs(context),
  },
}).createMachine({
  id: 'pipeline',
  context: ({ input }) => ({
    pipelineId: input.pipelineId,
    error: input.error ?? null,
    retries: 0,
    resumeAs: input.resumeAs ?? 'stopped',
  }),
  initial: 'restoring',
  states: {
    // Decides the first real state from the persisted desired state, without side effects. A
    // pipeline that should run goes back to running: its data plane checks and creates what it
    // needs at every (re)start, retries a server out of reach without limit, and can be stopped.
    restoring: {
      always: [
        { guard: ({ context }) => context.resumeAs === 'running', target: 'running' },
        { guard: ({ context }) => context.resumeAs === 'paused', target: 'paused' },
        { guard: ({ context }) => context.resumeAs === 'failed', target: 'failed' },
        { target: 'stopped' },
      ],
    },
    stopped: {
      on: { START: 'starting' },
    },
    starting: {
      entry: assign({ error: null, retries: 0 }),
      initial: 'preparing',
      states: {
        preparing: {
          invoke: {
            src: 'prepare',
            input: ({ context }) => ({ pipelineId: context.pipelineId }),
            onDone: '#pipeline.running',
            onError: [
              {
                guard: ({ context, event }) => isRetryableFailure(event.error, context.retries),
                target: 'waiting',
                actions: assign({
                  error: ({ event }) => errorMessage(event.error),
                  retries: ({ context }) => context.retries + 1,
                  retryAfterMs: ({ event }) => retryAfterOf(event.error),
                }),
              },
              {
                target: '#pipeline.failed',
                actions: assign({ error: ({ event }) => errorMessage(event.error) }),
              },
            ],
          },
        },
        waiting: {
          after: { backoff: 'preparing' },
        },
      },
      // No STOP here: the spec's table allows none, and starting ends by itself, running or failed.
    },
    running: {
      initial: 'replicating',
      states: {
        replicating: {
          invoke: {
            src: 'replicate',
            input: ({ context }) => ({ pipelineId: context.pipelineId }),
          },
          // Which phase the data plane is in is known once it says so (PHASE): a restart of a
          // streaming pipeline does not copy anything again, so it is not shown as a snapshot.
          initial: 'opening',
          states: {
            opening: {},
            snapshot: {},
            streaming: {},
          },
          on: {
            // A phase reached is no proof of health: a batch refused each time is reached again each time.
            PHASE: [
              { guard: ({ event }) => event.phase === 'streaming', target: '.streaming' },
              { target: '.snapshot' },
            ],
            PROGRESS: {
              guard: ({ context }) => context.retries > 0 || context.error !== null,
              actions: assign({ retries: 0, error: null }),
            },
            FAILED: [
              {
                guard: 'canRetry',
                target: 'retrying',
                actions: assign({
                  error: ({ event }) => event.message,
                  retries: ({ context }) => context.retries + 1,
                  retryAfterMs: ({ event }) => event.retryAfterMs ?? 0,
                }),
              },
              { target: '#pipeline.failed', actions: assign({ error: ({ event }) => event.message }) },
            ],
            SCHEMA_CHANGE: '#pipeline.pending_schema_approval',
          },
        },
        retrying: {
          after: { backoff: 'replicating' },
        },
      },
      on: {
        STOP: 'stopping',
        PAUSE: 'paused',
        RELOAD: { target: '.replicating', reenter: true },
      },
    },
    stopping: {
      invoke: {
        src: 'drain',
        input: ({ context }) => ({ pipelineId: context.pipelineId }),
        onDone: 'stopped',
        onError: {
          target: 'stopped',
          actions: assign({ error: ({ event }) => errorMessage(event.error) }),
        },
      },
    },
    // The data plane is not running: the slot holds its position and the source keeps the WAL.
    // Only RESUME, as the spec's table says: to stop it, resume it, then stop it.
    paused: {
      on: { RESUME: 'running' },
    },
    // Applying stopped before the first event of a new table shape; nothing is lost while waiting.
    // The spec leaves its way out open: a decision resumes it, and it may be stopped (the review
    // is kept and is waiting again at the next start).
    pending_schema_approval: {
      on: { APPROVE: 'running', REJECT: 'running', STOP: 'stopping' },
    },
    // Not a state of the spec: where retries ran out or a failure needs a person. Start tries
    // again; stop acknowledges it and clears the error.
    failed: {
      on: { START: 'starting', STOP: { target: 'stopped', actions: assign({ error: null }) } },
    },
  },
});
