import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/http/dashboard.js';
import { launchChromium, screen } from '../support/browser.js';
import { replicationDatabases, sqlOn } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('the create and edit forms in a real browser', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let browser: Browser;
  let page: Page;

  const open = async (path: string, heading: string) => {
    await page.goto(`${service.url}/app/${path}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };

  /** The message a field shows for its problem: what its aria-describedby names, ending in -error. */
  const problemOf = async (field: Locator): Promise<string | null> => {
    if ((await field.getAttribute('aria-invalid')) !== 'true') return null;
    const ids = ((await field.getAttribute('aria-describedby')) ?? '').split(' ');
    const id = ids.find((i) => i.endsWith('-error'));
    return id ? page.locator(`#${id}`).innerText() : null;
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) {
      throw new Error('the dashboard is not built: run `npm run build:ui` (npm test does it first)');
    }
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'dashforms');
    await sqlOn(dbs.source, 'CREATE TABLE orders (id integer PRIMARY KEY, item text NOT NULL)');
    service = await startTestService(testConfig(dbs.store));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('shows every problem of an empty connection form at its field, in plain words, and clears each once fixed', async () => {
    await open('connections', 'Connections');
    const form = page.getByRole('region', { name: 'New connection' });
    const name = form.getByLabel('Name');
    const dsn = form.getByLabel('DSN');
    await form.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => problemOf(name)).toBe('Enter a name.');
    expect(await problemOf(dsn)).toMatch(/^Enter the DSN/);
    expect(await page.getByTestId('new-connection-summary').innerText()).toContain('2 fields need a change');
    // Not the schema's wording, and each problem once.
    expect(await form.innerText()).not.toMatch(/must NOT|fewer than/);
    expect(await form.getByText('Enter a name.').count()).toBe(1);

    await name.fill('-bad name');
    await expect.poll(() => problemOf(name)).toBeNull();
    expect(await problemOf(dsn)).toMatch(/^Enter the DSN/);
    await form.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => problemOf(name)).toBe('Start the name with a letter or a digit.');

    await name.fill('src');
    await dsn.fill('mysql://wrong-scheme@h/db');
    await form.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => problemOf(dsn)).toBe('A postgres DSN starts with postgres:// or postgresql://.');
    expect(await problemOf(name)).toBeNull();
  });

  it('puts a refusal of the service at its field', async () => {
    const form = page.getByRole('region', { name: 'New connection' });
    const dsn = form.getByLabel('DSN');
    // A Unix socket directory: the service refuses it unless the operator allows local access.
    await dsn.fill('postgres://postgres@/postgres?host=/tmp');
    await form.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => problemOf(dsn)).toMatch(/socket|host/i);
    expect(await page.getByTestId('new-connection-error').innerText()).toBe('');
    await dsn.fill('postgres://postgres@db.example/postgres');
    await expect.poll(() => problemOf(dsn)).toBeNull();
  });

  it('tests the typed values before saving, and lists what it found', async () => {
    const form = page.getByRole('region', { name: 'New connection' });
    await form.getByLabel('Name').fill('src');
    await form.getByLabel('DSN').fill(dbs.source);
    await form.getByRole('button', { name: 'Test connection' }).click();
    const results = page.getByTestId('new-connection-test-results');
    await results.waitFor();
    const text = await results.innerText();
    expect(text).toContain('The connection works as a source.');
    expect(text).toContain('Reached the postgres server and logged in.');
    expect(text).toContain('may connect to database dashforms_src');
    expect(text).toContain("wal_level is 'logical'");
    // Nothing was saved.
    expect((await service.request('GET', '/v1/connections')).body).toEqual([]);

    await form.getByLabel('DSN').fill('postgres://postgres@127.0.0.1:5432/postgres');
    await form.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => results.innerText()).toContain('set wal_level = logical');
    expect(await results.innerText()).toContain('The connection is not usable as a source yet');
  });

  it('lists which pipelines use each connection, and tests a listed one', async () => {
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['dst', dbs.sink],
      ['spare', dbs.sink],
    ] as const) {
      expect((await service.request('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(
        201,
      );
    }
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'orders-copy',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'dst' },
    });
    expect(created.status).toBe(201);
    await open('connections', 'Connections');
    const srcUsers = page.getByTestId('used-by-src');
    expect(await srcUsers.innerText()).toBe('orders-copy (source)');
    expect(await page.getByTestId('used-by-dst').innerText()).toBe('orders-copy (sink)');
    expect(await page.getByTestId('used-by-spare').innerText()).toBe('no pipeline');
    await page.getByRole('button', { name: 'Test dst' }).click();
    const results = page.getByTestId('connection-test-dst');
    await results.waitFor();
    expect(await results.innerText()).toContain('may connect to database dashforms_dst');
    await screen(page, 'connections-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screen(page, 'connections-phone');
    await page.setViewportSize({ width: 1440, height: 900 });

    await srcUsers.getByRole('link', { name: 'orders-copy' }).click();
    await page.getByRole('heading', { level: 1, name: 'orders-copy' }).waitFor();
  });

  it('shows every problem of an empty create-pipeline form at its field, defaults as help, and clears each once fixed', async () => {
    await open('pipelines/new', 'Create pipeline');
    const name = page.getByLabel('Name', { exact: true });
    const source = page.getByLabel('Source connection');
    const sink = page.getByLabel('Sink connection');
    const parallelism = page.getByLabel(/Partitions copied at once/);
    expect(await parallelism.getAttribute('placeholder')).toContain('2 to 4');
    expect(await page.getByLabel(/Rows per partition/).getAttribute('placeholder')).toContain('250000');
    expect(await page.getByLabel('Schema policy').innerText()).toContain('review (default)');

    await parallelism.fill('99');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await expect.poll(() => problemOf(name)).toBe('Enter a name.');
    expect(await problemOf(source)).toBe('Choose the source connection.');
    expect(await problemOf(sink)).toBe('Choose the sink connection.');
    expect(await problemOf(parallelism)).toMatch(/^Enter a number from 1 to 32/);
    expect(await page.getByTestId('create-pipeline-summary').innerText()).toContain('4 fields need a change');
    await screen(page, 'create-pipeline-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screen(page, 'create-pipeline-phone');
    await page.setViewportSize({ width: 1440, height: 900 });

    await name.fill('orders-copy');
    await expect.poll(() => problemOf(name)).toBeNull();
    await sink.selectOption('spare');
    await expect.poll(() => problemOf(sink)).toBeNull();
    expect(await problemOf(source)).toBe('Choose the source connection.');
    await parallelism.fill('');
    await expect.poll(() => problemOf(parallelism)).toBeNull();

    // The service's refusal lands at the name: the name is taken.
    await source.selectOption('src');
    const orders = page.getByRole('checkbox', { name: 'public.orders' });
    await orders.waitFor();
    await orders.check();
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await expect.poll(() => problemOf(name)).toBe('This name is taken: choose another.');
    await name.fill('orders-copy-2');
    await expect.poll(() => problemOf(name)).toBeNull();
  });
});
