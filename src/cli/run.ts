import { EXIT } from './exit-codes.js';
import { describeFailure } from './failure.js';
import type { CliIo } from './io.js';
import { buildProgram, withDefaultCommand } from './program.js';

/** Runs one command line to its exit status, reporting a failure as one message on stderr. */
export async function runCommandLine(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const program = buildProgram(io);
    const clientCommands = new Set(
      program.commands.filter((c) => c.helpGroup() === 'Client commands:').map((c) => c.name()),
    );
    await program.parseAsync(withDefaultCommand(argv, clientCommands), { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    const { code, message } = describeFailure(error);
    if (message) io.err(`${message}\n`);
    return code;
  }
}
