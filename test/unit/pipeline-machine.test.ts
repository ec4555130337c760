import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createActor, fromCallback, fromPromise, type SnapshotFrom } from 'xstate';
import {
  MAX_RETRIES,
  MAX_RETRY_DELAY_MS,
  PIPELINE_ACTIONS,
  PIPELINE_STATES,
  type PipelineAction,
  type PipelineEvent,
  type PipelineState,
  pipelineMachine,
  retryWaitMs,
} from '../../machines/pipeline.js';
import { apiState, isActionAllowed, phaseOf, stateAfter } from '../../machines/pipeline-transitions.js';

/** The allowed (state, action) pairs and where they lead once the actors have settled. */
const ALLOWED: Record<string, PipelineState> = {
  'stopped/start': 'running',
  'running/stop': 'stopped',
  'running/pause': 'paused',
  'paused/resume': 'running',
  'pending_schema_approval/stop': 'stopped',
  'failed/start': 'running',
  'failed/stop': 'stopped',
};

type Snapshot = SnapshotFrom<typeof pipelineMachine>;

/** The retry delay of the harness; its clock is faked, so the tests move time on by it. */
const BACKOFF_MS = 5;

/** A machine whose actors resolve when the test says so. */
function harness(options: { prepareFails?: string; retryable?: boolean } = {}) {
  const gates = { prepare: [] as (() => void)[], drain: [] as (() => void)[] };
  let sendBack: ((event: PipelineEvent) => void) | undefined;
  let replicateStops = 0;
  const machine = pipelineMachine.provide({
    actors: {
      prepare: fromPromise(
        () =>
          new Promise<void>((resolve, reject) => {
            gates.prepare.push(() =>
              options.prepareFails
                ? reject({ message: options.prepareFails, retryable: options.retryable ?? false })
                : resolve(),
            );
          }),
      ),
      replicate: fromCallback(({ sendBack: send }) => {
        sendBack = send as (event: PipelineEvent) => void;
        return () => {
          replicateStops++;
        };
      }),
      drain: fromPromise(() => new Promise<void>((resolve) => gates.drain.push(resolve))),
    },
    delays: { backoff: BACKOFF_MS },
  });
  return {
    machine,
    gates,
    report: (event: PipelineEvent) => sendBack?.(event),
    replicateStops: () => replicateStops,
  };
}

// The machine's delays run on the faked clock: a test moves time on itself, and never waits for it.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Lets the promise actors' settlements run (and any timer due now). */
const flush = () => vi.advanceTimersByTimeAsync(0);

/** Moves time past one retry delay, so a waiting retry fires. */
const passBackoff = () => vi.advanceTimersByTimeAsync(BACKOFF_MS);

async function settle(h: ReturnType<typeof harness>) {
  for (let i = 0; i < 5; i++) {
    for (const gate of [...h.gates.prepare.splice(0), ...h.gates.drain.splice(0)]) gate();
    await flush();
  }
}

/** Drives a fresh actor into `state` through allowed transitions only. */
async function actorIn(state: PipelineState) {
  const h = harness();
  const actor = createActor(h.machine, { input: { pipelineId: 'p' } }).start();
  const go = async (event: PipelineEvent) => {
    actor.send(event);
    await settle(h);
  };
  switch (state) {
    case 'starting':
      actor.send({ type: 'START' });
      break;
    case 'running':
      await go({ type: 'START' });
      break;
    case 'stopping':
      await go({ type: 'START' });
      actor.send({ type: 'STOP' });
      break;
    case 'paused':
      await go({ type: 'START' });
      await go({ type: 'PAUSE' });
      break;
    case 'pending_schema_approval':
      await go({ type: 'START' });
      h.report({ type: 'SCHEMA_CHANGE' });
      break;
    case 'failed':
      await go({ type: 'START' });
      h.report({ type: 'FAILED', message: 'slot lost', retryable: false });
      break;
  }
  expect(apiState(actor.getSnapshot().value)).toBe(state);
  return { actor, h };
}

const EVENT: Record<PipelineAction, PipelineEvent> = {
  start: { type: 'START' },
  stop: { type: 'STOP' },
  pause: { type: 'PAUSE' },
  resume: { type: 'RESUME' },
};

describe('pipeline machine', () => {
  const pairs = PIPELINE_STATES.flatMap((state) =>
    PIPELINE_ACTIONS.map((action) => [state, action] as const),
  );

  it.each(pairs)('%s + %s', async (state, action) => {
    const { actor, h } = await actorIn(state);
    const key = `${state}/${action}`;
    expect(isActionAllowed(state, action)).toBe(key in ALLOWED);
    expect(actor.getSnapshot().can(EVENT[action])).toBe(key in ALLOWED);
    actor.send(EVENT[action]);
    if (key in ALLOWED) {
      await settle(h);
      expect(apiState(actor.getSnapshot().value)).toBe(ALLOWED[key]);
    } else {
      expect(apiState(actor.getSnapshot().value)).toBe(state);
    }
    actor.stop();
  });

  it('passes through starting and stopping, observable while the actors work', async () => {
    const h = harness();
    const actor = createActor(h.machine, { input: { pipelineId: 'p' } }).start();
    const seen: PipelineState[] = [apiState(actor.getSnapshot().value)];
    actor.subscribe((s: Snapshot) => {
      const state = apiState(s.value);
      if (seen.at(-1) !== state) seen.push(state);
    });
    actor.send({ type: 'START' });
    await flush();
    expect(apiState(actor.getSnapshot().value)).toBe('starting');
    await settle(h);
    actor.send({ type: 'STOP' });
    await flush();
    expect(apiState(actor.getSnapshot().value)).toBe('stopping');
    await settle(h);
    expect(seen).toEqual(['stopped', 'starting', 'running', 'stopping', 'stopped']);
    expect(h.replicateStops()).toBe(1);
  });

  it('tracks the snapshot and streaming phases inside running, as the data plane reports them', async () => {
    const { actor, h } = await actorIn('running');
    expect(actor.getSnapshot().matches({ running: { replicating: 'opening' } })).toBe(true);
    expect(phaseOf(actor.getSnapshot().value)).toBe('idle');
    h.report({ type: 'PHASE', phase: 'snapshot' });
    expect(actor.getSnapshot().matches({ running: { replicating: 'snapshot' } })).toBe(true);
    expect(phaseOf(actor.getSnapshot().value)).toBe('snapshot');
    h.report({ type: 'PHASE', phase: 'streaming' });
    expect(actor.getSnapshot().matches({ running: { replicating: 'streaming' } })).toBe(true);
    expect(phaseOf(actor.getSnapshot().value)).toBe('streaming');
  });

  it('shows a held pipeline as streaming and one whose data plane does not run as idle', async () => {
    const { actor, h } = await actorIn('running');
    h.report({ type: 'PHASE', phase: 'streaming' });
    h.report({ type: 'SCHEMA_CHANGE' });
    expect(apiState(actor.getSnapshot().value)).toBe('pending_schema_approval');
    expect(phaseOf(actor.getSnapshot().value)).toBe('streaming');
    for (const state of ['stopped', 'paused', 'failed'] as const) {
      expect(phaseOf((await actorIn(state)).actor.getSnapshot().value)).toBe('idle');
    }
  });

  it('fails with the message when prepare is refused', async () => {
    const h = harness({ prepareFails: 'wal_level is replica; set wal_level=logical' });
    const actor = createActor(h.machine, { input: { pipelineId: 'p' } }).start();
    actor.send({ type: 'START' });
    await settle(h);
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe('wal_level is replica; set wal_level=logical');
  });

  it('retries a transient failure of prepare while starting, then fails', async () => {
    const h = harness({ prepareFails: 'connect ECONNREFUSED', retryable: true });
    const actor = createActor(h.machine, { input: { pipelineId: 'p' } }).start();
    actor.send({ type: 'START' });
    await flush();
    h.gates.prepare.shift()?.();
    await flush();
    expect(actor.getSnapshot().matches({ starting: 'waiting' })).toBe(true);
    expect(actor.getSnapshot().context).toMatchObject({ error: 'connect ECONNREFUSED', retries: 1 });
    for (let i = 0; i < MAX_RETRIES; i++) {
      await passBackoff();
      await settle(h);
    }
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
  });

  it('keeps retrying a server that cannot be reached once running, past MAX_RETRIES', async () => {
    const { actor, h: running } = await actorIn('running');
    for (let i = 0; i < MAX_RETRIES + 3; i++) {
      running.report({ type: 'FAILED', message: 'connect ECONNREFUSED', retryable: true, unreachable: true });
      expect(apiState(actor.getSnapshot().value)).toBe('running');
      await passBackoff();
    }
    // Anything else that keeps failing still fails the pipeline after MAX_RETRIES in a row.
    for (let i = 0; i <= MAX_RETRIES; i++) {
      running.report({ type: 'FAILED', message: 'deadlock detected', retryable: true });
      await passBackoff();
    }
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
  });

  it('cannot be stopped while starting, and clears its error when a failure is stopped', async () => {
    const h = harness({ prepareFails: 'connect ECONNREFUSED', retryable: true });
    const actor = createActor(h.machine, { input: { pipelineId: 'p' } }).start();
    actor.send({ type: 'START' });
    await settle(h);
    expect(actor.getSnapshot().can({ type: 'STOP' })).toBe(false);
    actor.send({ type: 'STOP' });
    expect(apiState(actor.getSnapshot().value)).toBe('starting');
    const failed = await actorIn('failed');
    expect(failed.actor.getSnapshot().context.error).toBe('slot lost');
    failed.actor.send({ type: 'STOP' });
    expect(failed.actor.getSnapshot().context.error).toBeNull();
  });

  it('retries transient failures with backoff, then fails', async () => {
    const { actor, h } = await actorIn('running');
    h.report({ type: 'FAILED', message: 'connection reset', retryable: true });
    expect(actor.getSnapshot().matches({ running: 'retrying' })).toBe(true);
    expect(apiState(actor.getSnapshot().value)).toBe('running');
    await passBackoff();
    expect(actor.getSnapshot().matches({ running: 'replicating' })).toBe(true);
    h.report({ type: 'PHASE', phase: 'streaming' });
    expect(actor.getSnapshot().context).toMatchObject({ retries: 1, error: 'connection reset' });
    h.report({ type: 'PROGRESS' });
    expect(actor.getSnapshot().context).toMatchObject({ retries: 0, error: null });
    for (let i = 0; i < MAX_RETRIES; i++) {
      h.report({ type: 'FAILED', message: `attempt ${i}`, retryable: true });
      await passBackoff();
    }
    h.report({ type: 'FAILED', message: 'still down', retryable: true });
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe('still down');
  });

  it('fails a batch refused at every retry: reaching a phase again does not reset the count', async () => {
    const { actor, h } = await actorIn('running');
    for (let i = 0; i < MAX_RETRIES; i++) {
      h.report({ type: 'PHASE', phase: 'streaming' });
      h.report({ type: 'FAILED', message: 'deadlock detected', retryable: true });
      expect(apiState(actor.getSnapshot().value)).toBe('running');
      await passBackoff();
    }
    h.report({ type: 'PHASE', phase: 'streaming' });
    h.report({ type: 'FAILED', message: 'deadlock detected', retryable: true });
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe('deadlock detected');
  });

  it.each(['APPROVE', 'REJECT'] as const)(
    'moves to pending_schema_approval and back to running on %s',
    async (type) => {
      const { actor } = await actorIn('pending_schema_approval');
      actor.send({ type });
      expect(apiState(actor.getSnapshot().value)).toBe('running');
    },
  );

  it('restarts the data plane on RELOAD, staying running', async () => {
    const { actor, h } = await actorIn('running');
    h.report({ type: 'PHASE', phase: 'streaming' });
    actor.send({ type: 'RELOAD' });
    expect(h.replicateStops()).toBe(1);
    expect(actor.getSnapshot().matches({ running: { replicating: 'opening' } })).toBe(true);
    const paused = await actorIn('paused');
    paused.actor.send({ type: 'RELOAD' });
    expect(apiState(paused.actor.getSnapshot().value)).toBe('paused');
  });

  it('restores a running pipeline to running: a server out of reach is retried past MAX_RETRIES, and stop works', async () => {
    const h = harness();
    const actor = createActor(h.machine, {
      input: { pipelineId: 'p', resumeAs: 'running', error: 'connect ECONNREFUSED' },
    }).start();
    expect(actor.getSnapshot().matches({ running: 'replicating' })).toBe(true);
    for (let i = 0; i < MAX_RETRIES + 3; i++) {
      h.report({ type: 'FAILED', message: 'connect ECONNREFUSED', retryable: true, unreachable: true });
      expect(apiState(actor.getSnapshot().value)).toBe('running');
      expect(actor.getSnapshot().context).toMatchObject({ error: 'connect ECONNREFUSED', retries: i + 1 });
      await passBackoff();
      expect(actor.getSnapshot().matches({ running: 'replicating' })).toBe(true);
    }
    expect(actor.getSnapshot().can({ type: 'PAUSE' })).toBe(true);
    actor.send({ type: 'STOP' });
    await settle(h);
    expect(apiState(actor.getSnapshot().value)).toBe('stopped');
  });

  it('fails a restored running pipeline as before for a failure that needs a person', () => {
    const h = harness();
    const actor = createActor(h.machine, { input: { pipelineId: 'p', resumeAs: 'running' } }).start();
    h.report({ type: 'FAILED', message: 'permission denied for table items', retryable: false });
    expect(apiState(actor.getSnapshot().value)).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe('permission denied for table items');
  });

  it('clears the error of a restored pipeline once its data plane is healthy', () => {
    const h = harness();
    const actor = createActor(h.machine, {
      input: { pipelineId: 'p', resumeAs: 'running', error: 'connect ECONNREFUSED' },
    }).start();
    h.report({ type: 'PHASE', phase: 'streaming' });
    expect(actor.getSnapshot().context.error).toBe('connect ECONNREFUSED');
    h.report({ type: 'PROGRESS' });
    expect(actor.getSnapshot().context).toMatchObject({ error: null, retries: 0 });
  });

  it.each([
    ['failed', 'failed'],
    ['running', 'running'],
    ['paused', 'paused'],
    ['stopped', 'stopped'],
  ] as const)('restores desired state %s as %s', (resumeAs, state) => {
    const h = harness();
    const actor = createActor(h.machine, { input: { pipelineId: 'p', resumeAs } }).start();
    expect(apiState(actor.getSnapshot().value)).toBe(state);
  });
});

describe('stateAfter', () => {
  it.each([
    ['stopped', 'start', 'starting'],
    ['running', 'stop', 'stopping'],
    ['running', 'pause', 'paused'],
    ['paused', 'resume', 'running'],
    ['pending_schema_approval', 'stop', 'stopping'],
    ['failed', 'stop', 'stopped'],
    ['failed', 'start', 'starting'],
  ] as const)('%s + %s is %s at once', (state, action, next) => {
    expect(stateAfter(state, action)).toBe(next);
  });
});

describe('the wait before a retry', () => {
  it('is the capped backoff, or longer when the failure’s cause asks for it', () => {
    expect(retryWaitMs({ retries: 1 })).toBe(1_000);
    expect(retryWaitMs({ retries: 3, retryAfterMs: 0 })).toBe(4_000);
    expect(retryWaitMs({ retries: 1, retryAfterMs: 30_000 })).toBe(30_000);
    expect(retryWaitMs({ retries: 12, retryAfterMs: 30_000 })).toBe(MAX_RETRY_DELAY_MS);
    expect(retryWaitMs({ retries: 12 }, 5_000)).toBe(5_000);
  });

  it('waits as long as the failure asked before the next attempt, and forgets it at the next failure', async () => {
    vi.useFakeTimers();
    try {
      let sendBack: ((event: PipelineEvent) => void) | undefined;
      const machine = pipelineMachine.provide({
        actors: {
          prepare: fromPromise(async () => {}),
          replicate: fromCallback(({ sendBack: send }) => {
            sendBack = send as (event: PipelineEvent) => void;
          }),
          drain: fromPromise(async () => {}),
        },
      });
      const actor = createActor(machine, { input: { pipelineId: 'p', resumeAs: 'running' } }).start();
      sendBack?.({
        type: 'FAILED',
        message: 'busy',
        retryable: true,
        unreachable: true,
        retryAfterMs: 7_000,
      });
      expect(actor.getSnapshot().context.retryAfterMs).toBe(7_000);
      await vi.advanceTimersByTimeAsync(6_999);
      expect(actor.getSnapshot().matches({ running: 'retrying' })).toBe(true);
      await vi.advanceTimersByTimeAsync(1);
      expect(actor.getSnapshot().matches({ running: 'replicating' })).toBe(true);
      sendBack?.({ type: 'FAILED', message: 'reset', retryable: true, unreachable: true });
      expect(actor.getSnapshot().context.retryAfterMs).toBe(0);
      // The second failure in a row: the backoff's 2 s.
      await vi.advanceTimersByTimeAsync(2_000);
      expect(actor.getSnapshot().matches({ running: 'replicating' })).toBe(true);
      actor.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
