#!/usr/bin/env node
import { loadConfig, parseCommandLine } from './config/load.js';
import { ConfigError, envName, OPTIONS } from './config/options.js';
import { createLogger } from './log/logger.js';
import { startService } from './server.js';
import { DataDirInUseError } from './store/data-dir-lock.js';
import { locateMetadataStore } from './store/metadata-store.js';
import { migrate } from './store/migrate.js';
import { VERSION } from './version.js';

// Distinct from 1 (any other failure) so that a supervisor can tell "already running" apart.
const EXIT_DATA_DIR_IN_USE = 3;

const USAGE = `Usage: replicator [serve|migrate|version] [flags]

  serve     run the service (default)
  migrate   apply the metadata store's migrations and exit
  version   print the version

Flags (each also an environment variable, and a key of the YAML file given with --config):
  --config FILE   YAML config file (REPLICATOR_CONFIG)
${OPTIONS.map((o) => `  --${o.flag.padEnd(22)} ${o.description}${o.default ? ` (default ${o.default})` : ''}; ${envName(o.key)}`).join('\n')}

Exit status: 0 done, 1 failed, 2 invalid configuration, ${EXIT_DATA_DIR_IN_USE} the data directory's embedded
PostgreSQL is run by another live process (serve and migrate refuse to touch it).
`;

async function main(argv: string[]): Promise<number> {
  const cli = parseCommandLine(argv);
  if (cli.command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (cli.command === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const config = loadConfig(cli);
  const logger = createLogger(config.log.level);

  if (cli.command === 'migrate') {
    const location = await locateMetadataStore(config, logger);
    try {
      const applied = await migrate(location.databaseUrl, logger);
      logger.info({ applied }, applied.length ? 'migrations applied' : 'no migration pending');
    } finally {
      await location.release();
    }
    return 0;
  }

  const service = await startService(config, logger);
  logger.info({ url: service.url, version: VERSION }, 'replicator is serving');
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
  await service.stop();
  logger.info('stopped');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof DataDirInUseError) {
      process.stderr.write(`replicator: ${error.message}\n`);
      process.exit(EXIT_DATA_DIR_IN_USE);
    }
    process.stderr.write(`replicator: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
