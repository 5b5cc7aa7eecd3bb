// Builds the app before `npm start` (and before the benches that run build/) when build/ is missing
// or older than any source file. One build at a time per checkout: two of these at once on a stale
// tree (`npm run bench:smoke` runs two benches side by side; a person may start two by hand) would
// both run `vite build` into the same .svelte-kit/output and build/, and one of them fails on a
// file the other just removed (ERR_MODULE_NOT_FOUND … manifest-full.js). So each takes a lock file
// first, waits while another live process holds it, and only then looks at the build: the waiter
// finds the build the other one just made fresh and returns without building.
import { execSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const inputs = ['src', 'tasks', 'static', 'drizzle', 'svelte.config.js', 'vite.config.ts', 'package.json', 'package-lock.json'];
const STAMP = path.join(ROOT, 'build/index.js');
/** Ignored by git with node_modules; holds the pid of the process that builds. */
const LOCK = path.join(ROOT, 'node_modules/.cache/nomos-ensure-build.lock');
/** Longer than any build here (20–100 s on a loaded 2-core machine). */
const WAIT_MS = 10 * 60_000;

function newest(p) {
	if (!existsSync(p)) return 0;
	const st = statSync(p);
	if (!st.isDirectory()) return st.mtimeMs;
	let max = st.mtimeMs;
	for (const e of readdirSync(p)) max = Math.max(max, newest(path.join(p, e)));
	return max;
}

/** @returns {number} build/index.js's mtime if it is older than a source, else 0; -1 when fresh. */
function staleSince() {
	const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
	const source = Math.max(...inputs.map((p) => newest(path.join(ROOT, p))));
	return built < source ? built : -1;
}

/** Whether the pid runs (a zombie no one reaped, as pid 1 leaves them here, does not count). */
function running(pid) {
	try {
		process.kill(pid, 0);
	} catch (e) {
		return /** @type {NodeJS.ErrnoException} */ (e).code === 'EPERM';
	}
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
	} catch {
		return true; // no /proc: kill(0) answered
	}
}

const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Takes the lock (waiting for a live holder; taking over a dead one's); returns its release. */
function lock() {
	mkdirSync(path.dirname(LOCK), { recursive: true });
	const until = Date.now() + WAIT_MS;
	let said = false;
	for (;;) {
		try {
			const fd = openSync(LOCK, 'wx');
			writeSync(fd, String(process.pid));
			closeSync(fd);
			return () => rmSync(LOCK, { force: true });
		} catch (e) {
			if (/** @type {NodeJS.ErrnoException} */ (e).code !== 'EEXIST') throw e;
		}
		let holder = NaN;
		try {
			holder = Number(readFileSync(LOCK, 'utf8'));
		} catch {
			continue; // released between our open and our read
		}
		// An empty file is a holder between its open and its write: wait for it like a live one.
		if (Number.isInteger(holder) && holder > 0 && !running(holder)) {
			rmSync(LOCK, { force: true });
			continue;
		}
		if (Date.now() > until) throw new Error(`[nomos] ${LOCK} has been held for ${WAIT_MS / 60_000} min (pid ${holder}); remove it if no build runs`);
		if (!said) console.log(`[nomos] another build runs (pid ${holder}); waiting for it…`);
		said = true;
		pause(200);
	}
}

const release = lock();
try {
	const built = staleSince();
	if (built >= 0) {
		console.log(built ? '[nomos] sources changed since the last build; building…' : '[nomos] no build yet; building…');
		execSync('npx vite build', { stdio: 'inherit', cwd: ROOT });
	}
} finally {
	release();
}
