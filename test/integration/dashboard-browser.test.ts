import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/http/dashboard.js';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { launchChromium, screen, screenshot } from '../support/browser.js';
import { createDatabase } from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');
const ROWS = 20_000;

describe('the dashboard in a real browser', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let browser: Browser;
  let page: Page;
  const elsewhere: string[] = [];

  const open = async (path: string, heading: string) => {
    await page.goto(`${service.url}/app/${path}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };
  const badge = () => page.getByTestId('state-orders');

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) {
      throw new Error('the dashboard is not built: run `npm run build:ui` (npm test does it first)');
    }
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'dashboard');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id integer PRIMARY KEY, item text NOT NULL);
       INSERT INTO orders SELECT i, 'item ' || i FROM generate_series(1, ${ROWS}) AS i;
       CREATE TABLE notes (body text); ANALYZE orders;`,
    );
    service = await startTestService(testConfig(dbs.store));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Everything the page loads must come from the service itself.
    page.on('request', (request) => {
      if (!request.url().startsWith(service.url) && !request.url().startsWith('data:'))
        elsewhere.push(request.url());
    });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('loads /app/ (and / leads there) with an empty pipelines list', async () => {
    await page.goto(service.url);
    await page.getByRole('heading', { level: 1, name: 'Pipelines' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/app/');
    await expect.poll(() => page.getByTestId('live-status').getAttribute('data-status')).toBe('live');
    await screenshot(page, '01-pipelines-empty');
  });

  it('creates the source and sink connections through the form', async () => {
    await open('connections', 'Connections');
    const form = page.getByRole('region', { name: 'New connection' });
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['dst', dbs.sink],
    ] as const) {
      await form.getByLabel('Name').fill(name);
      await form.getByLabel('DSN').fill(dsn);
      await form.getByRole('button', { name: 'Create' }).click();
      await page.getByTestId(`connection-row-${name}`).waitFor();
    }
    // Passwords never reach the page.
    expect(await page.getByTestId('connection-row-src').textContent()).not.toContain('secret');
    await screenshot(page, '02-connections');
  });

  it('creates a pipeline from the tables the source lists, the unreplicable one disabled', async () => {
    await open('pipelines/new', 'Create pipeline');
    await page.getByLabel('Name', { exact: true }).fill('orders');
    await page.getByLabel('Source connection').selectOption('src');
    const orders = page.getByRole('checkbox', { name: 'public.orders' });
    await orders.waitFor();
    expect(await page.getByRole('checkbox', { name: 'public.notes' }).isDisabled()).toBe(true);
    await orders.check();
    await page.getByLabel('Sink connection').selectOption('dst');
    await screenshot(page, '03-create-pipeline');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    expect(await badge().getAttribute('data-state')).toBe('stopped');
  });

  it('shows what a source role lacks, with the statements to run, and creates through a publication it names', async () => {
    const role = 'dashtest_limited';
    // The source database is new for every run, so the role holds nothing elsewhere.
    await sqlOn(
      dbs.source,
      `DROP ROLE IF EXISTS ${role}; CREATE ROLE ${role} LOGIN REPLICATION; GRANT SELECT ON orders TO ${role};
       CREATE PUBLICATION orders_pub FOR TABLE orders`,
    );
    const dsn = new URL(dbs.source);
    dsn.username = role;
    dsn.password = '';
    const made = await service.request('POST', '/v1/connections', {
      name: 'limited',
      type: 'postgres',
      dsn: dsn.toString(),
    });
    expect(made.status).toBe(201);

    await open('pipelines/new', 'Create pipeline');
    await page.getByLabel('Name', { exact: true }).fill('limited');
    await page.getByLabel('Source connection').selectOption('limited');
    const orders = page.getByRole('checkbox', { name: 'public.orders' });
    await orders.waitFor();
    await orders.check();
    await page.getByLabel('Sink connection').selectOption('dst');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    const refusal = page.locator('#pipeline-source-error');
    await refusal.waitFor();
    const text = await refusal.innerText();
    expect(text).toContain(`source connection 'limited' (role ${role}) lacks what the pipeline needs`);
    expect(text).toContain(`GRANT CREATE ON DATABASE dashboard_src TO ${role};`);
    expect(text).toContain(`ALTER TABLE public.orders OWNER TO ${role};`);
    // One privilege a line: the statements are not run together.
    expect(text.split('\n').length).toBeGreaterThan(2);
    await screenshot(page, '03b-create-pipeline-privileges');

    await page.getByLabel('Publication').fill('orders_pub');
    // A target of its own: pipeline orders writes public.orders on dst.
    await page.locator('#target-schema').fill('limited_copy');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'limited' }).waitFor();
    const created = await service.request('GET', '/v1/pipelines/limited');
    expect(created.body.source).toMatchObject({ connection: 'limited', publication: 'orders_pub' });
    expect((await service.request('DELETE', '/v1/pipelines/limited')).status).toBe(204);
    expect((await service.request('DELETE', '/v1/connections/limited')).status).toBe(204);
  });

  it('starts it: the badge turns running and the copy reaches 100 % live, without a reload', async () => {
    await open('', 'Pipelines');
    expect(await page.getByTestId('pause-orders').isDisabled()).toBe(true);
    await page.getByTestId('start-orders').click();
    await expect.poll(() => badge().getAttribute('data-state'), { timeout: 30_000 }).toBe('running');
    await page.getByTestId('pipeline-row-orders').getByRole('link', { name: 'orders' }).click();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    const copy = page.getByRole('progressbar', { name: 'Copy of public.orders' });
    await expect
      .poll(() => copy.evaluate((bar) => (bar as unknown as { value: number }).value), { timeout: 60_000 })
      .toBe(100);
    await waitConverged(dbs.source, dbs.sink, 'orders');
    // The phase is shown next to the state, in the page's header and in the list's row.
    await expect
      .poll(() => page.getByTestId('phase-orders').getAttribute('data-phase'), { timeout: 30_000 })
      .toBe('streaming');
    await screenshot(page, '04-pipeline-detail');
  });

  it('shows a schema change waiting for review and approves it from the page', async () => {
    await sqlOn(dbs.source, "ALTER TABLE orders ADD COLUMN note text DEFAULT 'new'");
    await sqlOn(dbs.source, `INSERT INTO orders (id, item) VALUES (${ROWS + 1}, 'after the change')`);
    await expect
      .poll(() => badge().getAttribute('data-state'), { timeout: 30_000 })
      .toBe('pending_schema_approval');
    const review = page.getByTestId('schema-review');
    await review.getByTestId('schema-ddl').waitFor();
    expect(await review.getByTestId('schema-ddl').textContent()).toContain('ADD COLUMN');
    await screenshot(page, '05-schema-review');
    // Held: the page shows the source WAL the sink does not hold yet, live.
    await expect
      .poll(() => page.getByTestId('lag-bytes-orders').textContent(), { timeout: 30_000 })
      .toMatch(/^\s*[1-9][\d.]* (B|KiB|MiB)\s*$/);
    expect(await page.getByTestId('retained-orders').textContent()).toMatch(/\d/);
    await review.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => badge().getAttribute('data-state'), { timeout: 30_000 }).toBe('running');
    await waitFor(
      async () =>
        (await sqlOn(dbs.sink, `SELECT note FROM orders WHERE id = ${ROWS + 1}`))[0]?.note === 'new',
      'the new column in the sink',
    );
  });

  it('verifies from the pipeline page: a row changed in the sink shows as differing, and Repair mends it', async () => {
    await open('pipelines/orders', 'orders');
    const panel = page.getByTestId('verification');
    await panel.getByText('Not verified yet').waitFor();
    await sqlOn(dbs.sink, "UPDATE orders SET item = 'changed by hand' WHERE id = 5");
    await panel.getByTestId('verify-now').click();
    const result = () => panel.getByTestId('verification-result').textContent();
    await expect.poll(result, { timeout: 60_000 }).toBe('differs');
    const row = panel.getByTestId('verdict-public.orders');
    expect(await row.textContent()).toContain('differs');
    await row.getByText('Keys (1)').click();
    expect(await row.textContent()).toContain('changed id=5');
    await screenshot(page, '05b-verification-differs');
    // The live feed brings the repair's follow-up verification, without a reload.
    await panel.getByTestId('verification-repair').click();
    await expect.poll(result, { timeout: 60_000 }).toBe('matched');
    expect(await panel.getByText('checking a repair').count()).toBe(1);
    await waitConverged(dbs.source, dbs.sink, 'orders');
  });

  it('draws the state machine from its definition, with the pipeline state highlighted', async () => {
    await open('machine/orders', 'State machine');
    const diagram = page.getByTestId('machine-diagram');
    const running = diagram.locator('[data-node="pipeline.running"]');
    await running.waitFor();
    await expect.poll(() => running.getAttribute('data-active')).toBe('true');
    expect(await diagram.locator('[data-node="pipeline.pending_schema_approval"]').count()).toBe(1);
    expect(await diagram.locator('[data-action="pause"]').count()).toBeGreaterThan(0);
    // Fitted to the page's width: neither the page nor the drawing's box scrolls sideways.
    const box = diagram.locator('.diagram-scroll');
    expect(await box.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await screenshot(page, '06-state-machine');
  });

  it('shows workers and health', async () => {
    await open('workers', 'Workers and health');
    await page.getByText('live', { exact: true }).first().waitFor();
    await screenshot(page, '07-workers');
  });

  it("shows a failed pipeline's error in its list row and at the top of its page, with Copy again", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await open('', 'Pipelines');
    await sqlOn(dbs.sink, 'DROP TABLE orders');
    await sqlOn(dbs.source, `UPDATE orders SET item = 'after the drop' WHERE id <= 10`);
    await expect.poll(() => badge().getAttribute('data-state'), { timeout: 60_000 }).toBe('failed');
    // In the row: one line, the whole text on hover, and the action that mends it.
    const row = page.getByTestId('pipeline-row-orders');
    const line = row.getByTestId('problem-text-orders');
    await expect.poll(() => line.textContent(), { timeout: 30_000 }).toContain('SINK_TABLE_CHANGED');
    expect(await row.locator('summary').getAttribute('title')).toContain('public.orders');
    // One line, cut with an ellipsis (the tests are compiled without the DOM's types).
    expect(
      await line.evaluate(
        (el) =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { whiteSpace: string } }
          ).getComputedStyle(el).whiteSpace,
      ),
    ).toBe('nowrap');
    expect(await row.getByTestId('backfill-public.orders').isVisible()).toBe(true);
    const table = page.getByRole('region', { name: 'Pipelines table' });
    expect(await table.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
    await screen(page, 'pipelines-failed-1440x900');

    await row.getByRole('link', { name: 'orders' }).click();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    const now = page.getByTestId('pipeline-now');
    await now.getByTestId('problem-text-orders').waitFor();
    expect(await now.getByTestId('problem-text-orders').textContent()).toContain('SINK_TABLE_CHANGED');
    // At the top: in the first screenful, above the charts.
    const nowBox = await now.boundingBox();
    const chartsBox = await page.getByRole('heading', { name: 'Throughput and lag' }).boundingBox();
    expect(nowBox && chartsBox && nowBox.y < chartsBox.y && nowBox.y < 900).toBe(true);
    expect(await now.getByTestId('start-orders').isEnabled()).toBe(true);
    await screen(page, 'pipeline-failed-1440x900');

    await now.getByTestId('backfill-public.orders').click();
    await now.getByTestId('confirm-backfill-public.orders').click();
    await expect.poll(() => badge().getAttribute('data-state'), { timeout: 60_000 }).toBe('running');
    await waitConverged(dbs.source, dbs.sink, 'orders');
    await expect.poll(() => now.getByTestId('problem-orders').count(), { timeout: 30_000 }).toBe(0);
  });

  it('moves the counters and the run history with the pipeline, without a reload', async () => {
    await open('pipelines/orders', 'orders');
    const total = page.getByTestId('events-total');
    await total.waitFor();
    const before = Number((await total.textContent())?.replace(/[^0-9]/g, ''));
    await sqlOn(dbs.source, `UPDATE orders SET item = 'counted' WHERE id <= 20`);
    await expect
      .poll(async () => Number((await total.textContent())?.replace(/[^0-9]/g, '')), { timeout: 30_000 })
      .toBeGreaterThanOrEqual(before + 20);
    // Stopped from elsewhere: the newest run ends as stopped on this page, read again until it has.
    expect((await service.request('PUT', '/v1/pipelines/orders/state', { state: 'stop' })).status).toBe(200);
    const newest = page.getByTestId('run-history').locator('tbody tr').first();
    await expect.poll(() => newest.textContent(), { timeout: 30_000 }).toContain('stopped');
    expect((await service.request('PUT', '/v1/pipelines/orders/state', { state: 'start' })).status).toBe(200);
    await expect.poll(() => badge().getAttribute('data-state'), { timeout: 60_000 }).toBe('running');
  });

  it('narrows the list by name and state, sorts it, and keeps the choices in the address', async () => {
    const made = await service.request('POST', '/v1/pipelines', {
      name: 'archive',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'dst', properties: { target_schema: 'archive_copy' } },
    });
    expect(made.status).toBe(201);
    await open('', 'Pipelines');
    const rows = page.locator('[data-testid^="pipeline-row-"]');
    await expect.poll(() => rows.count()).toBe(2);
    const names = () => rows.locator('th[scope="row"]').allTextContents();

    await page.getByTestId('pipeline-search').fill('ord');
    await expect.poll(names).toEqual(['orders']);
    expect(new URL(page.url()).searchParams.get('q')).toBe('ord');
    await page.getByTestId('pipeline-search').fill('');
    await expect.poll(() => rows.count()).toBe(2);

    await page.getByTestId('pipeline-state-filter').selectOption('stopped');
    await expect.poll(names).toEqual(['archive']);
    expect(new URL(page.url()).searchParams.get('state')).toBe('stopped');
    // The address keeps the filter: a reload (or a shared link) shows the same rows.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Pipelines' }).waitFor();
    await expect.poll(names).toEqual(['archive']);
    expect(await page.getByTestId('pipeline-state-filter').inputValue()).toBe('stopped');
    // The Pipelines link (no query) shows every pipeline again.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Pipelines' }).click();
    await expect.poll(names).toEqual(['archive', 'orders']);
    expect(await page.getByTestId('pipeline-state-filter').inputValue()).toBe('');
    expect(new URL(page.url()).search).toBe('');
    await page.getByTestId('sort-name').click();
    await expect.poll(names).toEqual(['orders', 'archive']);
    expect(new URL(page.url()).searchParams.get('dir')).toBe('desc');
    await page.getByTestId('sort-state').click();
    await expect.poll(names).toEqual(['orders', 'archive']); // running before stopped
    expect(await page.locator('th[aria-sort="ascending"]').textContent()).toContain('State');
    await screen(page, 'pipelines-1440x900');
  });

  it("shows a copy's phase, rows and rows per second in the list and the pipeline's header", async () => {
    // The copy of the real pipeline is over in a second: the feed is relayed as it is, with a
    // copy of pipeline archive added, its rows_done growing by 2,000 every second.
    const copying = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await copying.routeWebSocket(/\/v1\/live$/, (ws) => {
      ws.connectToServer();
      let done = 0;
      const timer = setInterval(() => {
        done += 2_000;
        ws.send(
          JSON.stringify({
            type: 'pipeline.stats',
            name: 'archive',
            state: 'running',
            phase: 'snapshot',
            events_per_second: 0,
            replication_lag_ms: 0,
            replication_lag_bytes: null,
            retained_wal_bytes: null,
            last_checkpoint_at: null,
            copying: [
              {
                table: 'public.orders',
                partitions_total: 4,
                partitions_done: 0,
                rows_total: 100_000,
                rows_done: done,
                percent: done / 1_000,
                eta_seconds: null,
              },
            ],
          }),
        );
      }, 1_000);
      ws.onClose(() => clearInterval(timer));
    });
    try {
      const figures = /([\d,.\s]+) \/ 100,000 rows · ([\d,.]+) rows\/s/;
      const rate = async (text: string | null) =>
        Number((figures.exec(text ?? '')?.[2] ?? '0').replaceAll(',', ''));
      await copying.goto(`${service.url}/app/`);
      const row = copying.getByTestId('pipeline-row-archive');
      await expect.poll(() => row.getByTestId('phase-archive').getAttribute('data-phase')).toBe('snapshot');
      await expect.poll(() => row.getByTestId('copy-archive').textContent()).toMatch(figures);
      const listed = await rate(await row.getByTestId('copy-archive').textContent());
      expect(listed).toBeGreaterThan(1_000);
      expect(listed).toBeLessThan(3_000);
      await screen(copying, 'pipelines-copying-1440x900');

      await copying.goto(`${service.url}/app/pipelines/archive`);
      await copying.getByRole('heading', { level: 1, name: 'archive' }).waitFor();
      const header = copying.locator('.page-head');
      await expect.poll(() => header.getByTestId('copy-archive').textContent()).toMatch(figures);
      expect(await header.getByTestId('phase-archive').getAttribute('data-phase')).toBe('snapshot');
    } finally {
      await copying.close();
    }
  });

  it('shows the actions next to the state on the pipeline page, and no state diagram', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await open('pipelines/orders', 'orders');
    const now = page.getByTestId('pipeline-now');
    await now.getByTestId('stop-orders').waitFor();
    expect(await now.getByTestId('stop-orders').isEnabled()).toBe(true);
    expect(await now.getByTestId('start-orders').isDisabled()).toBe(true);
    const box = await now.boundingBox();
    expect(box && box.y < 400).toBe(true);
    expect(await page.getByTestId('machine-diagram').count()).toBe(0);
    expect(await now.getByRole('link', { name: 'Where it is in the state machine' }).count()).toBe(1);
    await screen(page, 'pipeline-1440x900');
  });

  it('follows the system in dark mode', async () => {
    const background = () =>
      page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
    await open('', 'Pipelines');
    await page.emulateMedia({ colorScheme: 'light' });
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await background();
    expect(dark).not.toBe(light);
    // Dark: each channel low.
    const channels = (dark.match(/\d+/g) ?? []).slice(0, 3).map(Number);
    expect(Math.max(...channels)).toBeLessThan(60);
    await screen(page, 'pipelines-dark-1440x900');
    await open('pipelines/orders', 'orders');
    await screen(page, 'pipeline-dark-1440x900');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it("fits a phone: the list and the pipeline page's actions without scrolling sideways", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const scrollWidth = () => page.evaluate<number>('document.documentElement.scrollWidth');
    await open('', 'Pipelines');
    await page.getByTestId('pipeline-row-orders').waitFor();
    expect(await scrollWidth()).toBeLessThanOrEqual(390);
    const stop = page.getByTestId('stop-orders');
    const stopBox = await stop.boundingBox();
    expect(stopBox && stopBox.x >= 0 && stopBox.x + stopBox.width <= 390).toBe(true);
    await screen(page, 'pipelines-390x844');

    await open('pipelines/orders', 'orders');
    const now = page.getByTestId('pipeline-now');
    await now.getByTestId('stop-orders').waitFor();
    expect(await scrollWidth()).toBeLessThanOrEqual(390);
    for (const action of ['start', 'stop', 'pause', 'resume']) {
      const button = await now.getByTestId(`${action}-orders`).boundingBox();
      expect(button && button.x >= 0 && button.x + button.width <= 390, action).toBe(true);
    }
    await screen(page, 'pipeline-390x844');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('loads each page without a console error', async () => {
    const errors: string[] = [];
    const onConsole = (message: { type(): string; text(): string }) => {
      if (message.type() === 'error') errors.push(message.text());
    };
    const onPageError = (error: Error) => errors.push(error.message);
    const onResponse = (response: { status(): number; url(): string }) => {
      if (response.status() >= 400) errors.push(`${response.status()} ${response.url()}`);
    };
    page.on('response', onResponse);
    page.on('console', onConsole);
    page.on('pageerror', onPageError);
    try {
      for (const [path, heading] of [
        ['', 'Pipelines'],
        ['pipelines/orders', 'orders'],
        ['pipelines/new', 'Create pipeline'],
        ['connections', 'Connections'],
        ['workers', 'Workers and health'],
        ['machine/orders', 'State machine'],
      ] as const) {
        await open(path, heading);
        // The page's own requests and the live feed's first messages.
        await page.waitForLoadState('networkidle');
        expect(errors, path).toEqual([]);
      }
    } finally {
      page.off('console', onConsole);
      page.off('pageerror', onPageError);
      page.off('response', onResponse);
    }
    expect((await service.request('DELETE', '/v1/pipelines/archive')).status).toBe(204);
  });

  it('fits a narrow window, and made no request anywhere but the service', async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    await open('', 'Pipelines');
    // Evaluated in the page, where the DOM is (the tests are compiled without its types).
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, '08-pipelines-narrow');
    expect(elsewhere).toEqual([]);
  });
});

describe('the dashboard with authentication enabled', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const store = await createDatabase(cluster?.adminUrl as string, 'dashboard_auth');
    service = await startTestService(enableAuth(testConfig(store)));
    const bootstrap = await new ApiCaller(service.url).call('POST', '/v1/admin/bootstrap', ADMIN);
    expect(bootstrap.status).toBe(201);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('asks to sign in, shows the user and project, and signs out', async () => {
    await page.goto(`${service.url}/app/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await page.getByLabel('E-mail').fill(ADMIN.email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(async () => (await page.getByTestId('login-error').textContent()) ?? '')
      .toMatch(/wrong/);
    await page.getByLabel('Password').fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Pipelines' }).waitFor();
    expect(await page.getByTestId('current-user').textContent()).toContain(ADMIN.display_name);
    await expect.poll(() => page.getByTestId('live-status').getAttribute('data-status')).toBe('live');
    // The session cookie is HttpOnly: scripts of the page cannot read it.
    expect(await page.evaluate<string>('document.cookie')).not.toContain('service_session');
    await screenshot(page, '09-signed-in');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await screenshot(page, '10-sign-in');
  });
});
