import { duckdbTarget } from './duckdb-target.js';
import { natsTarget } from './nats-target.js';
import { rabbitmqTarget } from './rabbitmq-target.js';
import { redisTarget } from './redis-target.js';
import type { RunShape, SinkTarget } from './sink-target.js';
import { mysqlTarget, postgresTarget } from './sql-targets.js';
import { webhookTarget } from './webhook-target.js';

/** The sink types the sink benchmark runs, the reference first. */
export const SINK_KINDS = ['postgres', 'mysql', 'duckdb', 'redis', 'nats', 'rabbitmq', 'webhook'] as const;
export type SinkKind = (typeof SINK_KINDS)[number];

/** Where the targets live: the sink PostgreSQL cluster, the service's data directory. */
export interface TargetPlaces {
  sinkAdminUrl: string;
  dataDir: string;
}

/** The target of `kind`, made fresh for one run. */
export function sinkTarget(kind: SinkKind, places: TargetPlaces, shape: RunShape): Promise<SinkTarget> {
  switch (kind) {
    case 'postgres':
      return postgresTarget(places.sinkAdminUrl, shape);
    case 'mysql':
      return mysqlTarget(shape);
    case 'duckdb':
      return duckdbTarget(shape, places.dataDir);
    case 'redis':
      return redisTarget(shape);
    case 'nats':
      return natsTarget(shape);
    case 'rabbitmq':
      return rabbitmqTarget(shape);
    case 'webhook':
      return webhookTarget(shape);
  }
}
