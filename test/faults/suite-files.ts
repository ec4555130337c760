/**
 * The fault-injection suite (`npm run test:faults`, see RELIABILITY.md): every file under
 * test/faults, and the integration tests of the other fault scenarios, included by name.
 */
export const FAULT_SUITE_FILES = [
  'test/faults/**/*.test.ts',
  // 15: each broker and the webhook cut mid-stream, DuckDB killed mid-write.
  'test/integration/sink-outage.test.ts',
  'test/integration/nats-sink-outage.test.ts',
  'test/integration/rabbitmq-sink-outage.test.ts',
  'test/integration/webhook-sink-outage.test.ts',
  'test/integration/duckdb-sink.test.ts',
];

/** The quick subset that runs in every `npm test` too (small tables, outages of seconds). */
export const QUICK_FAULT_FILES = 'test/faults/**/quick-*.test.ts';
