import { paceOverClients } from './paced-load.js';

/**
 * The write load of the source-cost benchmark, in a process of its own: single-row inserts at a
 * fixed rate, table after table (`t1` … `t<tables>`), spread over the clients, each its own
 * transaction at the session's `synchronous_commit`. Usage: source-cost-driver.ts <url> <tables>
 * <rate> <seconds> <clients> [<first id>] (ids from <first id>, default 0, on). Prints a line `{"startedAt": <epoch ms>}` as the first insert is
 * sent (the benchmark times what happens halfway through the load from it), then, at the end, the
 * offered rate and the mean and 99th percentile of an insert's latency, in milliseconds.
 */
async function drive(
  url: string,
  tables: number,
  rate: number,
  total: number,
  clientCount: number,
  firstId: number,
) {
  const latencies: number[] = [];
  const elapsed = await paceOverClients(url, rate, total, clientCount, async (client, i) => {
    if (i === 0) console.log(JSON.stringify({ startedAt: Date.now() }));
    const sent = performance.now();
    await client.query(`INSERT INTO t${1 + (i % tables)} (id, v) VALUES ($1, 'x')`, [firstId + i]);
    latencies.push(performance.now() - sent);
  });
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((sum, l) => sum + l, 0) / Math.max(1, latencies.length);
  const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0;
  console.log(JSON.stringify({ offered: total / elapsed, meanMs: mean, p99Ms: p99 }));
}

const [url, tables, rate, seconds, clients, firstId] = process.argv
  .slice(2)
  .map((a, i) => (i === 0 ? a : Number(a)));
drive(
  url as string,
  tables as number,
  rate as number,
  Math.round((rate as number) * (seconds as number)),
  clients as number,
  (firstId as number | undefined) ?? 0,
).catch((error) => {
  console.error(error);
  process.exit(1);
});
