import { loadConfig, parseCommandLine } from '../config/load.js';
import { envName, OPTIONS } from '../config/options.js';
import { createLogger } from '../log/logger.js';
import { startService } from '../server.js';
import { locateMetadataStore } from '../store/metadata-store.js';
import { migrate } from '../store/migrate.js';
import { VERSION } from '../version.js';
import { EXIT } from './exit-codes.js';
import { limitHeapGrowth } from './heap-growth.js';
import type { CliIo } from './io.js';

const SERVER_USAGE = `Usage: replicator [serve|migrate] [flags]

  serve     run the service (the default command)
  migrate   apply the metadata store's migrations and exit

Flags (each also an environment variable, and a key of the YAML file given with --config):
  --config FILE   YAML config file (REPLICATOR_CONFIG)
${OPTIONS.map((o) => `  --${o.flag.padEnd(22)} ${o.description}${o.default ? ` (default ${o.default})` : ''}; ${envName(o.key)}`).join('\n')}

Exit status: ${EXIT.ok} done, ${EXIT.failed} failed, ${EXIT.usage} invalid configuration, ${EXIT.dataDirInUse} the data directory's embedded
PostgreSQL is run by another live process (serve and migrate refuse to touch it).
`;

/** `serve` and `migrate`, whose flags come from the configuration's options (argv starts with the command). */
export async function runServerCommand(argv: string[], io: CliIo): Promise<void> {
  const cli = parseCommandLine(argv);
  if (cli.command === 'help') {
    io.out(SERVER_USAGE);
    return;
  }
  const config = loadConfig(cli);
  const logger = createLogger(config.log.level, config.log.format);

  if (cli.command === 'migrate') {
    const location = await locateMetadataStore(config, logger);
    try {
      const applied = await migrate(location.databaseUrl, logger);
      logger.info({ applied }, applied.length ? 'migrations applied' : 'no migration pending');
    } finally {
      await location.release();
    }
    return;
  }

  limitHeapGrowth();
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
}
