import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, findBrowser } from './scripts/browser.js';
import { scaled } from './tests/helpers/time.js';

const port = Number(process.env.E2E_PORT ?? 41731);
// A system Chromium where there is one (Debian's on CI and here), else Playwright's own browser
// (`npm test` runs scripts/ensure-browser.js first, which installs one when none is found).
const browser = findBrowser();

export default defineConfig({
	testDir: 'tests/e2e',
	testMatch: '**/*.spec.ts',
	globalSetup: './tests/e2e/harness/global-setup.ts',
	workers: 1,
	fullyParallel: false,
	timeout: scaled(60_000),
	expect: { timeout: scaled(10_000) },
	reporter: process.env.CI ? [['list']] : [['list']],
	outputDir: 'test-results',
	use: {
		baseURL: `http://127.0.0.1:${port}`,
		trace: 'retain-on-failure',
		screenshot: 'only-on-failure',
		launchOptions: browser.kind === 'system' ? { executablePath: browser.path, args: CHROMIUM_ARGS } : {}
	}
});
