// Before the browser tests: make sure a Chromium is there (installing one when it can), or stop
// with one line that says what to install, instead of a stack of failures per test.
import { execSync } from 'node:child_process';
import { chromium } from '@playwright/test';
import { findBrowser, installPlan, NO_BROWSER } from './browser.js';

const playwrightPath = () => {
	try {
		return chromium.executablePath();
	} catch {
		return null;
	}
};

let found = findBrowser({ playwrightPath: playwrightPath() });
if (found.kind === 'none') {
	const plan = installPlan();
	if (plan.kind === 'fail') {
		console.error(`[nomos] ${plan.message}`);
		process.exit(1);
	}
	console.log(`[nomos] ${found.reason}; installing one: ${plan.command}`);
	try {
		execSync(plan.command, { stdio: 'inherit', shell: '/bin/sh' });
	} catch {
		/* checked below */
	}
	found = findBrowser({ playwrightPath: playwrightPath() });
	if (found.kind === 'none') {
		console.error(`[nomos] ${NO_BROWSER}`);
		process.exit(1);
	}
}
console.log(`[nomos] browser for the UI tests: ${found.path}`);
