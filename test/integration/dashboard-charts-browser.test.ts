import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/http/dashboard.js';
import { launchChromium, screen } from '../support/browser.js';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');
/** Rows enough that copying the table again lasts for several of the live feed's seconds. */
const BIG_ROWS = 1_000_000;

/** The pipeline page's charts over their windows, and a table copied again while others stream. */
describe('the charts and the copy of a table in a real browser', { timeout: 300_000 }, () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  /** The big table copied whole: its rows counted, not compared, which would take long each time. */
  const bigCopied = () =>
    waitFor(
      async () => {
        const progress = (await service.request('GET', '/v1/pipelines/charted/progress')).body;
        const big = progress.tables?.find((t: { table: string }) => t.table === 'public.big');
        if (big?.status !== 'streaming') return false;
        const [row] = await sqlOn(dbs.sink, 'SELECT count(*)::int AS n FROM big').catch(() => [{ n: -1 }]);
        return row?.n === BIG_ROWS;
      },
      'the big table copied',
      240_000,
    );

  const open = async (path: string, heading: string) => {
    await page.goto(`${service.url}/app/${path}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) {
      throw new Error('the dashboard is not built: run `npm run build:ui` (npm test does it first)');
    }
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'charts');
    await sqlOn(
      dbs.source,
      `CREATE TABLE small (id integer PRIMARY KEY, v integer);
       INSERT INTO small SELECT i, i FROM generate_series(1, 100) AS i;
       CREATE TABLE big (id integer PRIMARY KEY, pad text NOT NULL);
       INSERT INTO big SELECT i, repeat('x', 40) FROM generate_series(1, ${BIG_ROWS}) AS i;
       ANALYZE big;`,
    );
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'charted',
      source: { connection: 'src', tables: ['public.small', 'public.big'] },
      sink: { connection: 'dst' },
    });
    expect(created.status).toBe(201);
    await service.request('PUT', '/v1/pipelines/charted/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'small', 'id', 240_000);
    await bigCopied();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 400) errors.push(`${response.status()} ${response.url()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('switches the charts to a window read from the history, 24 h included, without an error', async () => {
    const id = (await service.request('GET', '/v1/pipelines/charted')).body.id as string;
    // A day behind the pipeline: a point every 10 s from 24 h to 2 h ago, a busy hour among them.
    await sqlOn(
      dbs.store,
      `INSERT INTO pipeline_history (pipeline_id, at, state, phase, events_per_second, lag_ms, lag_bytes, sink_errors)
       SELECT $1, now() - interval '24 hours' + n * interval '10 s', 'running', 'streaming',
         CASE WHEN n BETWEEN 3600 AND 3960 THEN 250 ELSE 0 END, CASE WHEN n % 100 = 0 THEN 1500 ELSE 0 END, NULL, 0
       FROM generate_series(0, 22 * 360) n ON CONFLICT DO NOTHING`,
      [id],
    );
    await open('pipelines/charted', 'charted');
    const events = page.getByTestId('chart-eventsPerSecond');
    expect(await events.getAttribute('data-window')).toBe('live');

    await page.getByTestId('chart-window-1h').click();
    await expect.poll(() => events.getAttribute('data-window')).toBe('1h');
    await expect
      .poll(async () => Number(await events.getAttribute('data-points')), { timeout: 30_000 })
      .toBeGreaterThan(0);
    expect(await page.getByTestId('chart-window-1h').getAttribute('aria-pressed')).toBe('true');

    const day = page.waitForResponse((r) => r.url().includes('/v1/pipelines/charted/history?window=24h'));
    await page.getByTestId('chart-window-24h').click();
    expect((await day).status()).toBe(200);
    // The day, merged two minutes a point: hundreds of points, fewer than the 8,640 stored.
    await expect
      .poll(async () => Number(await events.getAttribute('data-points')), { timeout: 30_000 })
      .toBeGreaterThan(500);
    expect(Number(await events.getAttribute('data-points'))).toBeLessThan(800);
    expect(await events.textContent()).toContain('last 24 hours');
    // Hour labels, none after now.
    const labels = ((await events.getAttribute('data-ticks')) ?? '').split(' ').filter(Boolean);
    expect(Number(await events.getAttribute('data-last-tick'))).toBeLessThanOrEqual(Date.now() / 1000);
    for (const label of labels) expect(label).toMatch(/^\d\d:\d\d$/);
    await screen(page, 'pipeline-desktop');

    // An idle pipeline: a flat line at zero, called idle, not a chart without data.
    await page.getByTestId('chart-window-live').click();
    await page.getByTestId('chart-idle-lagMs').waitFor({ timeout: 60_000 });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('chart-window-6h').click();
    await expect
      .poll(async () => Number(await events.getAttribute('data-points')), { timeout: 30_000 })
      .toBeGreaterThan(0);
    await screen(page, 'pipeline-phone');
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(errors).toEqual([]);
  });

  it("shows 'streaming · copying again' while one table is copied again and the other streams", async () => {
    await open('pipelines/charted', 'charted');
    const phase = page.getByTestId('phase-charted');
    await expect.poll(() => phase.getAttribute('data-phase'), { timeout: 60_000 }).toBe('streaming');
    const requestedAt = Date.now() / 1000;
    const accepted = await service.request('POST', '/v1/pipelines/charted/backfill', {
      tables: ['public.big'],
    });
    expect(accepted.status).toBe(202);
    await expect.poll(() => phase.textContent(), { timeout: 60_000 }).toContain('streaming · copying again');
    await page.getByTestId('copy-charted').waitFor();
    // The copy's rows are not events: the throughput chart draws them as a line of their own, live.
    // A point with rows copied, since the copy was asked for; however short the copy, the service
    // counts its rows in the next message, so the point is there whatever the machine's speed.
    const events = page.getByTestId('chart-eventsPerSecond');
    await expect
      .poll(async () => Number(await events.getAttribute('data-copy-last-at')), { timeout: 60_000 })
      .toBeGreaterThan(requestedAt);
    expect(await events.getAttribute('data-copy')).toBe('true');
    expect(await events.textContent()).toContain('Rows copied per second');
    expect(await page.getByTestId('chart-lagMs').getAttribute('data-copy')).toBe('false');
    await screen(page, 'pipeline-copying-again');
    // The other table streams meanwhile.
    await sqlOn(dbs.source, 'INSERT INTO small SELECT i, i FROM generate_series(101, 150) AS i');
    await waitConverged(dbs.source, dbs.sink, 'small', 'id', 120_000);
    await bigCopied();
    await expect.poll(() => phase.textContent(), { timeout: 60_000 }).not.toContain('copying again');
    await expect
      .poll(async () => Number(await events.getAttribute('data-copy-now')), { timeout: 60_000 })
      .toBe(0);
    expect(errors).toEqual([]);
  });

  it('leaves screenshots of the main pages at a desktop and a phone size', async () => {
    for (const [path, heading, shot] of [
      ['', 'Pipelines', 'pipelines'],
      ['workers', 'Workers and health', 'workers'],
      ['machine/charted', 'State machine', 'machine'],
    ] as const) {
      for (const [size, viewport] of [
        ['desktop', { width: 1440, height: 900 }],
        ['phone', { width: 390, height: 844 }],
      ] as const) {
        await page.setViewportSize(viewport);
        await open(path, heading);
        await page.waitForLoadState('networkidle');
        await screen(page, `${shot}-${size}`);
      }
    }
    expect(errors).toEqual([]);
  });
});
