import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/http/dashboard.js';
import { launchChromium, screen } from '../support/browser.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');
const BULK = 60;

/** Editing, deleting, copying a table again, reviewing from the list and paging, in a real browser. */
describe('managing pipelines from the dashboard', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let browser: Browser;
  let page: Page;
  /** Script errors on the pages (an API's refusal answered on purpose is not one). */
  const consoleErrors: string[] = [];

  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const open = async (path: string, name: string) => {
    await page.goto(`${service.url}/app/${path}`);
    await heading(name).waitFor();
  };
  const api = async (method: string, path: string, body?: unknown) =>
    service.request(method, `/v1${path}`, body);
  const pipeline = async (name: string) =>
    (await api('GET', `/pipelines/${name}`)).body as Record<string, any>;
  const stateOf = async (name: string) => (await pipeline(name)).state as string;
  /** The page at a desktop and a phone size. */
  const screens = async (name: string) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await screen(page, `${name}-desktop`);
    await page.setViewportSize({ width: 390, height: 844 });
    await screen(page, `${name}-phone`);
    await page.setViewportSize({ width: 1440, height: 900 });
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) {
      throw new Error('the dashboard is not built: run `npm run build:ui` (npm test does it first)');
    }
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'manage');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id integer PRIMARY KEY, item text NOT NULL);
       INSERT INTO orders SELECT i, 'item ' || i FROM generate_series(1, 2000) AS i;
       CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL);
       INSERT INTO customers SELECT i, 'customer ' || i FROM generate_series(1, 500) AS i;`,
    );
    service = await startTestService(testConfig(dbs.store));
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['dst', dbs.sink],
    ] as const) {
      expect((await api('POST', '/connections', { name, type: 'postgres', dsn })).status).toBe(201);
    }
    const created = await api('POST', '/pipelines', {
      name: 'orders',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'dst' },
    });
    expect(created.status).toBe(201);
    expect((await api('PUT', '/pipelines/orders/state', { state: 'start' })).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 'orders');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
        consoleErrors.push(message.text());
      }
    });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('edits the tables and a sink property of a running pipeline: a refusal at its field, then saved and applied without a restart', async () => {
    const before = await pipeline('orders');
    await open('pipelines/orders', 'orders');
    await page.getByTestId('edit-orders').click();
    await heading('Edit orders').waitFor();
    // Filled with what the pipeline holds now.
    const orders = page.getByRole('checkbox', { name: 'public.orders' });
    await orders.waitFor();
    expect(await orders.isChecked()).toBe(true);
    expect(await page.getByLabel('Partitions copied at once').inputValue()).toBe(
      String(before.snapshot.parallelism),
    );
    await page.getByRole('checkbox', { name: 'public.customers' }).check();
    await page.getByRole('button', { name: 'Add property' }).click();
    await page.locator('#property-key-0').fill('batch_max_events');
    await page.locator('#property-value-0').fill('0');
    await page.getByRole('button', { name: 'Save' }).click();
    // Refused by the service, shown at the property, the form kept.
    const refusal = page.locator('#properties-error');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('must be an integer from 1 to 1000000');
    expect(await page.locator('#property-key-0').getAttribute('aria-invalid')).toBe('true');
    await screens('edit-pipeline');

    // Checked before sending, in plain words at the field: no table left; ticking one clears it.
    const customers = page.getByRole('checkbox', { name: 'public.customers' });
    await orders.uncheck();
    await customers.uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    const tablesProblem = page.locator('#tables-error');
    await expect.poll(() => tablesProblem.textContent()).toBe('Pick at least one table to replicate.');
    expect(await page.getByTestId('edit-pipeline-summary').textContent()).toContain(
      'One field needs a change',
    );
    expect((await pipeline('orders')).generation).toBe(before.generation);
    await orders.check();
    await customers.check();
    await expect.poll(() => tablesProblem.count()).toBe(0);

    await page.locator('#property-value-0').fill('500');
    await page.getByRole('button', { name: 'Save' }).click();
    await heading('orders').waitFor();
    const after = await pipeline('orders');
    expect(after.source.tables).toEqual(['public.orders', 'public.customers']);
    expect(after.sink.properties).toEqual({ batch_max_events: '500' });
    expect(after.generation).toBe(before.generation + 1);
    // Hot reload: the running pipeline copies the added table and keeps running.
    await waitConverged(dbs.source, dbs.sink, 'customers');
    expect(await stateOf('orders')).toBe('running');
    await page.getByTestId('pipeline-definition').getByText('public.customers').waitFor();
  });

  it('says so when the pipeline was changed elsewhere after the form was filled', async () => {
    await open('pipelines/orders/edit', 'Edit orders');
    await page.getByRole('checkbox', { name: 'public.orders' }).waitFor();
    const current = await pipeline('orders');
    const elsewhere = await api('PUT', '/pipelines/orders', {
      source: { connection: 'src', tables: current.source.tables },
      sink: { connection: 'dst', properties: { batch_max_events: '600' } },
    });
    expect(elsewhere.status).toBe(200);
    await page.locator('#property-value-0').fill('700');
    await page.getByRole('button', { name: 'Save' }).click();
    const warning = page.getByTestId('changed-meanwhile');
    await warning.waitFor();
    expect(await warning.textContent()).toContain('changed by someone else');
    await page.getByRole('button', { name: /Load their version/ }).click();
    expect(await page.locator('#property-value-0').inputValue()).toBe('600');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await heading('orders').waitFor();
    expect((await pipeline('orders')).sink.properties).toEqual({ batch_max_events: '600' });
  });

  it('copies one table again from its row of the copy progress', async () => {
    // Rows lost from the sink behind the pipeline's back: a new copy brings them back.
    await sqlOn(dbs.sink, 'DELETE FROM orders WHERE id <= 100');
    await open('pipelines/orders', 'orders');
    const row = page.getByTestId('progress-public.orders');
    await row.getByTestId('backfill-public.orders').click();
    await screens('backfill-table');
    await row.getByTestId('confirm-backfill-public.orders').click();
    await row.getByTestId('backfill-public.orders').waitFor();
    await waitConverged(dbs.source, dbs.sink, 'orders');
    // The other table offers it too.
    await page.getByTestId('progress-public.customers').getByTestId('backfill-public.customers').waitFor();
  });

  it('leads from the "Review" of a pipeline waiting on a schema change in the list to its review', async () => {
    await sqlOn(dbs.source, "ALTER TABLE orders ADD COLUMN note text DEFAULT 'new'");
    await sqlOn(dbs.source, "INSERT INTO orders (id, item) VALUES (5000, 'after the change')");
    await waitFor(async () => (await stateOf('orders')) === 'pending_schema_approval', 'the schema review');
    await open('', 'Pipelines');
    const review = page.getByTestId('review-orders');
    await review.waitFor();
    await screens('review-from-list');
    await review.click();
    await heading('orders').waitFor();
    expect(new URL(page.url()).hash).toBe('#schema-review');
    const panel = page.getByTestId('schema-review');
    await panel.getByTestId('schema-ddl').waitFor();
    // The review is where the focus is, in view.
    await expect.poll(() => page.locator('#schema-review:focus').count()).toBe(1);
    expect(await panel.isVisible()).toBe(true);
    await screens('review-opened');
    await panel.getByRole('button', { name: 'Approve' }).click();
    await waitFor(async () => (await stateOf('orders')) === 'running', 'the pipeline to resume');
    await open('', 'Pipelines');
    await page.getByTestId('pipeline-row-orders').waitFor();
    await expect.poll(() => page.getByTestId('review-orders').count()).toBe(0);
  });

  it('deletes a pipeline from its page after a confirmation naming it, and goes back to the list', async () => {
    const made = await api('POST', '/pipelines', {
      name: 'scratch',
      source: { connection: 'src', tables: ['public.customers'] },
      sink: { connection: 'dst', properties: { target_schema: 'scratch' } },
    });
    expect(made.status).toBe(201);
    await open('pipelines/scratch', 'scratch');
    await page.getByTestId('delete-scratch').click();
    const confirm = page.getByRole('alertdialog', { name: 'Delete scratch?' });
    expect(await confirm.textContent()).toContain('scratch');
    await screens('delete-pipeline');
    await confirm.getByRole('button', { name: 'Delete scratch' }).click();
    await heading('Pipelines').waitFor();
    expect(new URL(page.url()).pathname).toBe('/app/');
    await page.getByTestId('pipeline-row-orders').waitFor();
    expect(await page.getByTestId('pipeline-row-scratch').count()).toBe(0);
    expect((await api('GET', '/pipelines/scratch')).status).toBe(404);
  });

  it('pages the list 50 at a time, the page in the address, together with the search and the sort', async () => {
    for (let i = 0; i < BULK; i++) {
      const name = `bulk-${String(i).padStart(2, '0')}`;
      const made = await api('POST', '/pipelines', {
        name,
        source: { connection: 'src', tables: ['public.customers'] },
        sink: { connection: 'dst', properties: { target_schema: name.replace('-', '_') } },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    const total = BULK + 1;
    await open('', 'Pipelines');
    const count = page.getByTestId('pipeline-count');
    await expect.poll(() => count.textContent()).toContain(`1–50 of ${total} pipelines`);
    expect(await page.locator('tbody tr').count()).toBe(50);
    await page.getByTestId('pipelines-pager').getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => count.textContent()).toContain(`51–${total} of ${total} pipelines`);
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');
    await page.getByTestId('pipeline-row-orders').waitFor();
    await screens('pipelines-paged');

    // The address brings the same page back; a sort starts again at page 1.
    await page.reload();
    await expect.poll(() => count.textContent()).toContain(`51–${total} of ${total}`);
    await page.getByTestId('sort-name').click(); // descending
    await expect.poll(() => count.textContent()).toContain(`1–50 of ${total}`);
    expect(new URL(page.url()).searchParams.get('page')).toBeNull();
    await page.getByTestId('pipeline-row-orders').waitFor();
    await page.getByTestId('pipelines-pager').getByRole('button', { name: 'Next' }).click();
    await page.getByTestId('pipeline-row-bulk-00').waitFor();

    // A search starts at page 1 and has one page: no pager.
    await page.getByTestId('pipeline-search').fill('bulk-1');
    await expect.poll(() => count.textContent()).toContain(`10 pipelines (filtered from ${total})`);
    expect(new URL(page.url()).searchParams.get('page')).toBeNull();
    expect(await page.getByTestId('pipelines-pager').count()).toBe(0);
  });

  it('made no script error on any of these pages', () => {
    expect(consoleErrors).toEqual([]);
  });
});
