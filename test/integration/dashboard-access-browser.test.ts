import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DASHBOARD_DIR } from '../../src/http/dashboard.js';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { launchChromium, screen } from '../support/browser.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

const VIEWER = {
  email: 'vic@example.com',
  display_name: 'Vic Viewer',
  password: 'purple elephant marmalade',
};

describe('the Access page of the dashboard, with authentication enabled', () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];

  const signIn = async (on: Page, who: { email: string; password: string }) => {
    await on.goto(`${service.url}/app/`);
    await on.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    await on.getByLabel('E-mail').fill(who.email);
    await on.getByLabel('Password').fill(who.password);
    await on.getByRole('button', { name: 'Sign in' }).click();
    await on.getByRole('heading', { level: 1, name: 'Pipelines' }).waitFor();
  };
  const openAccess = async (on: Page) => {
    await on.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access' }).click();
    await on.getByRole('heading', { level: 1, name: 'Access' }).waitFor();
  };

  beforeAll(async () => {
    if (!existsSync(join(DASHBOARD_DIR, 'index.html'))) {
      throw new Error('the dashboard is not built: run `npm run build:ui` (npm test does it first)');
    }
    const store = await createDatabase(cluster?.adminUrl as string, 'dashboard_access');
    service = await startTestService(enableAuth(testConfig(store)));
    const bootstrap = await new ApiCaller(service.url).call('POST', '/v1/admin/bootstrap', ADMIN);
    expect(bootstrap.status).toBe(201);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('has no Access link while signed out, and one once signed in', async () => {
    await page.goto(`${service.url}/app/`);
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect(await page.getByRole('link', { name: 'Access' }).count()).toBe(0);
    await signIn(page, ADMIN);
    // The session probe answered 401 before signing in, as it should; count errors from here on.
    consoleErrors.length = 0;
    await openAccess(page);
    await page.getByTestId(`user-row-${ADMIN.email}`).waitFor();
    expect(await page.getByTestId(`binding-${ADMIN.email}-admin`).textContent()).toContain(
      'whole organization',
    );
  });

  it('creates a user and gives it the viewer role in the project', async () => {
    const users = page.getByRole('region', { name: 'Users and roles' });
    // A weak password is refused, in plain words.
    await users.getByLabel('E-mail').fill(VIEWER.email);
    await users.getByLabel('Display name').fill(VIEWER.display_name);
    await users.getByLabel('Password').fill('short');
    await users.getByRole('button', { name: 'Create user' }).click();
    await expect
      .poll(async () => (await page.getByTestId('user-create-error').textContent()) ?? '')
      .toMatch(/password/i);
    await users.getByLabel('Password').fill(VIEWER.password);
    await users.getByRole('button', { name: 'Create user' }).click();
    await page.getByTestId(`user-row-${VIEWER.email}`).waitFor();
    expect(await page.getByTestId(`user-row-${VIEWER.email}`).textContent()).toContain('none');

    // The new user is chosen in the role form already.
    await users.getByLabel('Role', { exact: true }).selectOption('viewer');
    await users.getByLabel('Where').selectOption('project');
    await users.getByRole('button', { name: 'Give the role' }).click();
    await page.getByTestId(`binding-${VIEWER.email}-viewer`).waitFor();
    expect(await page.getByTestId(`binding-${VIEWER.email}-viewer`).textContent()).toContain('this project');

    // The API agrees.
    const api = new ApiCaller(service.url);
    expect((await api.login(ADMIN.email, ADMIN.password)).status).toBe(200);
    const bindings = await api.call('GET', '/v1/role-bindings');
    expect(bindings.body).toContainEqual(
      expect.objectContaining({ user_email: VIEWER.email, role: 'viewer', scope_type: 'project' }),
    );
  });

  it('unbinds a role only after asking', async () => {
    const api = new ApiCaller(service.url);
    await api.login(ADMIN.email, ADMIN.password);
    const user = (await api.call('GET', '/v1/users')).body.find(
      (u: { email: string }) => u.email === VIEWER.email,
    );
    const editor = await api.call('POST', '/v1/role-bindings', {
      user_id: user.id,
      role: 'editor',
      scope_type: 'organization',
    });
    expect(editor.status).toBe(201);
    await page.reload();
    const row = page.getByTestId(`binding-${VIEWER.email}-editor`);
    await row.waitFor();
    await row.getByRole('button', { name: 'Unbind' }).click();
    const dialog = row.getByRole('alertdialog');
    expect(await dialog.textContent()).toContain(`Take editor away from ${VIEWER.email}?`);
    // Cancelling keeps the binding.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await api.call('GET', `/v1/role-bindings/${editor.body.id}`)).status).toBe(200);
    await row.getByRole('button', { name: 'Unbind' }).click();
    await row.getByRole('button', { name: 'Unbind the role' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await api.call('GET', `/v1/role-bindings/${editor.body.id}`)).status).toBe(404);
    await page.getByTestId(`binding-${VIEWER.email}-viewer`).waitFor();
  });

  it('makes a token whose secret is shown once and works, then revokes it', async () => {
    const tokens = page.getByRole('region', { name: 'API tokens' });
    await tokens.getByLabel('Name').fill('nightly export');
    await tokens.getByLabel('Role').selectOption('operator');
    await tokens.getByRole('button', { name: 'Create token' }).click();
    const shown = page.getByTestId('new-token');
    await shown.waitFor();
    expect(await shown.textContent()).toContain('it will not be shown again');
    const secret = ((await page.getByTestId('new-token-secret').textContent()) ?? '').trim();
    expect(secret.length).toBeGreaterThan(20);
    await shown.getByRole('button', { name: 'Copy' }).click();
    await page.getByTestId('token-copied').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);

    const row = page.getByTestId('token-row-nightly export');
    await row.waitFor();
    expect(await row.textContent()).toContain('operator');
    expect(await row.textContent()).toContain('active');
    expect(await row.textContent()).not.toContain(secret);

    const withToken = ApiCaller.withToken(service.url, secret);
    expect((await withToken.call('GET', '/v1/pipelines')).status).toBe(200);

    // Once dismissed, the secret is nowhere on the page, nor after a reload.
    await shown.getByRole('button', { name: 'I have copied it' }).click();
    await shown.waitFor({ state: 'detached' });
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(secret);
    // Its last use shows.
    expect(await row.textContent()).not.toContain('never');

    await screen(page, 'access-desktop');
    await page.setViewportSize({ width: 390, height: 844 });
    await screen(page, 'access-phone');
    await page.setViewportSize({ width: 1440, height: 900 });

    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Revoke the token' }).click();
    await expect
      .poll(async () => (await page.getByTestId('token-status-nightly export').textContent()) ?? '')
      .toMatch(/revoked/);
    expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    expect((await withToken.call('GET', '/v1/pipelines')).status).toBe(401);
  });

  it('shows a viewer no buttons to manage users or roles', async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      const viewerPage = await context.newPage();
      await signIn(viewerPage, VIEWER);
      expect(await viewerPage.getByTestId('current-user').textContent()).toContain('viewer');
      await openAccess(viewerPage);
      await viewerPage.getByTestId('users-not-allowed').waitFor();
      await viewerPage
        .getByRole('region', { name: 'API tokens' })
        .getByText('No tokens in this project yet.')
        .waitFor();
      for (const name of ['Create user', 'Give the role', 'Unbind', 'Disable', 'Delete', 'Revoke']) {
        expect(await viewerPage.getByRole('button', { name }).count(), name).toBe(0);
      }
      expect(await viewerPage.getByTestId('users-table').count()).toBe(0);
      // The admin's token is not listed to the viewer.
      expect(await viewerPage.getByText('nightly export').count()).toBe(0);
      // Its own tokens can hold no more than viewer.
      const caps = await viewerPage.getByLabel('Role').locator('option').allTextContents();
      expect(caps).toEqual(['Same as yours (viewer)', 'viewer']);
    } finally {
      await context.close();
    }
  });

  it('disables and deletes a user, deleting only after asking', async () => {
    const row = page.getByTestId(`user-row-${VIEWER.email}`);
    await row.getByRole('button', { name: 'Disable' }).click();
    await page.getByTestId(`user-disabled-${VIEWER.email}`).waitFor();
    expect((await new ApiCaller(service.url).login(VIEWER.email, VIEWER.password)).status).toBe(401);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete the user' }).click();
    await row.waitFor({ state: 'detached' });
    expect(await page.getByTestId('users-notice').textContent()).toContain(`Deleted user ${VIEWER.email}`);
  });

  it('says plainly why the API refused a change', async () => {
    // The last organization admin cannot be disabled.
    const row = page.getByTestId(`user-row-${ADMIN.email}`);
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect
      .poll(async () => (await page.getByTestId('users-error').textContent()) ?? '')
      .toMatch(/admin/);
    // The refusals this file provoked (the weak password, the last admin) are the only failed calls.
    expect(consoleErrors.filter((text) => !/status of (409|422)/.test(text))).toEqual([]);
  });
});

describe('the Access page with authentication off', () => {
  let service: TestService;
  let browser: Browser;

  beforeAll(async () => {
    const store = await createDatabase(cluster?.adminUrl as string, 'dashboard_access_off');
    service = await startTestService(testConfig(store));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('is not in the menu, and says there is nothing to manage', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${service.url}/app/`);
    await page.getByRole('heading', { level: 1, name: 'Pipelines' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Connections' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Access' }).count()).toBe(0);
    await page.goto(`${service.url}/app/access`);
    expect(await page.getByTestId('access-off').textContent()).toContain('Authentication is off');
    expect(await page.getByRole('button', { name: 'Create token' }).count()).toBe(0);
  });
});
