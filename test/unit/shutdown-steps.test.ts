import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ShutdownSteps } from '../../src/shutdown-steps.js';

function logged() {
  const lines: { level: number; msg: string; step?: string }[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('the shutdown steps', () => {
  it('runs the steps in reverse order once, going on past one that fails', async () => {
    const { logger, lines } = logged();
    const ran: string[] = [];
    const steps = new ShutdownSteps(logger);
    steps.push('first', async () => void ran.push('first'));
    steps.push('broken', async () => {
      throw new Error('no');
    });
    steps.push('last', async () => void ran.push('last'));
    await steps.run();
    await steps.run();
    expect(ran).toEqual(['last', 'first']);
    expect(lines).toMatchObject([{ level: 50, step: 'broken', msg: 'shutdown step failed' }]);
  });

  it('names a step that takes long while it lasts', async () => {
    const { logger, lines } = logged();
    let release = () => {};
    const steps = new ShutdownSteps(logger, 5);
    steps.push('pipelines', () => new Promise<void>((done) => (release = done)));
    const running = steps.run();
    await expect.poll(() => lines.length).toBeGreaterThan(0);
    release();
    await running;
    expect(lines[0]).toMatchObject({
      level: 40,
      step: 'pipelines',
      msg: 'shutdown: still stopping the pipelines',
    });
  });
});
