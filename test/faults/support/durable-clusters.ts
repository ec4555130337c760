import { existsSync } from 'node:fs';
import { createDatabase, type RestartablePgCluster, startPgCluster } from '../../support/pg-cluster.js';

/** PostgreSQL 15 as Debian ships it: the version the fault runs are about. */
export const PG15_BIN = '/usr/lib/postgresql/15/bin';

/**
 * PostgreSQL's defaults, which the other test clusters turn off for speed: crash safety is what
 * the fault suite tests, so a commit must be on disk when it is reported.
 */
export const DURABLE_SETTINGS = ['fsync=on', 'synchronous_commit=on', 'full_page_writes=on'];

/** A cluster of its own for each role, so that one can be restarted or stopped alone. */
export interface FaultClusters {
  source: RestartablePgCluster;
  sink: RestartablePgCluster;
  metadata: RestartablePgCluster;
  /** The databases used on them. */
  urls: { source: string; sink: string; metadata: string };
  stop(): Promise<void>;
}

export async function startFaultClusters(label: string): Promise<FaultClusters> {
  if (!existsSync(`${PG15_BIN}/postgres`)) throw new Error(`PostgreSQL 15 is needed at ${PG15_BIN}`);
  const [source, sink, metadata] = (await Promise.all(
    ['source', 'sink', 'meta'].map((role) =>
      startPgCluster(`faults-${label}-${role}`, PG15_BIN, [
        ...DURABLE_SETTINGS,
        // A session that vanished (a SIGSTOPped or killed service) is noticed within seconds.
        'tcp_keepalives_idle=5',
        'tcp_keepalives_interval=2',
        'tcp_keepalives_count=3',
      ]),
    ),
  )) as [RestartablePgCluster, RestartablePgCluster, RestartablePgCluster];
  const [sourceUrl, sinkUrl, metadataUrl] = await Promise.all([
    createDatabase(source.adminUrl, 'app'),
    createDatabase(sink.adminUrl, 'replica'),
    createDatabase(metadata.adminUrl, 'replicator'),
  ]);
  return {
    source,
    sink,
    metadata,
    urls: { source: sourceUrl, sink: sinkUrl, metadata: metadataUrl },
    stop: async () => {
      await Promise.all([source.stop(), sink.stop(), metadata.stop()]);
    },
  };
}
