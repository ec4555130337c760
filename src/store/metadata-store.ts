import type { Config } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

/** Where the metadata lives: the configured server, or one started in the data directory. */
export interface MetadataStoreLocation {
  databaseUrl: string;
  /** Stops what was started for it (the embedded server); nothing for an external one. */
  release(): Promise<void>;
}

export async function locateMetadataStore(config: Config, logger: Logger): Promise<MetadataStoreLocation> {
  if (config.databaseUrl) return { databaseUrl: config.databaseUrl, release: async () => {} };
  const embedded = await startEmbeddedPostgres(config.dataDir, logger);
  return { databaseUrl: embedded.databaseUrl, release: () => embedded.stop() };
}
