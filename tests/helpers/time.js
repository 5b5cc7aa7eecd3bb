// One scale for every time limit the tests set (test and hook timeouts, Playwright's, the
// deadlines of waits for a condition): NOMOS_TEST_TIME_SCALE=3 gives a slow or loaded machine
// three times as long. It scales limits only, never how long the product is promised to take.
// Plain ESM so that vite.config.ts and playwright.config.ts load it as they are (with its
// extension), like scripts/browser.js.

/** The factor from NOMOS_TEST_TIME_SCALE (a positive number; 1 when unset). */
export function timeScale() {
	const raw = process.env.NOMOS_TEST_TIME_SCALE;
	if (raw === undefined || raw.trim() === '') return 1;
	const n = Number(raw);
	if (!Number.isFinite(n) || n <= 0) throw new Error(`NOMOS_TEST_TIME_SCALE must be a positive number, got ${JSON.stringify(raw)}`);
	return n;
}

/**
 * A time limit in ms, multiplied by the scale.
 * @param {number} ms
 */
export function scaled(ms) {
	return Math.round(ms * timeScale());
}
