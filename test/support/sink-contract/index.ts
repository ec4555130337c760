import { inject } from 'vitest';
import type { ContractKind } from './contract-kind.js';
import { duckdbContract } from './duckdb.js';
import { mysqlContract } from './mysql.js';
import { natsContract } from './nats.js';
import { postgresContract } from './postgres.js';
import { rabbitmqContract } from './rabbitmq.js';
import { redisContract } from './redis.js';
import { webhookContract } from './webhook.js';

export type { ContractKind, ContractPipeline } from './contract-kind.js';

/** Every sink kind under the sink contract, one line each (PostgreSQL once per cluster of the run). */
export const contractKinds = (): ContractKind[] => [
  ...inject('pgClusters').map(postgresContract),
  mysqlContract,
  duckdbContract,
  redisContract,
  natsContract,
  rabbitmqContract,
  webhookContract,
];
