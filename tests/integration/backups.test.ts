// The backup actions (issue #45 item 2) end to end against the SSH Proxmox double: a prune's dry
// run lists what would go and the prune removes exactly that set (a set that changed since the
// approval is refused before anything is removed); one backup volume is deleted only by a click
// (never by typed assent) and never when protected; vzdump to a named storage with a retention is
// refused before approval when the storage clearly has no room, and its new volume is read back; a
// backup job's retention is set and read back. The oracle is the double's state, not the words.
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { approveByTyping } from '../../src/lib/server/executions/decisions';
import { requestExecutionTool } from '../../src/lib/server/agent/tools/request-execution';
import { describeActionTool } from '../../src/lib/server/agent/tools/describe-action';
import { GiB, type BackupVolume } from '../doubles/proxmox/health';
import { decide, freshSession, newOperator, newSession, onDouble } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { pve } = useStage({
	env: { NOMOS_BEFORE_APPROVAL_S: '5', NOMOS_HOST_WAIT_MIN: '0.05', NOMOS_HEALTH_AFTER: 'on' },
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 101, hostname: 'media', status: 'running' },
				{ vmid: 102, hostname: 'db', status: 'stopped' }
			]
		}
	]
});

// Tool results are unions with ToolError; tests read them loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const at = (iso: string) => Math.floor(Date.parse(`${iso}Z`) / 1000);
const name = (vmid: number, iso: string) => `local:backup/vzdump-lxc-${vmid}-${iso.replace(/[-:]/g, '_').replace('T', '-')}.tar.zst`;
const vol = (vmid: number, iso: string, gib: number, extra: Partial<BackupVolume> = {}): BackupVolume => ({
	volid: name(vmid, iso),
	vmid,
	subtype: 'lxc',
	size: Math.round(gib * GiB),
	ctime: at(iso),
	...extra
});
/** Five backups of CT 101 (the 12-02 one protected) and one of CT 102. */
const SEED = () => [
	vol(101, '2026-12-01T02:00:00', 2),
	vol(101, '2026-12-02T02:00:00', 2, { protected: 1 }),
	vol(101, '2026-12-03T02:00:00', 2),
	vol(101, '2026-12-04T02:00:00', 2),
	vol(101, '2026-12-05T02:00:00', 2),
	vol(102, '2026-12-05T03:00:00', 1)
];
const onLocal = async () => ((await pve.health()).backups?.local ?? []).map((v) => v.volid).sort();

async function session(title: string): Promise<{ sessionId: string; operatorId: string }> {
	const operatorId = await newOperator(`op-${Math.random().toString(36).slice(2, 8)}`);
	return { sessionId: await newSession(operatorId, title), operatorId };
}

async function read(sessionId: string, action: string, params: Record<string, unknown>): Promise<Loose> {
	const t = requestExecutionTool({ sessionId, messageId: crypto.randomUUID(), signal: new AbortController().signal, turn: { httpGets: 0 } });
	return t.execute!({ target: 'strong', action, params, reason: 'test' }, { toolCallId: crypto.randomUUID(), messages: [] });
}

async function request(sessionId: string, input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}
const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

async function approveAndRun(operatorId: string, id: string): Promise<ExecutionRow> {
	const d = await decide(id, operatorId, 'approved');
	expect(d.ok, JSON.stringify(d)).toBe(true);
	await runExecution(id);
	return load(id);
}

describe('prune by retention', () => {
	const keep = { last: 2 };
	const prune = { storage: 'local', vmid: 101, keep };
	const wouldGo = [name(101, '2026-12-01T02:00:00'), name(101, '2026-12-03T02:00:00')];

	it('the dry run lists what would be removed, kept, or stays protected, in pvesm’s own table', async () => {
		await pve.setHealth({ backups: { local: SEED() }, storages: null });
		const { sessionId } = await session('dry run');
		const r = await read(sessionId, 'backup_prune_preview', prune);
		expect(r.status).toBe('succeeded');
		expect(r.command).toBe("'pvesm' 'prune-backups' 'local' '--dry-run' '1' '--vmid' '101' '--prune-backups' 'keep-last=2'");
		expect(r.output.split('\n')).toEqual([
			"dry run of keep-last=2 for guest 101 on local: 2 of 5 would be removed (give exactly these as backup_prune's remove):",
			`remove ${name(101, '2026-12-01T02:00:00')}`,
			`protected ${name(101, '2026-12-02T02:00:00')}`,
			`remove ${name(101, '2026-12-03T02:00:00')}`,
			`keep ${name(101, '2026-12-04T02:00:00')}`,
			`keep ${name(101, '2026-12-05T02:00:00')}`
		]);
		// The double prints the table as pvesm does.
		const raw = await onDouble(pve, 'pvesm prune-backups local --dry-run 1 --vmid 101 --prune-backups keep-last=2');
		expect(raw.stdout).toMatch(/^NOTE: this is only a preview/);
		expect(raw.stdout).toMatch(/^Backup\s+Backup-ID\s+Prune-Mark$/m);
		expect(raw.stdout).toMatch(/vzdump-lxc-101-2026_12_02-02_00_00\.tar\.zst\s+lxc\/101\s+protected$/m);
		// Nothing was removed by a dry run.
		expect(await onLocal()).toHaveLength(6);
	});

	it('removes exactly the listed volumes, is read back, and needs a person (destructive)', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('prune');
		const r = await request(sessionId, { target: 'strong', action: 'backup_prune', params: { ...prune, remove: wouldGo }, reason: 'free space' });
		expect(r.execution.status).toBe('awaiting_approval');
		expect(r.execution.classification).toBe('destructive');
		expect(r.execution.beforeApproval ?? null).toBeNull();
		const e = await approveAndRun(operatorId, r.execution.id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.verdict).toBe('verified');
		expect(e.verdictDetail).toContain('2 gone');
		expect(await onLocal()).toEqual(
			SEED()
				.map((v) => v.volid)
				.filter((v) => !wouldGo.includes(v))
				.sort()
		);
	});

	it('a set that is not the dry run’s is refused before approval: the card can never be approved', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('wrong set');
		const r = await requestExecution(sessionId, {
			target: 'strong',
			action: 'backup_prune',
			params: { ...prune, remove: [wouldGo[0], name(101, '2026-12-04T02:00:00')] },
			reason: 'free space'
		});
		if ('error' in r) throw new Error(r.error);
		expect(r.via).toBe('cannot_run');
		expect(r.execution.beforeApproval).toMatchObject({ outcome: 'cannot_run' });
		expect(r.execution.beforeApproval!.why).toContain('now also');
		expect(r.execution.beforeApproval!.why).toContain(`no longer ${name(101, '2026-12-04T02:00:00')}`);
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(false);
		expect(await onLocal()).toHaveLength(6);
	});

	it('the set changed between approval and run: refused before running, nothing deleted', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('changed');
		const r = await request(sessionId, { target: 'strong', action: 'backup_prune', params: { ...prune, remove: wouldGo }, reason: 'free space' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		// A nightly backup lands after the approval: with keep-last=2 the 12-04 one would now go too.
		const now = [...SEED(), vol(101, '2026-12-06T02:00:00', 2)];
		await pve.setHealth({ backups: { local: now } });
		const before = (await pve.argvLog()).length;
		await runExecution(r.execution.id);
		const e = await load(r.execution.id);
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(/^not run: the dry run of keep-last=2 on local now marks 3 backups of guest 101 for removal, not the 2 approved/);
		expect(e.error).toContain(`now also ${name(101, '2026-12-04T02:00:00')}`);
		expect(await onLocal()).toEqual(now.map((v) => v.volid).sort());
		// Only the dry run ran: no prune without --dry-run, no pvesm free.
		const ran = (await pve.argvLog()).slice(before).map((a) => a.join(' '));
		expect(ran.filter((l) => l.startsWith('pvesm prune-backups') && !l.includes('--dry-run'))).toEqual([]);
		expect(ran.some((l) => l.startsWith('pvesm prune-backups local --dry-run 1'))).toBe(true);
	});

	it('strict params: a volume of another guest or storage, no retention, an unknown key', async () => {
		const { sessionId } = await session('strict');
		const bad = async (params: Record<string, unknown>) => requestExecution(sessionId, { target: 'strong', action: 'backup_prune', params, reason: 'r' });
		expect(await bad({ ...prune, remove: [name(102, '2026-12-05T03:00:00')] })).toMatchObject({
			error: expect.stringContaining('a backup of this guest on this storage')
		});
		expect(await bad({ storage: 'local', vmid: 101, keep: {}, remove: wouldGo })).toMatchObject({ error: expect.stringContaining('keep at least one') });
		expect(await bad({ ...prune, keep: { last: 0 }, remove: wouldGo })).toMatchObject({ error: expect.stringContaining('keep.last') });
		expect(await bad({ ...prune, remove: ["local:backup/x'; rm -rf /"] })).toMatchObject({ error: expect.stringContaining('remove.0') });
		expect(await bad({ ...prune, remove: wouldGo, all: true })).toMatchObject({ error: expect.stringContaining('all') });
	});
});

describe('delete one backup volume', () => {
	const target = name(101, '2026-12-03T02:00:00');

	it('is irreversible: typing "yes" does not approve it; a click does, and it is read back gone', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('delete');
		const r = await request(sessionId, { target: 'strong', action: 'backup_delete', params: { storage: 'local', volid: target }, reason: 'old' });
		expect(r.execution.status).toBe('awaiting_approval');
		expect(r.execution.commandPreview).toBe(`'pvesm' 'free' '${target}'`);
		const approved = await sql().begin(async (tx) => {
			const part = { type: 'tool-request_execution', toolCallId: 'c1', state: 'output-available', input: {}, output: { executionId: r.execution.id } };
			await insertMessage(tx, { sessionId, role: 'assistant', parts: [part] as never, status: 'complete', origin: 'chat' });
			const m = await insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'yes' }], status: 'complete', origin: 'chat' });
			return approveByTyping(tx, { sessionId, messageId: m.id, text: 'yes', shownIds: [r.execution.id], operatorId, credential: freshSession() });
		});
		expect(approved).toEqual([]);
		expect((await load(r.execution.id)).status).toBe('awaiting_approval');
		expect(await onLocal()).toContain(target);

		const e = await approveAndRun(operatorId, r.execution.id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.verdict).toBe('verified');
		expect(await onLocal()).not.toContain(target);
		expect(await onLocal()).toHaveLength(5);
	});

	it('a protected backup is refused before approval, and again at the run if it became protected since', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('protected');
		const protectedOne = name(101, '2026-12-02T02:00:00');
		const r = await requestExecution(sessionId, {
			target: 'strong',
			action: 'backup_delete',
			params: { storage: 'local', volid: protectedOne },
			reason: 'old'
		});
		if ('error' in r) throw new Error(r.error);
		expect(r.via).toBe('cannot_run');
		expect(r.execution.beforeApproval!.why).toMatch(/is protected: Proxmox does not remove a protected backup/);

		const later = await request(sessionId, { target: 'strong', action: 'backup_delete', params: { storage: 'local', volid: target }, reason: 'old' });
		expect((await decide(later.execution.id, operatorId, 'approved')).ok).toBe(true);
		await pve.setHealth({ backups: { local: SEED().map((v) => (v.volid === target ? { ...v, protected: 1 as const } : v)) } });
		await runExecution(later.execution.id);
		const e = await load(later.execution.id);
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(/^not run: .* is protected/);
		expect(await onLocal()).toContain(target);
		// The double refuses as pve-storage does, were it asked.
		const raw = await onDouble(pve, `pvesm free ${protectedOne}`);
		expect(raw.code).not.toBe(0);
		expect(raw.stderr).toContain("cannot remove protected volume 'backup/vzdump-lxc-101-2026_12_02-02_00_00.tar.zst' on 'local'");
	});
});

describe('vzdump to a named storage with a retention', () => {
	it('refused before approval when the storage has less free space than the guest’s last backup there', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		await pve.fill('local', 0.995, 100 * GiB);
		const { sessionId, operatorId } = await session('full');
		const r = await requestExecution(sessionId, { target: 'lxc:strong/101', action: 'vzdump', params: { storage: 'local' }, reason: 'backup again' });
		if ('error' in r) throw new Error(r.error);
		expect(r.via).toBe('cannot_run');
		expect(r.execution.beforeApproval!.why).toMatch(/^local has 0\.5 GiB free, less than guest 101's last backup there \(2\.0 GiB, 2026-12-05 02:00 UTC\)/);
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(false);
		await pve.setHealth({ storages: null });
	});

	it('a storage that cannot be read is unknown before approval: said, not refused', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		await pve.setFault('fail', { tool: 'pvesh', match: '/storage', stderr: 'ipcc_send_rec[1] failed: Connection refused', exitCode: 255 });
		try {
			const { sessionId } = await session('unreadable');
			const r = await request(sessionId, { target: 'lxc:strong/101', action: 'vzdump', params: { storage: 'local' }, reason: 'backup again' });
			expect(r.execution.status).toBe('awaiting_approval');
			expect(r.execution.beforeApproval).toMatchObject({ outcome: 'unknown', why: expect.stringContaining('could not be read') });
		} finally {
			await pve.setFault('fail', null);
		}
	});

	it('backs up with --prune-backups: the new volume is read back, the retention applied after', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { sessionId, operatorId } = await session('backup');
		const r = await request(sessionId, { target: 'lxc:strong/101', action: 'vzdump', params: { storage: 'local', prune: { last: 2 } }, reason: 'backup' });
		expect(r.execution.commandPreview).toBe("'vzdump' '101' '--storage' 'local' '--mode' 'snapshot' '--compress' 'zstd' '--prune-backups' 'keep-last=2'");
		const e = await approveAndRun(operatorId, r.execution.id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.verdict).toBe('verified');
		const mine = ((await pve.health()).backups?.local ?? []).filter((v) => v.vmid === 101);
		const fresh = mine.filter((v) => !SEED().some((s) => s.volid === v.volid));
		expect(fresh).toHaveLength(1);
		expect(e.verdictDetail).toContain(fresh[0].volid);
		// keep-last=2 after the backup: the new one, 12-05, and the protected 12-02 stay.
		expect(mine.map((v) => v.volid).sort()).toEqual([name(101, '2026-12-02T02:00:00'), name(101, '2026-12-05T02:00:00'), fresh[0].volid].sort());
	});

	it('with no earlier backup of a stopped CT, a storage smaller than its disk is unknown before approval (said); the run then fails with "No space left on device"', async () => {
		await pve.setHealth({ backups: { local: [] } });
		await pve.fill('local', 0.999, 100 * GiB);
		try {
			const { sessionId, operatorId } = await session('enospc');
			const r = await request(sessionId, { target: 'lxc:strong/102', action: 'vzdump', params: { storage: 'local' }, reason: 'backup' });
			// A stopped CT's `disk` is 0 in pct status: not read, so not "fits" either.
			expect(r.via).toBe('approval');
			expect(r.execution.beforeApproval).toMatchObject({
				outcome: 'unknown',
				why: "the room on local for the first backup of CT 102 is unknown: there is no earlier backup of it there to compare with, and a stopped CT's disk use is not reported (its root disk is 8.0 GiB, more than the 0.1 GiB free)"
			});
			const e = await approveAndRun(operatorId, r.execution.id);
			expect(e.status).toBe('failed');
			expect(JSON.stringify(e.steps)).toContain('No space left on device');
			expect(e.verdict).toBeNull();
			expect((await pve.health()).backups?.local).toEqual([]);
		} finally {
			await pve.setHealth({ storages: null });
		}
	});
});

describe('the first backup of a guest on a storage (no earlier one there to compare with)', () => {
	const firstOf101 = async (title: string) => {
		const { sessionId, operatorId } = await session(title);
		const before = (await pve.argvLog()).length;
		const r = await request(sessionId, { target: 'lxc:strong/101', action: 'vzdump', params: { storage: 'local' }, reason: 'first backup' });
		const reads = (await pve.argvLog()).slice(before);
		return { r, reads, operatorId, sessionId };
	};
	const usage = ['pct', 'status', '101', '--verbose'];

	it('less free than its disk uses: the card warns, with the figures; approval stays possible (compression may make it fit, and here it does)', async () => {
		await pve.setHealth({ backups: { local: [vol(102, '2026-12-05T03:00:00', 1)] } });
		await pve.patchCt(101, { diskUsedGb: 1.2 });
		await pve.fill('local', 0.995, 100 * GiB);
		try {
			const { r, reads, operatorId } = await firstOf101('first-full');
			expect(reads).toContainEqual(usage);
			expect(r.via).toBe('approval');
			expect(r.execution.status).toBe('awaiting_approval');
			expect(r.execution.beforeApproval).toMatchObject({
				outcome: 'note',
				why: "local has 0.5 GiB free, less than the 1.2 GiB CT 101's root disk uses now (no earlier backup of it there to compare with): the backup will likely not fit — compression may make it smaller; free space first (backup_prune_preview, then backup_prune) or back up to another storage"
			});
			// A warning, not a refusal: the double's zstd archive is a third of the 1.2 GiB, and fits in 0.5 GiB.
			const e = await approveAndRun(operatorId, r.execution.id);
			expect(e.status, e.error ?? '').toBe('succeeded');
			expect(e.verdict).toBe('verified');
			const mine = ((await pve.health()).backups?.local ?? []).filter((v) => v.vmid === 101);
			expect(mine).toHaveLength(1);
			expect(mine[0].size).toBe(Math.round((1.2 * GiB) / 3));
		} finally {
			await pve.patchCt(101, { diskUsedGb: undefined });
			await pve.setHealth({ storages: null });
		}
	});

	it('free space at least what its disk uses: no warning, and the use was read to say so', async () => {
		await pve.setHealth({ backups: { local: [] } });
		await pve.patchCt(101, { diskUsedGb: 1.2 });
		await pve.fill('local', 0.98, 100 * GiB);
		try {
			const { r, reads } = await firstOf101('first-room');
			expect(reads).toContainEqual(usage);
			expect(r.via).toBe('approval');
			expect(r.execution.beforeApproval ?? null).toBeNull();
		} finally {
			await pve.patchCt(101, { diskUsedGb: undefined });
			await pve.setHealth({ storages: null });
		}
	});

	it('with a last backup there, that comparison stands and the disk use is not read', async () => {
		await pve.setHealth({ backups: { local: SEED() } });
		const { r, reads } = await firstOf101('not-first');
		expect(r.execution.beforeApproval ?? null).toBeNull();
		expect(reads).not.toContainEqual(usage);
	});

	it('a disk use that cannot be read is unknown, said: never read as "fits"', async () => {
		await pve.setHealth({ backups: { local: [] } });
		await pve.setFault('fail', { tool: 'pct', match: 'status 101 --verbose', stderr: 'ipcc_send_rec[1] failed: Connection refused', exitCode: 255 });
		try {
			const { r, sessionId } = await firstOf101('first-unread');
			expect(r.via).toBe('approval');
			expect(r.execution.beforeApproval).toMatchObject({
				outcome: 'unknown',
				why: 'the room on local for the first backup of CT 101 is unknown: there is no earlier backup of it there to compare with, and its disk use could not be read (pct status 101 exited with 255: ipcc_send_rec[1] failed: Connection refused)'
			});
			// The agent is told the same, to say it.
			const t = requestExecutionTool({ sessionId, messageId: crypto.randomUUID(), signal: new AbortController().signal, turn: { httpGets: 0 } });
			const told: Loose = await t.execute!(
				{ target: 'lxc:strong/101', action: 'vzdump', params: { storage: 'local' }, reason: 'first backup' },
				{ toolCallId: crypto.randomUUID(), messages: [] }
			);
			expect(told.beforeApproval).toMatch(
				/^could not check before approval: the room on local for the first backup of CT 101 is unknown: .*pct status 101 exited with 255/
			);
		} finally {
			await pve.setFault('fail', null);
		}
	});

	it('a disk use read that does not answer in time is unknown, said', async () => {
		await pve.setHealth({ backups: { local: [] } });
		await pve.setFault('slow', { tool: 'pct', match: 'status 101 --verbose', ms: 8_000 });
		try {
			const { r } = await firstOf101('first-slow');
			expect(r.via).toBe('approval');
			expect(r.execution.status).toBe('awaiting_approval');
			expect(r.execution.beforeApproval).toMatchObject({ outcome: 'unknown', why: expect.stringMatching(/did not answer/) });
		} finally {
			await pve.setFault('slow', null);
		}
	}, 20_000);
});

describe("a backup job's retention", () => {
	it('is set and read back; an unknown job fails without a verdict of success', async () => {
		await pve.setHealth({
			jobs: [{ id: 'backup-0c1a', schedule: '02:00', storage: 'local', all: 1, enabled: 1, 'prune-backups': 'keep-last=7', type: 'vzdump' }]
		});
		const { sessionId, operatorId } = await session('job');
		const r = await request(sessionId, {
			target: 'strong',
			action: 'backup_job_retention',
			params: { id: 'backup-0c1a', keep: { daily: 7, last: 3 } },
			reason: 'keep less'
		});
		expect(r.execution.commandPreview).toBe("'pvesh' 'set' '/cluster/backup/backup-0c1a' '--prune-backups' 'keep-last=3,keep-daily=7'");
		const e = await approveAndRun(operatorId, r.execution.id);
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.verdict).toBe('verified');
		expect((await pve.health()).jobs?.[0]['prune-backups']).toBe('keep-last=3,keep-daily=7');

		const missing = await request(sessionId, {
			target: 'strong',
			action: 'backup_job_retention',
			params: { id: 'backup-nope', keep: { last: 3 } },
			reason: 'r'
		});
		const m = await approveAndRun(operatorId, missing.execution.id);
		expect(m.status).toBe('failed');
		expect(JSON.stringify(m.steps)).toContain("job 'backup-nope' does not exist");
	});
});

describe('the family on demand', () => {
	it('describe_action "health" lists the backup actions with how each is approved', async () => {
		const { sessionId } = await session('describe');
		const t = describeActionTool({ sessionId, messageId: crypto.randomUUID(), signal: new AbortController().signal, turn: { httpGets: 0 } });
		const r = (await t.execute!({ action: 'health' }, { toolCallId: 'd', messages: [] })) as Loose;
		const lines: string[] = r.actions;
		expect(lines.find((l) => l.startsWith('backup_prune_preview('))).not.toContain('[');
		expect(lines.find((l) => l.startsWith('backup_prune('))).toContain('[destructive: a person approves]');
		expect(lines.find((l) => l.startsWith('backup_delete('))).toContain('[destructive: a person approves]');
		expect(lines.find((l) => l.startsWith('backup_job_retention('))).toContain('[waits for approval]');
	});
});
