import type { Logger } from './log/logger.js';

/** A step taking longer than this is logged, and again at every such interval while it lasts. */
const SLOW_STEP_MS = 15_000;

/**
 * The service's shutdown: the steps its start registered, run in reverse order, one at a time. A
 * step that fails is logged and the next runs; a step that takes long is logged by name while it
 * lasts, so a shutdown that hangs says where.
 */
export class ShutdownSteps {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly slowMs = SLOW_STEP_MS,
  ) {}

  push(name: string, run: () => Promise<void>): void {
    this.steps.push({ name, run });
  }

  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      const startedAt = Date.now();
      const timer = setInterval(() => {
        this.logger.warn(
          { step: step.name, waitedSeconds: Math.round((Date.now() - startedAt) / 1000) },
          `shutdown: still stopping the ${step.name}`,
        );
      }, this.slowMs);
      timer.unref();
      try {
        await step.run();
      } catch (error) {
        this.logger.error({ err: error, step: step.name }, 'shutdown step failed');
      } finally {
        clearInterval(timer);
      }
    }
  }
}
