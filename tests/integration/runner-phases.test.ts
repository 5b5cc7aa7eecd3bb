// runExecution's phases (executions/phases/), each driven on its own against the SSH Proxmox double
// and the test database: an approved execution is claimed as the runner claims it, and one phase
// at a time is run on its context, to show the decision that phase owns. runExecution itself, end
// to end, is covered by executions, snapshot-health, verdict, slow-host and sealed-approvals.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { claimExecution, getExecution } from '../../src/lib/server/db/queries/executions';
import { resetEnvCache } from '../../src/lib/server/env';
import { hub } from '../../src/lib/server/realtime/hub';
import { requestExecution } from '../../src/lib/server/executions/request';
import { nomosSnapshotName } from '../../src/lib/server/executions/safeguards';
import { authorize } from '../../src/lib/server/executions/phases/authorize';
import { Cancelled, Failure, TAMPERED, Tampered, Unhealthy } from '../../src/lib/server/executions/phases/outcomes';
import { preCheck } from '../../src/lib/server/executions/phases/pre-check';
import { LEASE_SECONDS, openRun, type Run } from '../../src/lib/server/executions/phases/run';
import { runSteps } from '../../src/lib/server/executions/phases/run-steps';
import { settleFailed, settleSucceeded } from '../../src/lib/server/executions/phases/settle';
import { snapshot } from '../../src/lib/server/executions/phases/snapshot';
import { verify } from '../../src/lib/server/executions/phases/verify';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, jobsFor, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

let pve: ProxmoxDouble;
let operatorId: string;
let sessionId: string;
const opened: Run[] = [];

const ENV = {
	NOMOS_SNAPSHOT_BEFORE: 'off',
	NOMOS_HEALTH_AFTER: 'on',
	NOMOS_READBACK_TIMEOUT_S: '2',
	// A host that does not answer is waited for 3 s at most here (a real one: minutes).
	NOMOS_HOST_WAIT_MIN: '0.05'
};

beforeAll(async () => {
	Object.assign(process.env, ENV);
	resetEnvCache();
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{ vmid: 100, hostname: 'app', status: 'running' },
			{ vmid: 101, hostname: 'db', status: 'stopped' },
			{ vmid: 102, hostname: 'web', status: 'running' },
			{ vmid: 103, hostname: 'cache', status: 'stopped' },
			{ vmid: 104, hostname: 'mail', status: 'stopped' }
		]
	});
	await addHost(pve);
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'phases');
});

afterEach(() => {
	for (const run of opened.splice(0)) run.close();
});

afterAll(async () => {
	for (const k of Object.keys(ENV)) delete process.env[k];
	resetEnvCache();
	await pve?.close();
});

/** An execution requested in the session, approved by a click, and claimed as the runner claims it. */
async function claimed(input: Record<string, unknown>): Promise<Run> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	const e = await claimExecution(sql(), r.execution.id, LEASE_SECONDS);
	expect(e?.status).toBe('running');
	const run = openRun(e!, {}, hub());
	opened.push(run);
	return run;
}

const commands = async () => (await pve.argvLog()).map((a) => a.join(' '));
const continuations = async (id: string) => (await jobsFor(id)).filter((j) => j.task === 'agent__continue_session');
/** The step rows but the waits for a slow host (a loaded test machine makes reads wait). */
const rows = (run: Run) => run.steps.filter((s) => s.kind !== 'check');
const stored = async (id: string) => (await getExecution(sql(), id))!;

describe('authorize', () => {
	it('passes an approved, sealed execution and names the CT it runs in', async () => {
		const run = await claimed({ target: 'strong/100', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		expect(await authorize(run.e)).toBe('100');
	});

	it('refuses a forged seal, and a record changed after approval, before any connection', async () => {
		// What someone with only the database does (the approvals table is append-only): an
		// approval row with a made-up seal for a pending execution, and the status to match.
		const r = await requestExecution(sessionId, { target: 'strong/101', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		if ('error' in r) throw new Error(r.error);
		const id = r.execution.id;
		await sql().begin(async (tx) => {
			await tx`insert into approvals (execution_id, hash, decision, route, decided_by, mac) values (${id}, ${r.execution.hash}, 'approved', 'button', ${operatorId}, ${'0'.repeat(64)})`;
			await tx`update executions set status = 'approved', approved_at = now() where id = ${id}`;
		});
		const e = (await claimExecution(sql(), id, LEASE_SECONDS))!;
		const before = { handshakes: pve.handshakes(), commands: (await commands()).length };
		const sealed = await authorize(e).catch((err: unknown) => err);
		expect(sealed).toBeInstanceOf(Tampered);
		expect(sealed).toMatchObject({ message: TAMPERED, what: 'seal' });
		const changed = await authorize({ ...e, params: { cores: 64 } }).catch((err: unknown) => err);
		expect(changed).toMatchObject({ what: 'content', message: 'the stored execution does not match its hash; refusing to run' });
		expect(pve.handshakes()).toBe(before.handshakes);
		expect(await commands()).toHaveLength(before.commands);
	});
});

describe('preCheck', () => {
	it('re-reads the target and builds the steps, and runs nothing on it', async () => {
		const run = await claimed({ target: 'strong/103', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		const before = (await commands()).length;
		const t = await preCheck(run, await authorize(run.e));
		expect(t.planned.map((s) => s.label)).toEqual(['pct set']);
		expect(t.planned[0].argv.slice(0, 3)).toEqual(['pct', 'set', '103']);
		// Asked again when a loaded machine is slower than a read's first limit: the same read.
		expect([...new Set((await commands()).slice(before))]).toEqual(['pct status 103']);
		expect(rows(run)).toEqual([]);
		expect(run.mutationStarted).toBe(false);
	});

	it('a host that does not answer is unknown ("could not check"), never "does not exist"; nothing runs', async () => {
		const run = await claimed({ target: 'strong/101', action: 'pct_start', params: {}, reason: 'start it' });
		const vmid = await authorize(run.e);
		const before = (await commands()).length;
		await pve.setRefusing(true);
		try {
			const err = await preCheck(run, vmid).catch((x: unknown) => x);
			expect(err).toBeInstanceOf(Failure);
			expect((err as Error).message).toBe('not run: could not check CT 101: strong did not answer within 3 s (last: the connection to strong was refused)');
		} finally {
			await pve.setRefusing(false);
		}
		expect(run.steps).toMatchObject([{ kind: 'check', label: 'connect to strong', exitCode: null }]);
		expect(await commands()).toHaveLength(before);
	});

	it('a precondition the host answers and that no longer holds refuses the run as a fact', async () => {
		const run = await claimed({ target: 'strong/102', action: 'pct_start', params: {}, reason: 'start it' });
		const err = await preCheck(run, await authorize(run.e)).catch((x: unknown) => x);
		expect(err).toBeInstanceOf(Failure);
		expect((err as Error).message).toBe('not run: CT 102 is running, expected stopped');
	});
});

describe('snapshot', () => {
	const snapshotBefore = (on: boolean) => {
		process.env.NOMOS_SNAPSHOT_BEFORE = on ? 'on' : 'off';
		resetEnvCache();
	};

	it('takes the snapshot before, named for the execution', async () => {
		snapshotBefore(true);
		try {
			const run = await claimed({ target: 'strong/100', action: 'pct_set', params: { cores: 3 }, reason: 'more cores' });
			await snapshot(run, await preCheck(run, await authorize(run.e)));
			expect(run.snapshot).toBe(nomosSnapshotName(run.e.id));
			expect(rows(run).map((s) => s.kind)).toEqual(['snapshot']);
		} finally {
			snapshotBefore(false);
		}
	});

	it('a failed snapshot stops the run before the approved command: nothing was changed', async () => {
		snapshotBefore(true);
		await pve.setFault('fail', { tool: 'pct', match: 'snapshot 102', exitCode: 2, stderr: 'snapshot feature is not available' });
		try {
			const run = await claimed({ target: 'strong/102', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
			const err = await snapshot(run, await preCheck(run, await authorize(run.e))).catch((x: unknown) => x);
			expect(err).toBeInstanceOf(Failure);
			expect((err as Error).message).toMatch(
				/^not run: the snapshot before failed, nothing was changed \(snapshot before .+ exited with 2: snapshot feature is not available\)$/
			);
			expect(run.snapshot).toBeNull();
			expect(run.mutationStarted).toBe(false);
			expect(rows(run).map((s) => s.kind)).toEqual(['snapshot']);
			expect((await commands()).filter((c) => c.startsWith('pct set 102'))).toEqual([]);
		} finally {
			await pve.setFault('fail', null);
			snapshotBefore(false);
		}
	});
});

describe('runSteps', () => {
	it('runs the approved steps in order', async () => {
		const run = await claimed({ target: 'strong/100', action: 'apt_upgrade', params: {}, reason: 'patch' });
		const ran = await runSteps(run, await preCheck(run, await authorize(run.e)));
		expect(ran.resumed).toBeNull();
		expect(run.mutationStarted).toBe(true);
		expect(rows(run).map((s) => [s.label, s.exitCode])).toEqual([
			['apt-get update', 0],
			['apt-get dist-upgrade', 0]
		]);
	});

	it('stops at a failed step: the steps after it do not run', async () => {
		const run = await claimed({ target: 'strong/102', action: 'apt_upgrade', params: {}, reason: 'patch' });
		const t = await preCheck(run, await authorize(run.e));
		await pve.setFault('fail', { tool: 'pct', match: 'apt-get update', exitCode: 100, stderr: 'E: Could not get lock /var/lib/apt/lists/lock' });
		try {
			const err = await runSteps(run, t).catch((x: unknown) => x);
			expect(err).toBeInstanceOf(Failure);
			expect((err as Error).message).toBe('apt-get update exited with 100: E: Could not get lock /var/lib/apt/lists/lock');
		} finally {
			await pve.setFault('fail', null);
		}
		expect(run.mutationStarted).toBe(true);
		expect(rows(run).map((s) => s.label)).toEqual(['apt-get update']);
		expect((await commands()).filter((c) => c.startsWith('exec 102') && c.includes('dist-upgrade'))).toEqual([]);
	});
});

describe('verify', () => {
	/** Authorized, pre-checked and run: what verify judges. */
	async function ranSet(vmid: number, cores: number) {
		const run = await claimed({ target: `strong/${vmid}`, action: 'pct_set', params: { cores }, reason: 'cores' });
		const t = await preCheck(run, await authorize(run.e));
		return { run, t, ran: await runSteps(run, t) };
	}

	it('verified: the read-back shows the wanted state', async () => {
		const { run, t, ran } = await ranSet(103, 3);
		await verify(run, t, ran);
		expect(run.verdict).toEqual({ verdict: 'verified', detail: 'cores 3 (read back: cores 3)' });
		expect(run.steps.at(-1)).toMatchObject({ kind: 'verify', verified: true });
	});

	it('still failing: the read-back shows another state, and the run fails though its command succeeded', async () => {
		const { run, t, ran } = await ranSet(104, 4);
		await pve.patchCt(104, { cores: 1 }); // someone else, right after
		const err = await verify(run, t, ran).catch((x: unknown) => x);
		expect(err).toBeInstanceOf(Unhealthy);
		expect((err as Error).message).toMatch(/^still failing: .+ \(the approved command itself succeeded\)$/);
		expect(run.verdict?.verdict).toBe('still_failing');
	});

	it('inconclusive: a read-back the host does not answer is no verdict, and not a failure', async () => {
		const { run, t, ran } = await ranSet(101, 2);
		await pve.setFault('slow', { tool: 'pct', match: 'config 101', ms: 60_000 });
		try {
			await verify(run, t, ran);
		} finally {
			await pve.setFault('slow', null);
		}
		expect(run.verdict?.verdict).toBe('inconclusive');
		expect(run.verdict?.detail).toMatch(/could not check: strong did not answer within 3 s/);
	});
});

describe('settle', () => {
	it('writes succeeded with its summary and queues the continuation once, however often it is called', async () => {
		const run = await claimed({ target: 'strong/100', action: 'pct_set', params: { cores: 1 }, reason: 'fewer cores' });
		const t = await preCheck(run, await authorize(run.e));
		const ran = await runSteps(run, t);
		await verify(run, t, ran);
		expect(await continuations(run.e.id)).toEqual([]);
		await settleSucceeded(run, t, ran);
		await settleSucceeded(run, t, ran);
		const e = await stored(run.e.id);
		expect([e.status, e.result, e.verdict]).toEqual(['succeeded', 'CT 100 set: cores=1', 'verified']);
		expect(await continuations(run.e.id)).toHaveLength(1);
	});

	it('writes how a failed run ended (failed, cancelled), once', async () => {
		const failed = await claimed({ target: 'strong/103', action: 'pct_set', params: { cores: 5 }, reason: 'cores' });
		await settleFailed(failed, new Failure('not run: CT 103 is gone'));
		await settleFailed(failed, new Failure('a second outcome is not written'));
		expect(await stored(failed.e.id)).toMatchObject({ status: 'failed', error: 'not run: CT 103 is gone', result: null });
		expect(await continuations(failed.e.id)).toHaveLength(1);

		const cancelled = await claimed({ target: 'strong/104', action: 'pct_set', params: { cores: 5 }, reason: 'cores' });
		await settleFailed(cancelled, new Cancelled('cancelled by the operator before anything ran'));
		expect(await stored(cancelled.e.id)).toMatchObject({ status: 'cancelled', error: 'cancelled by the operator before anything ran' });
		expect(await continuations(cancelled.e.id)).toHaveLength(1);
	});

	it('an unexpected error is recorded as an internal error, not thrown again', async () => {
		const run = await claimed({ target: 'strong/101', action: 'pct_set', params: { cores: 6 }, reason: 'cores' });
		await settleFailed(run, new TypeError('boom'));
		expect(await stored(run.e.id)).toMatchObject({ status: 'failed', error: 'internal error: boom' });
	});
});
