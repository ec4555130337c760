import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOn } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { faultScale, scale } from './support/scale.js';

/**
 * Scenario 10: a table with a large value stored out of line (TOAST, > 2 kB, random so it is not
 * compressed) updated on its other columns only, so that the stream carries the value as
 * "unchanged"; at full scale the service is killed with SIGKILL in between, so that batches are
 * replayed. The sink keeps the large values.
 */
describe('fault 10: unchanged TOAST values', () => {
  let rig: FaultRig;
  const docs = faultScale() === 'full' ? 2_000 : 200;

  beforeAll(async () => {
    rig = await FaultRig.start('toast', {
      seedRows: 1_000,
      sourceSql: `CREATE TABLE docs (id bigint PRIMARY KEY, version bigint NOT NULL, counter int NOT NULL, body text NOT NULL);
        ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
        INSERT INTO docs SELECT g, 0, 0, (SELECT string_agg(md5(i || random()::text || g), '') FROM generate_series(1, 100) AS s(i)) FROM generate_series(1, ${docs}) g;`,
      tables: ['public.items', 'public.load_tx', 'public.docs'],
      versionedTables: ['public.items', 'public.docs'],
    });
    await rig.startPipeline();
    await rig.waitForPhase('streaming');
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'keeps the large values when other columns change',
    async () => {
      const rounds = faultScale() === 'full' ? 20 : 5;
      for (let round = 0; round < rounds; round++) {
        // Some rows' other columns, in small transactions.
        await sqlOn(
          rig.urls.source,
          `UPDATE docs SET version = version + 1, counter = counter + 1 WHERE id % ${2 + (round % 3)} = 0`,
        );
        if (faultScale() === 'full' && round === Math.floor(rounds / 2)) {
          await rig.service.kill();
          await rig.service.start();
        }
      }
      const [{ toasted }] = await sqlOn(
        rig.urls.source,
        'SELECT count(*)::int AS toasted FROM docs WHERE pg_column_size(body) > 2000',
      );
      rig.note(`${toasted} of ${docs} bodies stored out of line`);
      expect(toasted).toBe(docs);
      await rig.drainAndCheck();
    },
    scale.testTimeoutMs,
  );
});
