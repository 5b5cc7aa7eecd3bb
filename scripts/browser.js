// Finds a Chromium for the browser tests, or says how to get one. Plain ESM so that both the
// Playwright config and `scripts/ensure-browser.js` can use it; the checks take their inputs as
// arguments so they can be tested with a fake file system and PATH.
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';

/** Debian's and other distributions' Chromium (and Chrome) names, looked up on PATH too. */
export const SYSTEM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];
export const SYSTEM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** @param {string} p */
const executable = (p) => {
	try {
		accessSync(p, constants.X_OK);
		return true;
	} catch {
		return false;
	}
};

/**
 * @typedef {{ kind: 'system' | 'playwright', path: string } | { kind: 'none', reason: string }} Found
 * @typedef {{ env?: Record<string, string | undefined>, isExecutable?: (p: string) => boolean, exists?: (p: string) => boolean, playwrightPath?: string | null }} FindIo
 * @typedef {{ isRoot?: boolean, hasApt?: boolean, debian?: boolean, noDownload?: boolean }} PlanIo
 */

/**
 * The browser to use: NOMOS_CHROMIUM if it names an executable, else a system Chromium (known
 * paths, then PATH), else Playwright's own download if present. `{ kind: 'none' }` when there is
 * none. `io` is for tests.
 * @param {FindIo} [io]
 * @returns {Found}
 */
export function findBrowser(io = {}) {
	const env = io.env ?? process.env;
	const isExec = io.isExecutable ?? executable;
	const playwrightPath = io.playwrightPath ?? null;
	if (env.NOMOS_CHROMIUM) {
		if (isExec(env.NOMOS_CHROMIUM)) return { kind: 'system', path: env.NOMOS_CHROMIUM };
		return { kind: 'none', reason: `NOMOS_CHROMIUM=${env.NOMOS_CHROMIUM} is not an executable` };
	}
	for (const p of SYSTEM_PATHS) if (isExec(p)) return { kind: 'system', path: p };
	for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
		for (const name of SYSTEM_NAMES) {
			const p = path.join(dir, name);
			if (isExec(p)) return { kind: 'system', path: p };
		}
	}
	if (playwrightPath && (io.exists ?? existsSync)(playwrightPath)) return { kind: 'playwright', path: playwrightPath };
	return { kind: 'none', reason: 'no Chromium found' };
}

/**
 * What to do when no browser was found: install Debian's `chromium` as root on Debian/Ubuntu,
 * else let Playwright download its own, else stop with one line saying what to install.
 */
/**
 * @param {PlanIo} [io]
 * @returns {{ kind: 'apt' | 'playwright', command: string } | { kind: 'fail', message: string }}
 */
export function installPlan(io = {}) {
	const isRoot = io.isRoot ?? process.getuid?.() === 0;
	const hasApt = io.hasApt ?? existsSync('/usr/bin/apt-get');
	const debian = io.debian ?? existsSync('/etc/debian_version');
	if (isRoot && hasApt && debian) return { kind: 'apt', command: 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium' };
	if (!io.noDownload) return { kind: 'playwright', command: 'npx playwright install chromium' };
	return { kind: 'fail', message: NO_BROWSER };
}

export const NO_BROWSER =
	'No browser for the UI tests: install Chromium (Debian/Ubuntu: sudo apt-get install chromium) or run `npx playwright install chromium`, then run npm test again.';

/** Chromium flags for headless runs in containers and CI (no sandbox as root, no network chatter). */
export const CHROMIUM_ARGS = [
	'--headless',
	'--no-sandbox',
	'--disable-gpu',
	'--disable-quic',
	'--no-first-run',
	'--disable-background-networking',
	'--disable-component-update',
	'--disable-sync'
];
