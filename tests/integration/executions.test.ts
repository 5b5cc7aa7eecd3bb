// Executions end to end against the SSH Proxmox double: request → approval → run, and every way
// that can go wrong (double decisions, denial, staleness, real command errors, plan drift,
// expiry, cancellation).
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEventNow } from '../../src/lib/server/db/queries/events';
import { getPlan, decidePlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { prepareExecution, type PreparedExecution } from '../../src/lib/server/executions/prepare';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { sweep } from '../../src/lib/server/executions/lifecycle';
import { advancePlan } from '../../src/lib/server/executions/plans';
import { setHub } from '../../src/lib/server/realtime/hub';
import { toCommand } from '../../src/lib/server/ssh/quote';
import { DEBIAN, alive, decide, executionStatus, jobs, jobsFor, newOperator, newSession, onDouble, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

// As the app's role, as Nomos connects: the whole path works with the rights it is granted.
const {
	pve,
	hub: theHub,
	synced
} = useStage({
	as: 'app',
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped' },
				{ vmid: 102, hostname: 'web', status: 'running' },
				{ vmid: 103, hostname: 'scratch', status: 'stopped' },
				{ vmid: 104, hostname: 'planned', status: 'stopped' },
				{ vmid: 105, hostname: 'other', status: 'stopped' }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	expect(synced()[0]).toMatchObject({ ok: true, containers: 6 });
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'deploy typetype');
});

/** requestExecution that must succeed (not a validation error). */
async function request(input: Record<string, unknown>, session: string | null = sessionId): Promise<RequestOutcome> {
	const r = await requestExecution(session, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

/** The fake-binary invocations that happen while `fn` runs. */
async function argvDuring(fn: () => Promise<unknown>): Promise<string[][]> {
	const before = (await pve.argvLog()).length;
	await fn();
	return (await pve.argvLog()).slice(before);
}

async function nextFreeVmid(): Promise<number> {
	const used = new Set((await pve.containers()).map((c) => c.vmid));
	let id = 100;
	while (used.has(id)) id++;
	return id;
}

const typetype = {
	hostname: 'typetype',
	template: DEBIAN,
	memory: 2048,
	cores: 2,
	disk: 8,
	storage: 'local-lvm',
	features: { nesting: true }
};

describe('pct_create, approved and run', () => {
	it('previews the exact command, runs it after approval, records steps and queues what follows', async () => {
		const vmid = await nextFreeVmid();
		let r!: RequestOutcome;
		const duringRequest = await argvDuring(async () => {
			r = await request({ target: 'strong', action: 'pct_create', params: typetype, reason: 'deploy TypeType' });
		});
		// The vmid was resolved on the host at request time, not left to the run.
		expect(duringRequest).toEqual([['pvesh', 'get', '/cluster/nextid']]);
		const argv = [
			'pct',
			'create',
			String(vmid),
			DEBIAN,
			'--hostname',
			'typetype',
			'--cores',
			'2',
			'--memory',
			'2048',
			'--swap',
			'512',
			'--rootfs',
			'local-lvm:8',
			'--net0',
			'name=eth0,bridge=vmbr0,ip=dhcp',
			'--unprivileged',
			'1',
			'--features',
			'nesting=1',
			'--start',
			'1'
		];
		expect(r.via).toBe('approval');
		expect(r.execution).toMatchObject({
			status: 'awaiting_approval',
			action: 'pct_create',
			classification: 'config_mutation',
			target: 'host:strong',
			hostName: 'strong',
			requestedBySession: sessionId,
			commandPreview: toCommand(argv),
			reason: 'deploy TypeType',
			decision: null
		});
		expect(r.execution.commandPreview).toBe(
			`'pct' 'create' '${vmid}' '${DEBIAN}' '--hostname' 'typetype' '--cores' '2' '--memory' '2048' '--swap' '512' ` +
				`'--rootfs' 'local-lvm:8' '--net0' 'name=eth0,bridge=vmbr0,ip=dhcp' '--unprivileged' '1' '--features' 'nesting=1' '--start' '1'`
		);
		expect(r.execution.params).toMatchObject({ vmid: String(vmid), hostname: 'typetype', memory: 2048, cores: 2 });
		expect(Date.parse(r.execution.expiresAt!)).toBeGreaterThan(Date.now() + 23 * 3600_000);
		const id = r.execution.id;
		expect(await jobsFor(id)).toEqual([]);

		const d = await decide(id, operatorId, 'approved');
		expect(d.ok).toBe(true);
		expect(await load(id)).toMatchObject({ status: 'approved', decision: { decision: 'approved', route: 'button', decidedBy: 'alice' } });
		expect(await jobsFor(id)).toEqual([{ task: 'executions__run', payload: { executionId: id }, key: `execution:${id}`, queue: null }]);

		// What the executions__run job does:
		const during = await argvDuring(() => runExecution(id));
		expect(during).toEqual([['pct', 'status', String(vmid)], argv]);

		const e = await load(id);
		expect(e.status).toBe('succeeded');
		expect(e.error).toBeNull();
		expect(e.result).toContain(String(vmid));
		expect(e.startedAt).not.toBeNull();
		expect(e.finishedAt).not.toBeNull();
		expect(e.steps).toHaveLength(1);
		const [step] = e.steps;
		expect(step).toMatchObject({ index: 0, label: `pct create ${vmid} (typetype)`, command: toCommand(argv), exitCode: 0 });
		expect(step.stdoutTail).toContain(`Logical volume "vm-${vmid}-disk-0" created.`);
		expect(step.stdoutTail).toContain("extracting archive '/var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst'");
		expect(step.stdoutTail).toContain("Creating SSH host key 'ssh_host_ed25519_key'");
		expect(step.durationMs).toBeGreaterThan(0);

		const ct = (await pve.containers()).find((c) => c.vmid === vmid);
		expect(ct).toMatchObject({ hostname: 'typetype', status: 'running', cores: 2, memory: 2048, features: 'nesting=1', unprivileged: 1 });
		expect(ct?.lock).toBeUndefined();

		// Queued in the transaction that finished it: an inventory refresh and the session's continuation.
		expect(await jobs('inventory__sync')).toContainEqual({
			task: 'inventory__sync',
			payload: { host: 'strong' },
			key: 'inventory__sync:strong',
			queue: 'inventory'
		});
		expect(await jobs('agent__continue_session')).toContainEqual({
			task: 'agent__continue_session',
			payload: { sessionId, executionId: id },
			key: `continue:${id}:${sessionId}`,
			queue: `session:${sessionId}`
		});
		// The assent window opened by the approval, and the audit trail.
		const [w] = await sql()`select opened_by from assent_windows where session_id = ${sessionId} and expires_at > now()`;
		expect(w?.opened_by).toBe(operatorId);
		const types = (await sql()<{ type: string }[]>`select type from events where payload->>'executionId' = ${id} order by id`).map((x) => x.type);
		expect(types).toEqual(expect.arrayContaining(['execution.updated', 'approval.decided', 'execution.step']));
		const trail = await sql()`select action, route, actor_id from audit_log where subject_id = ${id}`;
		expect(trail).toEqual([{ action: 'execution.approved', route: 'button', actor_id: operatorId }]);
		expect(types.at(-1)).toBe('execution.updated');

		// A second delivery of the same job finds nothing to do.
		expect(await argvDuring(() => runExecution(id))).toEqual([]);
		expect((await load(id)).status).toBe('succeeded');
	});
});

describe('double decisions', () => {
	it('two concurrent approvals: one wins, one already_decided, one run job, one pct create', async () => {
		const r = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'twice', template: DEBIAN }, reason: 'r' });
		const id = r.execution.id;
		const vmid = String(r.execution.params.vmid);
		const results = await Promise.all([decide(id, operatorId, 'approved'), decide(id, operatorId, 'approved')]);
		expect(results.filter((x) => x.ok)).toHaveLength(1);
		expect(results.filter((x) => !x.ok)).toEqual([{ ok: false, reason: 'already_decided', status: 'approved' }]);
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from approvals where execution_id = ${id}`;
		expect(n).toBe(1);
		expect((await jobsFor(id)).filter((j) => j.task === 'executions__run')).toHaveLength(1);
		const [{ e }] = await sql()<{ e: number }[]>`select count(*)::int as e from audit_log where action = 'execution.approved' and subject_id = ${id}`;
		expect(e).toBe(1);

		const during = await argvDuring(() => Promise.all([runExecution(id), runExecution(id)]));
		expect(during.filter((a) => a[0] === 'pct' && a[1] === 'create')).toHaveLength(1);
		expect(during.filter((a) => a[0] === 'pct' && a[1] === 'create')[0][2]).toBe(vmid);
		expect((await load(id)).status).toBe('succeeded');
		expect((await jobsFor(id)).filter((j) => j.task === 'agent__continue_session')).toHaveLength(1);
	});

	it('an approval racing a denial: exactly one decision sticks', async () => {
		const r = await request({ target: 'strong/101', action: 'pct_start', params: {}, reason: 'r' });
		const id = r.execution.id;
		const [a, b] = await Promise.all([decide(id, operatorId, 'approved'), decide(id, operatorId, 'denied', 'changed my mind')]);
		expect([a.ok, b.ok].filter(Boolean)).toHaveLength(1);
		const e = await load(id);
		const runJobs = (await jobsFor(id)).filter((j) => j.task === 'executions__run');
		if (a.ok) {
			expect(e.status).toBe('approved');
			expect(runJobs).toHaveLength(1);
			expect(b).toEqual({ ok: false, reason: 'already_decided', status: 'approved' });
		} else {
			expect(e.status).toBe('denied');
			expect(runJobs).toHaveLength(0);
			expect(a).toEqual({ ok: false, reason: 'already_decided', status: 'denied' });
		}
		// Leave nothing runnable behind for later tests.
		await sql()`update executions set status = 'cancelled', finished_at = now() where id = ${id} and status = 'approved'`;
	});
});

describe('denial', () => {
	it('records the reason on the execution and the approval, runs nothing and tells the session', async () => {
		const r = await request({ target: 'lxc:strong/100', action: 'pct_stop', params: {}, reason: 'stop caddy' });
		const id = r.execution.id;
		const d = await decide(id, operatorId, 'denied', 'not during business hours');
		expect(d.ok).toBe(true);
		const e = await load(id);
		expect(e.status).toBe('denied');
		expect(e.error).toBe('denied by the operator: not during business hours');
		expect(e.finishedAt).not.toBeNull();
		expect(e.decision).toMatchObject({ decision: 'denied', route: 'button', reason: 'not during business hours', decidedBy: 'alice' });
		const [row] = await sql()`select decision, reason, hash, decided_by from approvals where execution_id = ${id}`;
		expect(row).toEqual({ decision: 'denied', reason: 'not during business hours', hash: e.hash, decided_by: operatorId });
		const queued = await jobsFor(id);
		expect(queued.map((j) => j.task)).toEqual(['agent__continue_session']);
		// A run job delivered anyway (it never is) would find nothing to claim.
		expect(await argvDuring(() => runExecution(id))).toEqual([]);
		expect((await load(id)).status).toBe('denied');
		expect((await pve.containers()).find((c) => c.vmid === 100)?.status).toBe('running');
		// Deciding again changes nothing.
		expect(await decide(id, operatorId, 'approved')).toEqual({ ok: false, reason: 'already_decided', status: 'denied' });
	});
});

describe('staleness', () => {
	it('pct_start of a CT someone started after approval fails fast without running pct start', async () => {
		const r = await request({ target: 'strong/103', action: 'pct_start', params: {}, reason: 'start scratch' });
		const id = r.execution.id;
		expect((await decide(id, operatorId, 'approved')).ok).toBe(true);
		const manual = await onDouble(pve, 'pct start 103');
		expect(manual.code, manual.stderr).toBe(0);

		const syncs = (await jobs('inventory__sync')).length;
		const t0 = Date.now();
		const during = await argvDuring(() => runExecution(id));
		expect(Date.now() - t0).toBeLessThan(5_000);
		expect(during).toEqual([['pct', 'status', '103']]);
		const e = await load(id);
		expect(e.status).toBe('failed');
		expect(e.error).toBe('not run: CT 103 is running, expected stopped');
		expect(e.steps).toEqual([]);
		expect((await jobsFor(id)).map((j) => j.task).sort()).toEqual(['agent__continue_session', 'executions__run']);
		expect(await jobs('inventory__sync')).toHaveLength(syncs); // nothing changed, nothing to refresh
	});

	it('pct_create whose vmid was taken after approval fails with "already exists now"', async () => {
		const r = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'late', template: DEBIAN }, reason: 'r' });
		const id = r.execution.id;
		const vmid = String(r.execution.params.vmid);
		expect((await decide(id, operatorId, 'approved')).ok).toBe(true);
		const squat = await onDouble(pve, `pct create ${vmid} ${DEBIAN} --hostname squatter --rootfs local-lvm:4`);
		expect(squat.code, squat.stderr).toBe(0);

		const during = await argvDuring(() => runExecution(id));
		expect(during).toEqual([['pct', 'status', vmid]]);
		const e = await load(id);
		expect(e.status).toBe('failed');
		expect(e.error).toBe(`not run: CT ${vmid} already exists now (it did not when this was approved)`);
		expect((await pve.containers()).find((c) => String(c.vmid) === vmid)?.hostname).toBe('squatter');
	});

	it('a CT that vanished after approval is reported as gone', async () => {
		const r = await request({ target: 'strong/105', action: 'pct_start', params: {}, reason: 'r' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		expect((await onDouble(pve, 'pct destroy 105')).code).toBe(0);
		await runExecution(r.execution.id);
		expect(await load(r.execution.id)).toMatchObject({ status: 'failed', error: 'not run: CT 105 does not exist (anymore)' });
	});
});

describe('real command errors', () => {
	it("destroying a CT started after its approval fails with the host's own error text", async () => {
		// Running when asked would be refused before approval (before-approval.test.ts): stopped then, started behind Nomos's back after.
		await pve.patchCt(102, { status: 'stopped' });
		const r = await request({ target: 'strong/102', action: 'pct_destroy', params: {}, reason: 'remove web' });
		expect(r.execution).toMatchObject({
			status: 'awaiting_approval',
			classification: 'destructive',
			commandPreview: "'pct' 'destroy' '102' '--purge'",
			beforeApproval: null
		});
		const id = r.execution.id;
		expect((await decide(id, operatorId, 'approved')).ok).toBe(true);
		await pve.patchCt(102, { status: 'running' });
		const during = await argvDuring(() => runExecution(id));
		// Pre-check, the step, then the read-back of what a failed mutation left behind.
		expect(during).toEqual([
			['pct', 'status', '102'],
			['pct', 'destroy', '102', '--purge'],
			['pct', 'status', '102'],
			['pct', 'config', '102']
		]);
		const e = await load(id);
		expect(e.status).toBe('failed');
		expect(e.leftovers).toBe('CT 102 exists on strong, running');
		expect(e.error).toContain('unable to destroy CT 102 - container is running');
		expect(e.error).toMatch(/^pct destroy exited with 255: /);
		expect(e.steps[0]).toMatchObject({ exitCode: 255, label: 'pct destroy' });
		expect(e.steps[0].stderrTail).toContain('unable to destroy CT 102 - container is running');
		expect((await pve.containers()).find((c) => c.vmid === 102)?.status).toBe('running');
		expect((await jobsFor(id)).map((j) => j.task).sort()).toEqual(['agent__continue_session', 'executions__run']);
	});
});

describe('output Postgres cannot store verbatim', () => {
	async function runExec(argv: string[]) {
		const r = await request({ target: 'strong/100', action: 'pct_exec', params: { argv }, reason: 'r' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		return load(r.execution.id);
	}

	it('a command printing NUL bytes succeeds and its output is stored', async () => {
		const e = await runExec(['printf', 'a\\0b\\n']);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.steps[0].exitCode).toBe(0);
		expect(e.steps[0].stdoutTail).toMatch(/^a.b\n$/);
		expect(e.steps[0].stdoutTail).not.toContain('\0');
	});

	it('a failing command whose error output has NUL bytes is recorded as failed with its error', async () => {
		const e = await runExec(['sh', '-c', 'printf "bad\\0thing\\n" >&2; exit 3']);
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(/^exec sh exited with 3: bad.thing$/);
		expect(e.error).not.toContain('\0');
	});

	it('long emoji output whose 4000-character tail would start inside a surrogate pair is stored', async () => {
		const e = await runExec(['printf', '%s', '😀'.repeat(2500) + 'y']);
		expect(e.status, e.error ?? '').toBe('succeeded');
		const t = e.steps[0].stdoutTail!;
		expect(t.startsWith('…')).toBe(true);
		expect(t.endsWith('😀y')).toBe(true);
		expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(t)).toBe(false);
	});
});

describe('a process without the realtime hub', () => {
	it('refuses to run before claiming, so nothing is left running with a live heartbeat', async () => {
		const r = await request({ target: 'strong/101', action: 'pct_start', params: {}, reason: 'r' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		setHub(undefined);
		try {
			await expect(runExecution(r.execution.id)).rejects.toThrow(/realtime hub not started/);
		} finally {
			setHub(theHub());
		}
		expect(await executionStatus(r.execution.id)).toBe('approved');
		await sql()`update executions set status = 'cancelled', finished_at = now() where id = ${r.execution.id}`;
	});
});

describe('plans', () => {
	it('a request matching a step of the running plan is refused (the plan runs it); any drift needs its own approval', async () => {
		const startStep = { target: 'strong/104', action: 'pct_start', params: {}, reason: 'start planned' };
		const createParams = { vmid: '160', hostname: 'plan-ct', template: DEBIAN, memory: 1024 };
		const createStep = { target: 'strong', action: 'pct_create', params: createParams, reason: 'create plan-ct' };
		const steps: Array<PreparedExecution & { why: string }> = [];
		for (const s of [startStep, createStep]) {
			const p = await prepareExecution(s);
			if ('error' in p) throw new Error(p.error);
			steps.push({ ...p, why: s.reason });
		}
		const plan = await sql().begin(async (tx) => {
			const row = await insertPlan(tx, sessionId, 'Start planned, create plan-ct', steps);
			return decidePlan(tx, row.id, 'approved', operatorId, 24);
		});
		expect(plan?.status).toBe('approved');

		// Exactly a planned step: not requested again, nothing written.
		for (const s of [startStep, createStep]) {
			const r = await requestExecution(sessionId, s);
			expect(r).toMatchObject({ error: expect.stringContaining('this step runs as part of the approved plan "Start planned, create plan-ct"') });
		}
		expect((await getPlan(sql(), plan!.id))!.steps.map((s) => s.executionId)).toEqual([null, null]);

		// Drift: different params, different target, another session: an ordinary request.
		const drifted = [
			await request({ ...createStep, params: { ...createParams, memory: 2048 } }),
			await request({ ...startStep, target: 'strong/101' }),
			await request(createStep, await newSession(operatorId, 'another chat'))
		];
		for (const d of drifted) {
			expect(d.via).toBe('approval');
			expect(d.execution.status).toBe('awaiting_approval');
			expect(d.execution.planId).toBeNull();
			expect(await jobsFor(d.execution.id)).toEqual([]);
			await sql()`update executions set status = 'cancelled', finished_at = now() where id = ${d.execution.id}`;
		}
		await sql()`update plans set status = 'cancelled', finished_at = now() where id = ${plan!.id}`;
	});
});

describe('expiry', () => {
	it('sweep expires stale approvals; deciding them is refused', async () => {
		const a = await request({ target: 'strong/100', action: 'pct_stop', params: {}, reason: 'r' });
		const b = await request({ target: 'strong/100', action: 'restart', params: {}, reason: 'r' });
		await sql()`update executions set expires_at = now() - interval '1 second' where id in ${sql()([a.execution.id, b.execution.id])}`;

		// Past its expiry but not swept yet: refused as expired.
		expect(await decide(a.execution.id, operatorId, 'approved')).toEqual({ ok: false, reason: 'expired', status: 'awaiting_approval' });

		const swept = await sweep(sql());
		expect(swept).toMatchObject({ lost: 0, expired: 2 });
		for (const x of [a, b]) {
			const e = await load(x.execution.id);
			expect(e.status).toBe('expired');
			expect(e.error).toBe('approval expired: nobody decided in time');
			expect(e.finishedAt).not.toBeNull();
			expect((await jobsFor(x.execution.id)).map((j) => j.task)).toEqual(['agent__continue_session']);
		}
		expect(await decide(b.execution.id, operatorId, 'approved')).toEqual({ ok: false, reason: 'already_decided', status: 'expired' });
		expect(await decide(a.execution.id, operatorId, 'denied')).toEqual({ ok: false, reason: 'already_decided', status: 'expired' });
		expect(await sweep(sql())).toMatchObject({ lost: 0, expired: 0 });
		expect(await argvDuring(() => runExecution(b.execution.id))).toEqual([]);
	});
});

describe('cancellation', () => {
	it('an execution.cancel event stops a hung pct create and kills the remote process', async () => {
		await pve.setFault('create', 'hang');
		try {
			const r = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'hangs', template: DEBIAN }, reason: 'r' });
			const id = r.execution.id;
			expect((await decide(id, operatorId, 'approved')).ok).toBe(true);
			const run = runExecution(id);
			let settled = false;
			void run.finally(() => (settled = true));

			await waitUntil(async () => {
				const e = await load(id);
				return e.status === 'running' && e.steps.length > 0;
			}, 'the run to start its step');
			const [hung] = await waitUntil(async () => {
				const h = await pve.hangs();
				return h.length ? h : null;
			}, 'the fake pct create to hang');
			expect(alive(hung.pid)).toBe(true);
			// It does not end by itself: what ends it below is the cancel (its error says so).
			expect(settled).toBe(false);
			expect(await executionStatus(id)).toBe('running');

			await emitEventNow(sql(), { sessionId, type: 'execution.cancel', payload: { executionId: id, by: null } });
			await run;
			const e = await load(id);
			// Cancelled mid-step: the create may have partly run.
			expect(e.status).toBe('interrupted');
			expect(e.error).toMatch(/^cancelled by the operator while pct create .* was running; it was stopped on the host and may have partly run$/);
			expect(e.steps).toHaveLength(1);
			expect(e.steps[0].stdoutTail).toContain('created.');
			expect(e.steps[0].finishedAt).toBeDefined();
			await waitUntil(async () => (await pve.hangs()).every((h) => !alive(h.pid)), 'the hung process to die', { timeoutMs: 5_000 });
			expect((await jobsFor(id)).map((j) => j.task).sort()).toEqual(['agent__continue_session', 'executions__run']);
		} finally {
			await pve.setFault('create', null);
		}
	});
});

describe('a lease taken away', () => {
	it(
		'a run that the sweeper declared lost stops its command at the next heartbeat',
		async () => {
			await pve.setFault('create', 'hang');
			try {
				const hangsBefore = (await pve.hangs()).length;
				const r = await request({ target: 'strong', action: 'pct_create', params: { hostname: 'stalled', template: DEBIAN }, reason: 'r' });
				const id = r.execution.id;
				expect((await decide(id, operatorId, 'approved')).ok).toBe(true);
				const run = runExecution(id);
				const hung = await waitUntil(async () => (await pve.hangs()).slice(hangsBefore)[0], 'the fake pct create to hang');
				// As if this worker had not been able to heartbeat for a minute:
				await sql()`update executions set lease_until = now() - interval '1 second' where id = ${id}`;
				expect(await sweep(sql())).toMatchObject({ lost: 1 });
				const t0 = Date.now();
				await run;
				expect(Date.now() - t0).toBeLessThan(12_000);
				const e = await load(id);
				expect(e.status).toBe('interrupted');
				expect(e.error).toMatch(/^worker lost/);
				await waitUntil(async () => !alive(hung.pid), 'the remote command to be stopped', { timeoutMs: 5_000 });
			} finally {
				await pve.setFault('create', null);
			}
		},
		scaled(20_000)
	);
});

describe('a deploy that finishes', () => {
	it('one plan approval: download the template, create the CT from it, push the unit file, start it, verify it read-only', async () => {
		const template = 'ubuntu-22.04-standard_22.04-1_amd64.tar.zst';
		const unit = '[Unit]\nDescription=TypeType\n\n[Service]\nExecStart=/usr/bin/node /opt/typetype/server.js\n\n[Install]\nWantedBy=multi-user.target\n';
		const planned = [
			{ target: 'strong', action: 'pveam_download', params: { storage: 'local', template }, reason: 'the template is missing' },
			{ target: 'strong', action: 'pct_create', params: { vmid: '170', hostname: 'typetype', template: `local:vztmpl/${template}` }, reason: 'the CT' },
			{ target: 'strong/170', action: 'pct_push', params: { path: '/etc/systemd/system/typetype.service', content: unit }, reason: 'its unit' },
			{ target: 'strong/170', action: 'systemctl', params: { unit: 'typetype.service', op: 'start' }, reason: 'start it' },
			// Verifying needs no approval of its own: read-only checks are steps of the plan too.
			{ target: 'strong/170', action: 'ct_service_active', params: { unit: 'typetype.service' }, reason: 'verify' },
			{ target: 'strong/170', action: 'ct_http_check', params: { port: 8080, path: '/healthz' }, reason: 'verify' }
		];
		const steps: Array<PreparedExecution & { why: string }> = [];
		for (const s of planned) {
			const p = await prepareExecution(s);
			if ('error' in p) throw new Error(p.error);
			steps.push({ ...p, why: s.reason });
		}
		await pve.setHttp(170, 8080, { paths: { '/healthz': { body: 'ok' } } });
		const plan = await sql().begin(async (tx) => decidePlan(tx, (await insertPlan(tx, sessionId, 'Deploy TypeType', steps)).id, 'approved', operatorId, 24));
		expect(plan?.status).toBe('approved');
		// What the plans__advance and executions__run jobs do, one step after the other.
		for (const s of planned) {
			expect(await advancePlan(plan!.id), s.action).toBe('running');
			const id = (await getPlan(sql(), plan!.id))!.steps.find((x) => x.action === s.action && x.executionId && x.index === planned.indexOf(s))!.executionId!;
			await runExecution(id);
			const e = await load(id);
			expect(e.status, `${s.action}: ${e.error ?? ''}`).toBe('succeeded');
		}
		expect(await advancePlan(plan!.id)).toBe('ended');
		expect((await getPlan(sql(), plan!.id))!.status).toBe('succeeded');
		const runs = await Promise.all((await getPlan(sql(), plan!.id))!.steps.map((s) => load(s.executionId!)));
		expect(runs[4].steps[0].stdoutTail).toBe('active\n');
		expect(runs.map((e) => e.decision?.route ?? null)).toEqual(['plan', 'plan', 'plan', 'plan', null, null]);
		expect((await pve.containers()).find((c) => c.vmid === 170)).toMatchObject({
			hostname: 'typetype',
			status: 'running',
			ostemplate: `local:vztmpl/${template}`
		});
	});
});
