// The sandbox one `npm run qualify` runs in (a child process of bench/qualify.ts, so the app's own
// settings and database stay out of it): an embedded Postgres of its own in a temp dir, the SSH
// Proxmox double (node `strong`), a page server for http_get, and a worker booted as `npm run worker`
// boots one — with the model the parent passed (OPENAI_BASE_URL, OPENAI_API_KEY, NOMOS_MODEL).
// Runs the suite and writes its result as JSON to QUALIFY_OUT.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { boot, type Runtime } from '../../src/lib/server/boot';
import { sql } from '../../src/lib/server/db/index';
import type { EmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { credentialsByUsername } from '../../src/lib/server/db/queries/operators';
import { resetEnvCache } from '../../src/lib/server/env';
import { taskList } from '../../tasks/index';
import { startProxmoxDouble, type ProxmoxDouble } from '../../tests/doubles/proxmox/server';
import { benchPostgres, ROOT } from '../harness';
import { STANDARD_NODE } from './node';
import { SCENARIOS } from './scenarios/index';
import { runSuite } from './suite';
import { startPageServer, type PageServer } from './web';

const OPERATOR = { username: 'qualify', password: 'qualify-password-1234' };
const out = process.env.QUALIFY_OUT;
const runs = Number(process.env.QUALIFY_RUNS ?? '1');
const only = (process.env.QUALIFY_ONLY ?? '').split(',').filter(Boolean);
const log = (s: string) => process.stdout.write(`[qualify] ${s}\n`);

let tmp: string | undefined;
let pg: EmbeddedPostgres | undefined;
let runtime: Runtime | undefined;
let node: ProxmoxDouble | undefined;
let web: PageServer | undefined;

async function cleanup() {
	await runtime?.shutdown().catch((e: Error) => log(`stopping the worker: ${e.message}`));
	await node?.close().catch(() => undefined);
	await web?.close().catch(() => undefined);
	await pg?.stop().catch(() => undefined);
	if (tmp) await fs.rm(tmp, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

async function main(): Promise<void> {
	if (!out) throw new Error('QUALIFY_OUT is not set (run `npm run qualify`, not this file)');
	if (!Number.isInteger(runs) || runs < 1) throw new Error(`QUALIFY_RUNS must be an integer ≥ 1, got ${process.env.QUALIFY_RUNS}`);
	const scenarios = only.length ? SCENARIOS.filter((s) => only.includes(s.id)) : SCENARIOS;
	const unknown = only.filter((id) => !SCENARIOS.some((s) => s.id === id));
	if (unknown.length) throw new Error(`no such scenario: ${unknown.join(', ')} (have ${SCENARIOS.map((s) => s.id).join(', ')})`);
	process.chdir(ROOT);
	if (!process.env.QUALIFY_VERBOSE) console.info = () => undefined;
	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-qualify-'));
	pg = await benchPostgres(tmp);
	node = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: STANDARD_NODE });
	web = await startPageServer();
	Object.assign(process.env, {
		DATABASE_URL: pg.url,
		NOMOS_WORKER: 'on',
		NOMOS_INVENTORY_SYNC: 'off',
		NOMOS_HOSTS: JSON.stringify([
			{ name: 'strong', address: '127.0.0.1', port: node.port, user: 'root', keyPath: node.clientKeyPath, hostKeyFingerprint: node.hostKeyFingerprint }
		]),
		NOMOS_OPERATOR_USERNAME: OPERATOR.username,
		NOMOS_OPERATOR_PASSWORD: OPERATOR.password,
		NOMOS_KNOWLEDGE_DIR: '',
		NOMOS_HTTP_ALLOW: '127.0.0.1',
		// A read that hangs is given up on within a minute, not five (scenario hung-read).
		NOMOS_HOST_WAIT_MIN: '1'
	});
	resetEnvCache();
	runtime = await boot('worker', { taskList });
	const operator = await credentialsByUsername(sql(), OPERATOR.username);
	if (!operator) throw new Error('the sandbox operator was not created');
	const t0 = Date.now();
	const result = await runSuite(
		{ node, web, operator: { id: operator.id, username: OPERATOR.username }, log, trace: process.env.QUALIFY_TRACE === '1' },
		{ scenarios, runs }
	);
	log(`done in ${Math.round((Date.now() - t0) / 1000)} s`);
	await fs.writeFile(out, JSON.stringify(result));
}

let code = 1;
try {
	await main();
	code = 0;
} catch (e) {
	log(`failed: ${(e as Error).stack ?? String(e)}`);
} finally {
	await cleanup();
}
process.exit(code);
