import { paceOverClients } from './paced-load.js';

/**
 * The load of the live-load benchmark, in a process of its own so that it does not share a thread
 * with the service under test: single-row transactions at a fixed rate, spread over the clients.
 * Usage: live-load-driver.ts <url> <table> <rate> <seconds> <clients> [<rows>]; prints the offered
 * rate. With the rate `max` (and <rows>), the rows are inserted as fast as the clients go.
 */
async function drive(url: string, table: string, rate: number, total: number, clientCount: number) {
  const elapsed = await paceOverClients(url, rate, total, clientCount, async (client, i) => {
    await client.query(`INSERT INTO ${table} (id, v) VALUES ($1, 'x')`, [i]);
  });
  console.log(JSON.stringify({ offered: total / elapsed }));
}

const [url, table, rateText, seconds, clients, rows] = process.argv.slice(2);
const rate = rateText === 'max' ? Number.POSITIVE_INFINITY : Number(rateText);
const total = rows === undefined ? Math.round(rate * Number(seconds)) : Number(rows);
drive(url as string, table as string, rate, total, Number(clients)).catch((error) => {
  console.error(error);
  process.exit(1);
});
