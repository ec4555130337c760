/**
 * A process with the process guard installed that meets three unhandled errors in turn: a refused
 * socket opened inside a pipeline's run, a reset connection outside any, and a bug. It prints
 * what the run was told; the guard's log goes to stdout as JSON lines.
 */
import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import { createLogger } from '../../src/log/logger.js';
import { installProcessGuard } from '../../src/runtime/process-guard.js';
import { runAttributed } from '../../src/runtime/run-attribution.js';
import { freePort } from './pg-cluster.js';

installProcessGuard(createLogger('info'));
const closedPort = await freePort();
const step = (name: string) => process.stdout.write(`${JSON.stringify({ step: name })}\n`);

await new Promise<void>((done) => {
  runAttributed(
    {
      pipeline: 'orders',
      fail: (error) => {
        step(`orders failed: ${(error as { code?: string }).code}`);
        done();
      },
    },
    // No 'error' listener: the refused connection is an unhandled 'error' event.
    () => connect(closedPort, '127.0.0.1'),
  );
});
// Emitted from a callback, as a socket does: an uncaught exception, with no pipeline's context.
setImmediate(() => {
  new EventEmitter().emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
});
setTimeout(() => {
  step('went on after a lost connection outside any pipeline');
  setTimeout(() => {
    (undefined as unknown as { bug(): void }).bug();
  }, 10);
  setTimeout(() => step('still running after a bug'), 2_000);
}, 100);
