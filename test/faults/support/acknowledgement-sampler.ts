import pg from 'pg';
import { formatLsn, parseLsn } from '../../../src/core/lsn.js';
import type { CommittedTransaction } from './load.js';

/**
 * Samples, every 200 ms while a scenario runs, what the source and the sink say is durable: the
 * slot's confirmed_flush_lsn (what the service acknowledged) and the postgres sink's checkpoint
 * (`_replicator.checkpoints.lsn`, written in the same transaction as the rows). Neither may claim
 * a transaction the sink does not hold: every load transaction known to have committed at or
 * before max(slot, checkpoint) must have its `load_tx` row in the sink at that moment.
 *
 * Positions are compared through transactions rather than directly, because the slot is rightly
 * ahead of the checkpoint when nothing of the pipeline's committed since (an idle source's
 * keepalives advance it); such samples are only counted (`slotAheadSamples`).
 * Checks start once the pipeline has reported its snapshot done (before that, transactions older
 * than the slot come through the copy still under way).
 */
export class AcknowledgementSampler {
  samples = 0;
  slotAheadSamples = 0;
  readonly violations: string[] = [];
  private readonly verified = new Set<number>();
  private snapshotDone = false;
  private running = true;
  private readonly loop: Promise<void>;
  private source: pg.Client | undefined;
  private sink: pg.Client | undefined;

  constructor(
    private readonly options: {
      sourceUrl: string;
      sinkUrl: string;
      slotName: string;
      pipelineId: string;
      /** The transactions known committed so far (the load generator's). */
      load: () => { committed: CommittedTransaction[] } | undefined;
      /** The pipeline's phase from the service, undefined when it does not answer. */
      phase: () => Promise<string | undefined>;
    },
  ) {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all([this.source?.end(), this.sink?.end()].map((p) => p?.catch(() => undefined)));
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.sample().catch(async () => {
        // A server down or restarting: no sample this time, fresh sessions next time.
        await Promise.all([this.source?.end(), this.sink?.end()].map((p) => p?.catch(() => undefined)));
        this.source = undefined;
        this.sink = undefined;
      });
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async session(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url, application_name: 'fault-oracle' });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  private async sample(): Promise<void> {
    if (!this.snapshotDone) {
      if ((await this.options.phase()) !== 'streaming') return;
      this.snapshotDone = true;
    }
    this.source ??= await this.session(this.options.sourceUrl);
    this.sink ??= await this.session(this.options.sinkUrl);
    // The slot first: what the sink holds only grows, so reading it later cannot make a false alarm.
    const slot = (
      await this.source.query<{ lsn: string | null }>(
        'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
        [this.options.slotName],
      )
    ).rows[0]?.lsn;
    if (!slot) return;
    const checkpoint = (
      await this.sink.query<{ lsn: string }>(
        'SELECT lsn::text AS lsn FROM _replicator.checkpoints WHERE pipeline_id = $1',
        [this.options.pipelineId],
      )
    ).rows[0]?.lsn;
    const slotLsn = parseLsn(slot);
    const checkpointLsn = checkpoint ? parseLsn(checkpoint) : 0n;
    const bound = slotLsn > checkpointLsn ? slotLsn : checkpointLsn;
    if (slotLsn > checkpointLsn) this.slotAheadSamples++;
    const claimed = (this.options.load()?.committed ?? []).filter(
      (t) => t.afterLsn <= bound && !this.verified.has(t.id),
    );
    this.samples++;
    if (claimed.length === 0) return;
    const { rows } = await this.sink.query<{ id: string }>(
      'SELECT id::text FROM public.load_tx WHERE id = ANY($1::bigint[])',
      [claimed.map((t) => t.id)],
    );
    for (const row of rows) this.verified.add(Number(row.id));
    for (const t of claimed) {
      if (this.verified.has(t.id)) continue;
      this.violations.push(
        `transaction ${t.id} committed before ${formatLsn(t.afterLsn)}, at or before the slot's ` +
          `confirmed_flush_lsn ${slot} / the sink's checkpoint ${checkpoint ?? 'none'}, is not in the sink`,
      );
      this.verified.add(t.id); // reported once
    }
  }
}
