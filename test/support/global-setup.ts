import type { TestProject } from 'vitest/node';
import { availableBinDirs, type PgCluster, startPgCluster } from './pg-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** One admin URL per PostgreSQL version under test, first the embedded one. */
    pgClusters: { label: string; majorVersion: number; adminUrl: string }[];
  }
}

let clusters: PgCluster[] = [];

/** Starts one logical-replication-ready PostgreSQL per available version, shared by every test file. */
export async function setup(project: TestProject) {
  clusters = await Promise.all(availableBinDirs().map(({ label, binDir }) => startPgCluster(label, binDir)));
  project.provide(
    'pgClusters',
    clusters.map(({ label, majorVersion, adminUrl }) => ({ label, majorVersion, adminUrl })),
  );
}

export async function teardown() {
  await Promise.all(clusters.map((c) => c.stop()));
}
