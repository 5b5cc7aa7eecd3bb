// Snapshot before, health check after, Roll back: end to end against the SSH Proxmox double.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { executionNote } from '../../src/lib/server/agent/continuation';
import { requestExecution } from '../../src/lib/server/executions/request';
import { requestRollback } from '../../src/lib/server/executions/rollback';
import { runExecution } from '../../src/lib/server/executions/runner';
import { nomosSnapshotName } from '../../src/lib/server/executions/safeguards';
import { decide, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { pve } = useStage({
	env: { NOMOS_SNAPSHOT_BEFORE: 'on', NOMOS_SNAPSHOT_KEEP: '2', NOMOS_HEALTH_AFTER: 'on' },
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'app', status: 'running', cores: 1 },
				{ vmid: 101, hostname: 'dirstore', status: 'running', storage: 'local' },
				{ vmid: 102, hostname: 'web', status: 'running' },
				{ vmid: 103, hostname: 'db', status: 'running' }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'snapshots');
});

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return load(r.execution.id);
}
const snapshotsOf = async (vmid: number) => Object.keys((await pve.containers()).find((c) => c.vmid === vmid)?.snapshots ?? {});

describe('snapshot before', () => {
	it('takes nomos-<id> on lvmthin before the mutation, as its own step', async () => {
		const e = await approveAndRun({ target: 'strong/100', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		expect(e.status).toBe('succeeded');
		const name = nomosSnapshotName(e.id);
		expect(e.steps.map((s) => [s.kind ?? 'command', s.label])).toEqual([
			['snapshot', `snapshot before (${name})`],
			['command', 'pct set'],
			['verify', 'verify: cores 2']
		]);
		expect([e.verdict, e.verdictDetail]).toEqual(['verified', 'cores 2 (read back: cores 2)']);
		expect(e.steps[0].command).toContain(`'pct' 'snapshot' '100' '${name}'`);
		expect(await snapshotsOf(100)).toContain(name);
	});

	it('reads the precondition and the storage at once, and changes nothing before both answered', async () => {
		const from = pve.execTimes().length;
		const e = await approveAndRun({ target: 'strong/103', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		expect(e.status).toBe('succeeded');
		const times = pve.execTimes().slice(from);
		const find = (part: string) => times.find((t) => t.command.includes(part))!;
		const status = find(`'pct' 'status' '103'`);
		const config = find(`'pct' 'config' '103'`);
		const storage = find(`'pvesm' 'status'`);
		const snap = find(`'pct' 'snapshot' '103'`);
		// Both reads went out before either answered: the order of arrival and end on the host.
		expect(config.at).toBeLessThan(status.endedAt!);
		expect(status.at).toBeLessThan(config.endedAt!);
		// The snapshot (the first change) waited for both.
		expect(snap.at).toBeGreaterThanOrEqual(Math.max(status.endedAt!, storage.endedAt!));
	});

	it('takes none on dir storage', async () => {
		const log = (await pve.argvLog()).length;
		const e = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		expect(e.status).toBe('succeeded');
		expect(e.steps.map((s) => s.label)).toEqual(['pct set', 'verify: cores 2']);
		expect((await pve.argvLog()).slice(log).some((a) => a[1] === 'snapshot')).toBe(false);
	});

	it('a failed snapshot stops the execution before the mutation', async () => {
		await pve.setFault('fail', { tool: 'pct', match: 'snapshot 102', exitCode: 2, stderr: 'snapshot feature is not available' });
		try {
			const e = await approveAndRun({ target: 'strong/102', action: 'pct_set', params: { cores: 3 }, reason: 'x' });
			expect(e.status).toBe('failed');
			expect(e.error).toMatch(/^not run: the snapshot before failed, nothing was changed/);
			expect(e.steps).toHaveLength(1);
			expect((await pve.containers()).find((c) => c.vmid === 102)?.cores).toBe(1);
		} finally {
			await pve.setFault('fail', null);
		}
	});

	it('prunes Nomos snapshots beyond NOMOS_SNAPSHOT_KEEP, never the others', async () => {
		await approveAndRun({ target: 'strong/102', action: 'pct_snapshot', params: { name: 'manual' }, reason: 'mine' });
		const ids: string[] = [];
		for (const cores of [2, 3, 4]) ids.push((await approveAndRun({ target: 'strong/102', action: 'pct_set', params: { cores }, reason: 'x' })).id);
		const last = await load(ids[2]);
		expect(last.steps.filter((s) => s.kind === 'prune').map((s) => s.label)).toEqual([`prune old snapshot ${nomosSnapshotName(ids[0])}`]);
		expect((await snapshotsOf(102)).sort()).toEqual(['manual', nomosSnapshotName(ids[1]), nomosSnapshotName(ids[2])].sort());
	});
});

describe('health check after', () => {
	it('reports a unit that is active after restart as healthy', async () => {
		const e = await approveAndRun({ target: 'strong/100', action: 'systemctl', params: { unit: 'cron', op: 'restart' }, reason: 'restart cron' });
		expect(e.status).toBe('succeeded');
		expect(e.steps.map((s) => s.kind ?? 'command')).toEqual(['snapshot', 'command', 'health']);
		expect(e.result).toMatch(/healthy$/);
	});

	it('reports a unit that is not active as unhealthy, to the agent too', async () => {
		await pve.setFault('fail', { tool: 'systemctl', match: 'is-active', exitCode: 3, stderr: 'inactive' });
		try {
			const e = await approveAndRun({ target: 'strong/100', action: 'systemctl', params: { unit: 'cron', op: 'restart' }, reason: 'restart cron' });
			expect(e.status).toBe('failed');
			expect(e.error).toMatch(/^unhealthy: cron is not active in CT 100: pct exec exited with 3: inactive \(the approved command itself succeeded\)/);
			expect(e.verdict).toBe('still_failing');
			expect(e.error).toContain(`snapshot ${nomosSnapshotName(e.id)}`);
			expect(executionNote(e)).toContain('failed: unhealthy: ');
		} finally {
			await pve.setFault('fail', null);
		}
	});
});

describe('roll back', () => {
	it('a failed mutation offers a rollback to its own snapshot; approved, it restores the CT', async () => {
		await pve.setFault('fail', { tool: 'pct', match: 'set 100', exitCode: 255, stderr: 'unable to apply' });
		let failed: ExecutionRow;
		try {
			// the mutation half-applies nothing in the double; change the CT by hand to see the rollback restore it
			failed = await approveAndRun({ target: 'strong/100', action: 'pct_set', params: { memory: 1024 }, reason: 'more memory' });
		} finally {
			await pve.setFault('fail', null);
		}
		expect(failed.status).toBe('failed');
		const before = (await pve.containers()).find((c) => c.vmid === 100)!;
		await pve.patchCt(100, { memory: 4096 });

		const r = await requestRollback(failed.id);
		if (!('execution' in r)) throw new Error(JSON.stringify(r));
		expect(r.via).toBe('approval');
		expect(r.execution).toMatchObject({ action: 'pct_rollback', target: failed.target, status: 'awaiting_approval', classification: 'destructive' });
		expect(r.execution.params).toEqual({ name: nomosSnapshotName(failed.id), start: false });

		// a second click while the first is pending asks for nothing new
		expect(await requestRollback(failed.id)).toEqual({ refused: expect.stringContaining('already asked for (it is awaiting approval)') });

		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		expect(await requestRollback(failed.id)).toEqual({ refused: expect.stringContaining('already asked for (it is succeeded)') });
		const done = await load(r.execution.id);
		expect(done.status).toBe('succeeded');
		// no snapshot of its own before a rollback
		expect(done.steps.map((s) => s.label)).toEqual([`pct rollback ${nomosSnapshotName(failed.id)}`]);
		expect((await pve.containers()).find((c) => c.vmid === 100)?.memory).toBe(before.memory);
	});

	it('two clicks at the same moment ask for one rollback and one retry, not two', async () => {
		await pve.setFault('fail', { tool: 'pct', match: 'set 102', exitCode: 255, stderr: 'unable to apply' });
		let failed: ExecutionRow;
		try {
			failed = await approveAndRun({ target: 'strong/102', action: 'pct_set', params: { memory: 768 }, reason: 'tune' });
		} finally {
			await pve.setFault('fail', null);
		}
		expect(failed.status).toBe('failed');
		const followUps = async (action: string) =>
			(await sql()<{ n: number }[]>`select count(*)::int as n from executions where retry_of = ${failed.id} and action = ${action}`)[0].n;

		const rollbacks = await Promise.all([1, 2, 3].map(() => requestRollback(failed.id)));
		expect(rollbacks.filter((r) => 'execution' in r)).toHaveLength(1);
		for (const r of rollbacks.filter((r) => !('execution' in r))) {
			expect(JSON.stringify(r)).toContain('A rollback of this execution was already asked for (it is awaiting approval)');
		}
		expect(await followUps('pct_rollback')).toBe(1);

		// Retry (the Ops and chat button's route): the same action again, once.
		const retry = { target: failed.target, action: failed.action, params: failed.params, reason: `retry of ${failed.id}` };
		const retries = await Promise.all([1, 2, 3].map(() => requestExecution(sessionId, retry, { retryOf: failed.id })));
		expect(retries.filter((r) => 'execution' in r)).toHaveLength(1);
		expect(retries.filter((r) => 'error' in r)).toEqual([
			{ error: 'A retry of this execution was already asked for (it is awaiting approval).' },
			{ error: 'A retry of this execution was already asked for (it is awaiting approval).' }
		]);
		expect(await followUps('pct_set')).toBe(1);
	});

	it('refuses a rollback for an execution that took no snapshot or succeeded', async () => {
		const ok = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 3 }, reason: 'x' });
		expect(await requestRollback(ok.id)).toEqual({ refused: expect.stringMatching(/only a failed/i) });
		await pve.setFault('fail', { tool: 'pct', match: 'set 101', exitCode: 255, stderr: 'nope' });
		try {
			const bad = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 4 }, reason: 'x' });
			expect(await requestRollback(bad.id)).toEqual({ refused: 'Nomos took no snapshot before this execution.' });
		} finally {
			await pve.setFault('fail', null);
		}
	});
});
