/**
 * How big a fault run is: `quick` (the default, in the normal `npm test`: small tables, outages
 * of seconds) or `full` (`FAULTS_SCALE=full`, what `npm run test:faults` sets: more rows, more
 * load, more repetitions, outages of minutes).
 */
export type FaultScale = 'quick' | 'full';

export function faultScale(env: NodeJS.ProcessEnv = process.env): FaultScale {
  const scale = env.FAULTS_SCALE ?? 'quick';
  if (scale !== 'quick' && scale !== 'full')
    throw new Error(`FAULTS_SCALE must be quick or full, got '${scale}'`);
  return scale;
}

/** The figures of one scale. */
export interface ScaleFigures {
  /** Rows of the table `items` before the pipeline starts. */
  seedRows: number;
  /** Load: concurrent clients and transactions in all (each a few changes); also bounded in time. */
  loadClients: number;
  loadTransactions: number;
  loadMaxMs: number;
  /** How many times a kill, a termination or a restart is repeated in one scenario. */
  repetitions: number;
  /** How long the sink is kept down in the long outage. */
  sinkOutageMs: number;
  /** Rows of the one big transaction killed mid-apply (scenario 9). */
  bigTransactionRows: number;
  /** The longest wait for the sink to equal the source after the faults. */
  drainTimeoutMs: number;
  /** The vitest timeout of one scenario. */
  testTimeoutMs: number;
}

export const SCALES: Record<FaultScale, ScaleFigures> = {
  quick: {
    seedRows: 20_000,
    loadClients: 3,
    loadTransactions: 600,
    loadMaxMs: 45_000,
    repetitions: 1,
    sinkOutageMs: 4_000,
    bigTransactionRows: 200_000,
    drainTimeoutMs: 300_000,
    // Generous: a busy 2-core machine starts a service process in 10-60 s.
    testTimeoutMs: 600_000,
  },
  full: {
    seedRows: 400_000,
    loadClients: 6,
    loadTransactions: 30_000,
    loadMaxMs: 180_000,
    repetitions: 5,
    sinkOutageMs: 150_000,
    bigTransactionRows: 5_000_000,
    drainTimeoutMs: 300_000,
    testTimeoutMs: 900_000,
  },
};

export const scale: ScaleFigures = SCALES[faultScale()];
