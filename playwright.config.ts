import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

const port = Number(process.env.E2E_PORT ?? 41731);
// Debian's chromium where it exists (CI and this machine); Playwright's own browser elsewhere.
const systemChromium = '/usr/bin/chromium';

export default defineConfig({
	testDir: 'tests/e2e',
	testMatch: '**/*.spec.ts',
	globalSetup: './tests/e2e/harness/global-setup.ts',
	workers: 1,
	fullyParallel: false,
	timeout: 60_000,
	expect: { timeout: 10_000 },
	reporter: process.env.CI ? [['list']] : [['list']],
	outputDir: 'test-results',
	use: {
		baseURL: `http://127.0.0.1:${port}`,
		trace: 'retain-on-failure',
		screenshot: 'only-on-failure',
		launchOptions: existsSync(systemChromium)
			? {
					executablePath: systemChromium,
					args: [
						'--headless',
						'--no-sandbox',
						'--disable-gpu',
						'--disable-quic',
						'--no-first-run',
						'--disable-background-networking',
						'--disable-component-update',
						'--disable-sync'
					]
				}
			: {}
	}
});
