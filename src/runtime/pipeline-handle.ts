import { type Actor, createActor } from 'xstate';
import type { PipelineEvent, PipelineState, pipelineMachine } from '../../machines/pipeline.js';
import { apiState, phaseOf } from '../../machines/pipeline-transitions.js';
import type { Logger } from '../log/logger.js';
import type { ControlFigures, PipelineStats } from './pipeline-stats.js';
import type { RunControl } from './replication-runner.js';
import { awaitStop } from './slow-stop.js';

/** The pipeline machine with the data plane it invokes provided. */
export type PipelineMachine = typeof pipelineMachine;

/** A state the pipeline's actor reached, with the one it left and the error it holds. */
export type StateChange = (
  handle: PipelineHandle,
  previous: PipelineState,
  state: PipelineState,
  error: string | null,
) => void;

/** What a pipeline this process runs is, and what it is doing: all that a reader may see of it. */
export interface PipelineReading {
  readonly id: string;
  readonly name: string;
  readonly projectId: string;
  readonly stats: PipelineStats;
  readonly state: PipelineState;
  readonly error: string | null;
  /** The run the store records for it now; null between runs. */
  readonly runId: string | null;
  /** The definition generation the data plane runs with. */
  readonly generation: number;
  /** Reaches into the running data plane (and carries the lease's fencing epoch). */
  readonly control: Readonly<RunControl>;
}

export interface PipelineHandleInit {
  id: string;
  name: string;
  projectId: string;
  stats: PipelineStats;
  /** The state the actor is told it starts in. */
  resumeAs: 'stopped' | 'running' | 'paused' | 'failed';
  /** The error the pipeline was left with, shown until its actor says otherwise. */
  error: string | null;
  generation: number;
  /** The fencing epoch of this worker's lease on the pipeline. */
  epoch: number;
  /** The machine to run, given the handle its data plane works on. */
  machine: (handle: PipelineHandle) => PipelineMachine;
  /** Told of every state the actor reaches, from its start. */
  changed: StateChange;
}

/**
 * One pipeline this process runs: its actor, its data-plane loop, its live figures, and the store
 * writes recorded of it, in order. It is built whole, actor included, before anyone can look it up,
 * and its state changes only as its actor moves.
 */
export class PipelineHandle implements PipelineReading {
  readonly id: string;
  readonly name: string;
  readonly projectId: string;
  readonly stats: PipelineStats;
  readonly control: RunControl;
  private readonly actor: Actor<PipelineMachine>;
  private currentState: PipelineState = 'stopped';
  private currentError: string | null;
  private currentRunId: string | null = null;
  private currentGeneration: number;
  /** The current (or last) data-plane loop; a new one starts only after it settled. */
  private currentLoop: Promise<void> = Promise.resolve();
  private writeQueue: Promise<unknown> = Promise.resolve();
  private readonly changed: StateChange;

  constructor(init: PipelineHandleInit) {
    this.id = init.id;
    this.name = init.name;
    this.projectId = init.projectId;
    this.stats = init.stats;
    this.control = { epoch: init.epoch };
    this.currentError = init.error;
    this.currentGeneration = init.generation;
    this.changed = init.changed;
    this.actor = createActor(init.machine(this), {
      input: { pipelineId: init.id, resumeAs: init.resumeAs, error: init.error },
    });
    this.actor.subscribe((snapshot) => {
      const state = apiState(snapshot.value);
      // A retried failure changes the error without changing the state: both are shown, both are kept.
      if (state === this.currentState && snapshot.context.error === this.currentError) return;
      const previous = this.currentState;
      this.currentState = state;
      this.currentError = snapshot.context.error;
      this.changed(this, previous, state, snapshot.context.error);
    });
  }

  get state(): PipelineState {
    return this.currentState;
  }

  get error(): string | null {
    return this.currentError;
  }

  get runId(): string | null {
    return this.currentRunId;
  }

  get generation(): number {
    return this.currentGeneration;
  }

  /** The current (or last) data-plane loop, settled once it ended. */
  get loop(): Promise<void> {
    return this.currentLoop;
  }

  /** The store writes recorded of this pipeline so far, settled once they are all done. */
  get writes(): Promise<unknown> {
    return this.writeQueue;
  }

  /**
   * Starts the actor in the state it was given. The actor tells its observer of that state as it
   * starts: a state other than stopped is told as reached from stopped; a stopped one tells
   * nothing, being about to be given an action whose state is stored already.
   */
  start(): void {
    this.actor.start();
  }

  /** Stops the actor (its data plane is told to stop; `loop` says when it has). */
  stop(): void {
    this.actor.stop();
  }

  /** The phase and the retries of the machine now: the one place both are kept. */
  machineFigures(): ControlFigures {
    const snapshot = this.actor.getSnapshot();
    return { phase: phaseOf(snapshot.value), retries: snapshot.context.retries };
  }

  /** Hands an event to the actor. */
  send(event: PipelineEvent): void {
    this.actor.send(event);
  }

  /** Whether the actor, in its state now, takes `event`. */
  accepts(event: PipelineEvent): boolean {
    return this.actor.getSnapshot().can(event);
  }

  /** Waits for the data plane's loop to end, saying where it is while that takes long. */
  awaitStop(log: Logger): Promise<void> {
    return awaitStop(this.currentLoop, log, () => ({ phase: this.stats.phase, step: this.control.step }));
  }

  /**
   * Runs a data-plane loop once the one before it settled: `run`, then `ended` with its outcome or
   * `failed` with its error.
   */
  runAfterLoop<T>(
    run: () => T | PromiseLike<T>,
    ended: (outcome: T) => void,
    failed: (error: unknown) => void,
  ) {
    this.currentLoop = this.currentLoop.then(run).then(ended, failed);
  }

  /** Queues a store write after those before it; a failure goes to `failed` and the queue goes on. */
  queueWrite(write: () => Promise<void>, failed: (error: unknown) => void): void {
    this.writeQueue = this.writeQueue.then(write).catch(failed);
  }

  /** The store opened a run for the pipeline. */
  runOpened(runId: string): void {
    this.currentRunId = runId;
  }

  /** The pipeline's run is closed in the store. */
  runClosed(): void {
    this.currentRunId = null;
  }

  /** The definition changed to `generation`; the next start of the data plane runs with it. */
  followGeneration(generation: number): void {
    this.currentGeneration = generation;
  }
}
