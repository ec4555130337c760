import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { HANG_MS } from './wait-for.js';

/** Where the browser tests leave a screenshot of each page they visit. */
export const SCREENSHOT_DIR = join(process.cwd(), 'test-artifacts', 'screenshots');

function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      "chromium is not installed: install Debian's chromium package (apt-get install -y --no-install-recommends chromium); npm test's pretest installs it when run as root",
    );
  }
}

/**
 * Debian's chromium, headless, with nothing reaching out to the network by itself. Every page's
 * waits, clicks and navigations get the same deadline, set here once: one that bounds a hang, not
 * one a busy machine can reach.
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    timeout: HANG_MS,
  });
  // Emitted as each context (a newPage's too) is made, before the caller gets it.
  browser.on('context', (context) => {
    context.setDefaultTimeout(HANG_MS);
    context.setDefaultNavigationTimeout(HANG_MS);
  });
  return browser;
}

/** Saves a full-page screenshot named after the page, as a test artifact. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** Where the browser tests leave the screenshots of the main pages at a desktop and a phone size. */
export const SCREENS_DIR = join(process.cwd(), 'test-results', 'screens');

/** Saves a full-page screenshot to test-results/screens/<name>.png. */
export async function screen(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENS_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENS_DIR, `${name}.png`), fullPage: true });
}
