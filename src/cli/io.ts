/** What a command reads and writes besides the service: injected so that tests can run commands in-process. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** stdout is a terminal: progress bars may use block characters and `--watch` may redraw. */
  tty: boolean;
}

export const processIo = (): CliIo => ({
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  tty: process.stdout.isTTY === true,
});
