import pg from 'pg';

/**
 * The load of the live-load benchmark, in a process of its own so that it does not share a thread
 * with the service under test: single-row transactions at a fixed rate, spread over the clients.
 * Usage: live-load-driver.ts <url> <table> <rate> <seconds> <clients>; prints the offered rate.
 */
async function drive(url: string, table: string, rate: number, seconds: number, clientCount: number) {
  const clients = await Promise.all(
    Array.from({ length: clientCount }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  const started = performance.now();
  const total = Math.round(rate * seconds);
  let next = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const wait = started + (i * 1000) / rate - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        await client.query(`INSERT INTO ${table} (id, v) VALUES ($1, 'x')`, [i]);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(clients.map((c) => c.end()));
  console.log(JSON.stringify({ offered: total / elapsed }));
}

const [url, table, rate, seconds, clients] = process.argv.slice(2);
drive(url as string, table as string, Number(rate), Number(seconds), Number(clients)).catch((error) => {
  console.error(error);
  process.exit(1);
});
