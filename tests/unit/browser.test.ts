import { describe, expect, it } from 'vitest';
import { findBrowser, installPlan, NO_BROWSER } from '../../scripts/browser.js';

const only =
	(...paths: string[]) =>
	(p: string) =>
		paths.includes(p);

describe('finding a browser for the UI tests', () => {
	it("uses Debian's /usr/bin/chromium when it is there", () => {
		expect(findBrowser({ env: { PATH: '' }, isExecutable: only('/usr/bin/chromium') })).toEqual({ kind: 'system', path: '/usr/bin/chromium' });
	});

	it('finds a chromium on PATH', () => {
		expect(findBrowser({ env: { PATH: '/opt/a:/opt/b' }, isExecutable: only('/opt/b/chromium-browser') })).toEqual({
			kind: 'system',
			path: '/opt/b/chromium-browser'
		});
	});

	it('honours NOMOS_CHROMIUM, and says so when it is wrong', () => {
		expect(findBrowser({ env: { NOMOS_CHROMIUM: '/x/chrome', PATH: '' }, isExecutable: only('/x/chrome', '/usr/bin/chromium') })).toEqual({
			kind: 'system',
			path: '/x/chrome'
		});
		expect(findBrowser({ env: { NOMOS_CHROMIUM: '/missing', PATH: '' }, isExecutable: only() })).toMatchObject({
			kind: 'none',
			reason: expect.stringContaining('/missing')
		});
	});

	it("falls back to Playwright's own download, then to nothing", () => {
		expect(findBrowser({ env: { PATH: '/usr/bin' }, isExecutable: only(), playwrightPath: '/pw/chrome', exists: only('/pw/chrome') })).toEqual({
			kind: 'playwright',
			path: '/pw/chrome'
		});
		expect(findBrowser({ env: { PATH: '/usr/bin' }, isExecutable: only(), playwrightPath: '/pw/chrome', exists: only() })).toMatchObject({ kind: 'none' });
	});

	it('installs Debian chromium as root on Debian, else lets Playwright download one, else says what to install', () => {
		expect(installPlan({ isRoot: true, hasApt: true, debian: true })).toMatchObject({
			kind: 'apt',
			command: expect.stringContaining('apt-get install -y -qq chromium')
		});
		expect(installPlan({ isRoot: false, hasApt: true, debian: true })).toEqual({ kind: 'playwright', command: 'npx playwright install chromium' });
		expect(installPlan({ isRoot: false, hasApt: false, debian: false, noDownload: true })).toEqual({ kind: 'fail', message: NO_BROWSER });
		expect(NO_BROWSER.split('\n')).toHaveLength(1);
	});
});
