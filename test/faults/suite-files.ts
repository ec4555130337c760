/**
 * The fault-injection suite (`npm run test:faults`, see RELIABILITY.md): every file under
 * test/faults, and the integration tests of the other fault scenarios, included by name.
 */
export const FAULT_SUITE_FILES = [
  'test/faults/**/*.test.ts',
  // 5 (as written by the fixes): a sink connection lost mid-batch; a sink out of reach across a restart.
  'test/integration/sink-connection-loss.test.ts',
  'test/integration/restore-outage.test.ts',
  // 7 and 8: the slot invalidated by max_slot_wal_keep_size, dropped by someone else; resync.
  'test/integration/slot-resync.test.ts',
  // 9 and 14: a big transaction killed mid-apply and replayed from the spool; the spool's disk full.
  'test/integration/crash-replay.test.ts',
  // 11: the metadata store down for a while.
  'test/integration/store-outage.test.ts',
  // 12: a table dropped and truncated at the source.
  'test/integration/dropped-tables.test.ts',
  // 15: each broker and the webhook cut mid-stream, DuckDB killed mid-write.
  'test/integration/sink-outage.test.ts',
  'test/integration/nats-sink-outage.test.ts',
  'test/integration/rabbitmq-sink-outage.test.ts',
  'test/integration/webhook-sink-outage.test.ts',
  'test/integration/duckdb-sink.test.ts',
];

/** The quick subset that runs in every `npm test` too (small tables, outages of seconds). */
export const QUICK_FAULT_FILES = 'test/faults/**/quick-*.test.ts';
