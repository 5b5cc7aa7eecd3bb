// Sealed approvals (#43 item 4): the runner runs only what an approval the server made vouches
// for. Someone with only the database (the app's role: add an approvals row, set a status, queue a
// job) makes a row whose seal does not verify; the real worker then runs nothing on the SSH double,
// the execution ends failed and the audit says `execution.tampered`. Key rotation keeps verifying.
import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEAL_KEY_FILE, seal, verifySeal, type SealFields } from '../../src/lib/server/db/seal';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, listRecentExecutions } from '../../src/lib/server/db/queries/executions';
import { resetEnvCache } from '../../src/lib/server/env';
import { decideExecution } from '../../src/lib/server/executions/lifecycle';
import { executionHash } from '../../src/lib/server/executions/prepare';
import { requestExecution } from '../../src/lib/server/executions/request';
import { TAMPERED } from '../../src/lib/server/executions/runner';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { executions__run } from '../../tasks/executions__run';
import { plans__advance } from '../../tasks/plans__advance';
import { decidePlan, getPlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { prepareExecution, type PreparedExecution } from '../../src/lib/server/executions/prepare';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { asAppRole, useTestDatabase } from '../helpers/db';
import { addHost, newOperator, newSession, useHub, waitUntil } from '../helpers/executions';

// As the app's role: every forgery below uses only the rights Nomos's own connection has.
const dbUrl = useTestDatabase({ as: 'app' });
useHub();

const KEY_A = 'a'.repeat(40);
const KEY_B = 'b'.repeat(40);
const dataDir = path.resolve('tests/.tmp', `seal-${process.pid}`);
const saved = { key: process.env.NOMOS_SEAL_KEY, previous: process.env.NOMOS_SEAL_KEY_PREVIOUS, dir: process.env.NOMOS_DATA_DIR };

let pve: ProxmoxDouble;
let worker: WorkerHandle | undefined;
let operatorId: string;
let sessionId: string;

function setKeys(keys: { key?: string; previous?: string }) {
	if (keys.key) process.env.NOMOS_SEAL_KEY = keys.key;
	else delete process.env.NOMOS_SEAL_KEY;
	if (keys.previous) process.env.NOMOS_SEAL_KEY_PREVIOUS = keys.previous;
	else delete process.env.NOMOS_SEAL_KEY_PREVIOUS;
	resetEnvCache();
}

beforeAll(async () => {
	process.env.NOMOS_DATA_DIR = dataDir;
	setKeys({ key: KEY_A });
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114].map((vmid) => ({ vmid, hostname: `ct${vmid}`, status: 'stopped' as const }))
	});
	await addHost(pve);
	expect((await syncAllHosts())[0]).toMatchObject({ ok: true });
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'seal');
	worker = await startWorker({ url: asAppRole(dbUrl()), concurrency: 2, taskList: { executions__run, plans__advance } });
});

afterAll(async () => {
	await worker?.stop();
	await pve?.close();
	for (const [k, v] of [
		['NOMOS_SEAL_KEY', saved.key],
		['NOMOS_SEAL_KEY_PREVIOUS', saved.previous],
		['NOMOS_DATA_DIR', saved.dir]
	] as const) {
		if (v === undefined) delete process.env[k];
		else process.env[k] = v;
	}
	resetEnvCache();
	await fs.rm(dataDir, { recursive: true, force: true });
});

/** A pending `pct_start` of CT `vmid`, as the agent asks for it. */
async function pending(vmid: number): Promise<string> {
	const r = await requestExecution(sessionId, { target: `strong/${vmid}`, action: 'pct_start', params: {}, reason: 'start it' });
	if ('error' in r) throw new Error(r.error);
	expect(r.execution.status).toBe('awaiting_approval');
	return r.execution.id;
}

const commandsFor = async (vmid: number) => (await pve.argvLog()).filter((a) => a.includes(String(vmid)) && a[0] === 'pct' && a[1] === 'start');

/** Waits for the worker to end the execution; returns it. */
async function ended(id: string) {
	await waitUntil(async () => ['succeeded', 'failed', 'cancelled', 'interrupted'].includes((await getExecution(sql(), id))!.status), `execution ${id} to end`, {
		timeoutMs: 30_000
	});
	return (await getExecution(sql(), id))!;
}

const tamperedEntries = async (id: string) =>
	sql()<{ action: string; detail: Record<string, unknown> }[]>`select action, detail from audit_log where action = 'execution.tampered' and subject_id = ${id}`;

/** What someone with only the database does: an approvals row, the status, and the run job. */
async function forge(id: string, mac: string | null) {
	const e = (await getExecution(sql(), id))!;
	await sql().begin(async (tx) => {
		await tx`insert into approvals (execution_id, hash, decision, route, decided_by, mac) values (${id}, ${e.hash}, 'approved', 'button', ${operatorId}, ${mac})`;
		await tx`update executions set status = 'approved', approved_at = now() where id = ${id}`;
		await tx`select graphile_worker.add_job('executions__run', ${JSON.stringify({ executionId: id })}::text::json, job_key => ${`execution:${id}`})`;
	});
}

/** The refusal every tampered run ends with: failed, nothing ran on the host, one audit entry. */
async function expectRefused(id: string, vmid: number, error: string | RegExp) {
	const e = await ended(id);
	expect(e.status).toBe('failed');
	if (typeof error === 'string') expect(e.error).toBe(error);
	else expect(e.error).toMatch(error);
	expect(e.steps).toEqual([]);
	expect(await commandsFor(vmid)).toEqual([]);
	expect((await pve.containers()).find((c) => c.vmid === vmid)?.status).toBe('stopped');
	expect(await tamperedEntries(id)).toEqual([expect.objectContaining({ action: 'execution.tampered' })]);
	// What Ops lists (routes/(app)/ops/+page.server.ts): the refused run, failed, with why.
	expect((await listRecentExecutions(sql(), 200)).find((x) => x.id === id)).toMatchObject({ status: 'failed', error: e.error });
}

describe('sealed approvals', () => {
	it('a normal click approval still runs, and is sealed', async () => {
		const id = await pending(101);
		await sql().begin((tx) => decideExecution(tx, id, { decision: 'approved', route: 'button', operatorId, credential: 'session' }));
		const e = await ended(id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(await commandsFor(101)).toHaveLength(1);
		const [a] = await sql()<{ mac: string | null }[]>`select mac from approvals where execution_id = ${id}`;
		expect(a.mac).toMatch(/^[0-9a-f]{64}$/);
		expect(await tamperedEntries(id)).toEqual([]);
	});

	it('an approval inserted with the app role and no seal runs nothing', async () => {
		const id = await pending(102);
		await forge(id, null);
		await expectRefused(id, 102, TAMPERED);
		expect((await tamperedEntries(id))[0].detail).toMatchObject({ found: 'unsealed', action: 'pct_start' });
	});

	it('an approval with a made-up seal, or one made with another key, runs nothing', async () => {
		const made = await pending(103);
		await forge(made, 'f'.repeat(64));
		await expectRefused(made, 103, TAMPERED);
		// A seal over the right fields but with a key that is not Nomos's.
		const other = await pending(104);
		const e = (await getExecution(sql(), other))!;
		setKeys({ key: KEY_B });
		const wrong = await seal({
			executionId: other,
			hash: e.hash,
			decision: 'approved',
			route: 'button',
			decidedBy: operatorId,
			credential: null,
			decidedAt: Date.now()
		});
		setKeys({ key: KEY_A });
		await forge(other, wrong);
		await expectRefused(other, 104, TAMPERED);
	});

	it('the seal covers which credential approved: the credential changed in the database runs nothing', async () => {
		const f: SealFields = {
			executionId: '00000000-0000-0000-0000-000000000003',
			hash: 'h',
			decision: 'approved',
			route: 'rest',
			decidedBy: null,
			credential: 'token:a',
			decidedAt: 9
		};
		const m = await seal(f);
		expect(await verifySeal(f, m)).toBe(true);
		expect(await verifySeal({ ...f, credential: 'token:b' }, m)).toBe(false);
		expect(await verifySeal({ ...f, credential: 'session' }, m)).toBe(false);
		// Dropping the credential does not turn a v2 seal into a v1 one.
		expect(await verifySeal({ ...f, credential: null }, m)).toBe(false);

		// End to end (approvals cannot be updated by the app role, so the forger writes the row): a
		// real seal, made for a token's approval, on a row that names the browser session instead.
		const id = await pending(112);
		const e = (await getExecution(sql(), id))!;
		const decidedAt = Date.now();
		const genuine = await seal({
			executionId: id,
			hash: e.hash,
			decision: 'approved',
			route: 'button',
			decidedBy: operatorId,
			credential: 'token:t1',
			decidedAt
		});
		await sql().begin(async (tx) => {
			await tx`insert into approvals (execution_id, hash, decision, route, decided_by, credential, decided_at, mac)
				values (${id}, ${e.hash}, 'approved', 'button', ${operatorId}, 'session', ${new Date(decidedAt).toISOString()}::timestamptz, ${genuine})`;
			await tx`update executions set status = 'approved', approved_at = now() where id = ${id}`;
			await tx`select graphile_worker.add_job('executions__run', ${JSON.stringify({ executionId: id })}::text::json, job_key => ${`execution:${id}`})`;
		});
		await expectRefused(id, 112, TAMPERED);
	});

	it('an approval sealed before the credential was recorded (v1 seal, credential null) still runs', async () => {
		// As 0030-0032 wrote it: the seal over everything but the credential, made with Nomos's key.
		const id = await pending(113);
		const e = (await getExecution(sql(), id))!;
		const decidedAt = Date.now();
		const old = await seal({ executionId: id, hash: e.hash, decision: 'approved', route: 'button', decidedBy: operatorId, credential: null, decidedAt });
		await sql().begin(async (tx) => {
			await tx`insert into approvals (execution_id, hash, decision, route, decided_by, decided_at, mac)
				values (${id}, ${e.hash}, 'approved', 'button', ${operatorId}, ${new Date(decidedAt).toISOString()}::timestamptz, ${old})`;
			await tx`update executions set status = 'approved', approved_at = now() where id = ${id}`;
			await tx`select graphile_worker.add_job('executions__run', ${JSON.stringify({ executionId: id })}::text::json, job_key => ${`execution:${id}`})`;
		});
		const done = await ended(id);
		expect(done.status, done.error ?? '').toBe('succeeded');
		expect(await commandsFor(113)).toHaveLength(1);
		// Every route writes the credential now: a new click approval records `session`.
		const fresh = await pending(114);
		await sql().begin((tx) => decideExecution(tx, fresh, { decision: 'approved', route: 'button', operatorId, credential: 'session' }));
		expect((await ended(fresh)).status).toBe('succeeded');
		const [a] = await sql()<{ credential: string | null }[]>`select credential from approvals where execution_id = ${fresh}`;
		expect(a.credential).toBe('session');
	});

	it('an approved execution whose params or hash were changed after is refused', async () => {
		// Params changed, hash left: the record no longer matches its hash.
		const a = await pending(105);
		await sql().begin(async (tx) => {
			await decideExecution(tx, a, { decision: 'approved', route: 'button', operatorId, credential: 'session' });
			await tx`update executions set params = ${JSON.stringify({ vmid: '106' })}::text::jsonb where id = ${a}`;
		});
		await expectRefused(a, 105, /does not match its hash; refusing to run/);
		expect(await commandsFor(106)).toEqual([]);
		// Target, params and hash all changed consistently: the approval names the old hash.
		const b = await pending(106);
		await sql().begin(async (tx) => {
			await decideExecution(tx, b, { decision: 'approved', route: 'button', operatorId, credential: 'session' });
			const e = (await getExecution(tx, b))!;
			const target = e.target.replace('106', '107');
			const params = JSON.parse(JSON.stringify(e.params).replace('106', '107'));
			const hash = executionHash('pct_start', target, params);
			expect(target).not.toBe(e.target);
			await tx`update executions set target = ${target}, params = ${JSON.stringify(params)}::text::jsonb, hash = ${hash} where id = ${b}`;
		});
		const e = await ended(b);
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(/no approval names this exact execution/);
		expect(await commandsFor(106)).toEqual([]);
		expect(await commandsFor(107)).toEqual([]);
		expect(await tamperedEntries(b)).toHaveLength(1);
	});

	it('after a rotation, approvals sealed with the previous key verify only while it is given as NOMOS_SEAL_KEY_PREVIOUS', async () => {
		const f: SealFields = {
			executionId: '00000000-0000-0000-0000-000000000001',
			hash: 'h',
			decision: 'approved',
			route: 'ops',
			decidedBy: null,
			credential: 'session',
			decidedAt: 1
		};
		setKeys({ key: KEY_A });
		const old = await seal(f);
		setKeys({ key: KEY_B, previous: KEY_A });
		expect(await verifySeal(f, old)).toBe(true);
		expect(await seal(f)).not.toBe(old);
		expect(await verifySeal({ ...f, decidedAt: 2 }, old)).toBe(false);
		setKeys({ key: KEY_B });
		expect(await verifySeal(f, old)).toBe(false);

		// End to end: approved under key A, run by the worker after the switch to B (A kept as previous).
		setKeys({ key: KEY_A });
		const id = await pending(107);
		await sql().begin(async (tx) => {
			await decideExecution(tx, id, { decision: 'approved', route: 'ops', operatorId, credential: 'session' });
			setKeys({ key: KEY_B, previous: KEY_A });
		});
		const e = await ended(id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(await commandsFor(107)).toHaveLength(1);

		// Approved under A, run after the switch without the previous key: refused.
		setKeys({ key: KEY_A });
		const lost = await pending(108);
		await sql().begin(async (tx) => {
			await decideExecution(tx, lost, { decision: 'approved', route: 'ops', operatorId, credential: 'session' });
			setKeys({ key: KEY_B });
		});
		await expectRefused(lost, 108, TAMPERED);
		setKeys({ key: KEY_A });
	});

	it('without NOMOS_SEAL_KEY the key is a 0600 file in the data dir, made once', async () => {
		setKeys({});
		const f: SealFields = {
			executionId: '00000000-0000-0000-0000-000000000002',
			hash: 'h',
			decision: 'approved',
			route: 'button',
			decidedBy: null,
			credential: 'session',
			decidedAt: 5
		};
		const m = await seal(f);
		const file = path.join(dataDir, SEAL_KEY_FILE);
		expect(statSync(file).mode & 0o777).toBe(0o600);
		expect((await fs.readFile(file, 'utf8')).trim().length).toBeGreaterThanOrEqual(32);
		expect(await verifySeal(f, m)).toBe(true);
		// The env variable wins when set.
		setKeys({ key: KEY_A });
		expect(await verifySeal(f, m)).toBe(false);
	});

	it('a plan approved with only the database makes no execution; a sealed plan changed after is refused too', async () => {
		const proposed = async (vmid: number) => {
			const p = await prepareExecution({ target: `strong/${vmid}`, action: 'pct_start', params: {}, reason: 'start' });
			if ('error' in p) throw new Error(p.error);
			const steps: Array<PreparedExecution & { why: string }> = [{ ...p, why: 'start' }];
			return sql().begin((tx) => insertPlan(tx, sessionId, `Start ${vmid}`, steps));
		};
		const planEnded = async (id: string) => {
			await waitUntil(async () => (await getPlan(sql(), id))!.status !== 'approved', `plan ${id} to end`, { timeoutMs: 30_000 });
			return (await getPlan(sql(), id))!;
		};
		const tamperedPlan = async (id: string) => sql()<{ action: string }[]>`select action from audit_log where action = 'plan.tampered' and subject_id = ${id}`;

		// Forged: status, decider and time set as the app role, and the advance job queued.
		const forged = await proposed(109);
		await sql().begin(async (tx) => {
			await tx`update plans set status = 'approved', decided_by = ${operatorId}, decided_at = now(), expires_at = now() + interval '1 hour' where id = ${forged.id}`;
			await tx`select graphile_worker.add_job('plans__advance', ${JSON.stringify({ planId: forged.id })}::text::json)`;
		});
		const f = await planEnded(forged.id);
		expect(f.status).toBe('failed');
		expect(f.error).toMatch(/plan approval seal does not verify: refusing to run/);
		expect(f.steps[0].executionId ?? null).toBeNull();
		expect(await sql()`select id from executions where plan_id = ${forged.id}`).toHaveLength(0);
		expect(await commandsFor(109)).toEqual([]);
		expect(await tamperedPlan(forged.id)).toHaveLength(1);

		// Sealed by a real approval, then a step swapped for another CT (hash and all): refused.
		const swapped = await proposed(110);
		const other = await prepareExecution({ target: 'strong/111', action: 'pct_start', params: {}, reason: 'start' });
		if ('error' in other) throw new Error(other.error);
		await sql().begin(async (tx) => {
			await decidePlan(tx, swapped.id, 'approved', operatorId, 1);
			const steps = swapped.steps.map((st) => ({ ...st, target: other.target, params: other.params, hash: other.hash }));
			await tx`update plans set steps = ${JSON.stringify(steps)}::text::jsonb where id = ${swapped.id}`;
			await tx`select graphile_worker.add_job('plans__advance', ${JSON.stringify({ planId: swapped.id })}::text::json)`;
		});
		const w = await planEnded(swapped.id);
		expect(w.status).toBe('failed');
		expect(w.error).toMatch(/plan approval seal does not verify/);
		expect(await commandsFor(111)).toEqual([]);
		expect(await commandsFor(110)).toEqual([]);
		expect(await tamperedPlan(swapped.id)).toHaveLength(1);
		expect(await sql()`select id from executions where plan_id = ${swapped.id}`).toHaveLength(0);
	});
});
