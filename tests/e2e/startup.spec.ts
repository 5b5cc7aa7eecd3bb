import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, expect } from '@playwright/test';
import { freePort } from '../helpers/ports';
import { startEmbeddedPostgres } from '../../src/lib/server/db/embedded.js';

// `npm start` (server.js) starts the embedded Postgres while the app's code is still loading,
// before the settings have been read in full. A setting the app then refuses must not leave
// that server running behind the process that exits.

/** Running, not a zombie: an exited child of a parent that died waits for pid 1, which here may never reap it. */
function alive(pid: number): boolean {
	try {
		process.kill(pid, 0);
	} catch {
		return false;
	}
	try {
		return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
	} catch (e) {
		return (e as NodeJS.ErrnoException).code !== 'ENOENT';
	}
}

test('a refused setting stops the Postgres that server.js started early', async () => {
	const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-startup-'));
	await fs.chmod(dataDir, 0o755);
	const pgPort = await freePort();
	try {
		// Existing data, as on every start but the first (initdb would outlast the app's loading).
		await (await startEmbeddedPostgres({ dataDir, port: pgPort })).stop();
		const child = spawn(process.execPath, ['server.js'], {
			env: {
				...process.env,
				NODE_ENV: 'production',
				PORT: String(await freePort()),
				NOMOS_DATA_DIR: dataDir,
				NOMOS_PG_PORT: String(pgPort),
				DATABASE_URL: '',
				NOMOS_HOSTS: 'not json'
			},
			stdio: ['ignore', 'pipe', 'pipe']
		});
		let out = '';
		child.stdout.on('data', (d) => (out += d));
		child.stderr.on('data', (d) => (out += d));
		let postgresPid = 0;
		const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
		const watch = setInterval(() => {
			// initdb's bootstrap backend writes a negative pid; the server a positive one.
			const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
			if (pid > 0) postgresPid = pid;
		}, 5);
		const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
		clearInterval(watch);

		expect(code, out).toBe(1);
		expect(out).toContain('Invalid configuration: NOMOS_HOSTS');
		// The server was started before the setting was read …
		expect(postgresPid, 'postgres wrote its pid file while the app loaded').toBeGreaterThan(0);
		// … and is gone with the process that started it.
		expect(existsSync(pidFile), out).toBe(false);
		expect(alive(postgresPid)).toBe(false);
	} finally {
		await fs.rm(dataDir, { recursive: true, force: true });
	}
});
