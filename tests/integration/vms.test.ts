// VMs with the same care as containers, end to end against the SSH Proxmox double and the
// scripted model: a VM from a cloud image (cloud-init keys over stdin) whose agent reports an
// IP, a clone of a template, snapshot before / health after, grow-only resize, a shutdown that
// times out, and destroy behind the destructive approval path.
import { NotAllowed } from '../../src/lib/server/executions/authority';
import { beforeAll, describe, expect, it } from 'vitest';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { operatorDecides } from '../../src/lib/server/executions/decisions';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { requestRollback } from '../../src/lib/server/executions/rollback';
import { runExecution } from '../../src/lib/server/executions/runner';
import { nomosSnapshotName } from '../../src/lib/server/executions/safeguards';
import { approveLabel } from '../../src/lib/execution-labels';
import { decide, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const IMAGE = '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr6cNHM0ZrnRRVpdVoQmBEqxDj0cGgCq6GNkcRVZrXo alice@laptop';

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_SNAPSHOT_BEFORE: 'on', NOMOS_HEALTH_AFTER: 'on' },
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }],
			vms: [
				{ vmid: 9000, name: 'debian-12-tmpl', status: 'stopped', template: 1, agent: 'enabled=1', diskGb: 2 },
				{ vmid: 300, name: 'hass', status: 'running', agent: 'enabled=1', diskGb: 32 },
				{ vmid: 301, name: 'win11', status: 'running', ignoresAcpi: true }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'vms');
});

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;
const vm = async (vmid: number) => (await pve.vms()).find((v) => v.vmid === vmid);

async function request(input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}
async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await request(input);
	expect(r.execution.status).toBe('awaiting_approval');
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return load(r.execution.id);
}
const toolResults = (i: number) =>
	JSON.stringify((llm.requests.at(i)!.body as { messages: { role: string; content: unknown }[] }).messages.filter((m) => m.role === 'tool'));

describe('a VM from a cloud image', () => {
	it('the agent asks, the operator approves, the VM is created and started, and its agent reports an IP', async () => {
		await sql().begin((tx) =>
			insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'make me a k3s VM' }], status: 'complete', origin: 'chat' })
		);
		llm.push(
			{
				toolCalls: [
					{
						name: 'request_execution',
						args: {
							target: 'strong',
							action: 'vm_create',
							params: { name: 'k3s-1', image: IMAGE, ciuser: 'debian', sshKeys: KEY, memory: 4096 },
							reason: 'k3s node'
						}
					}
				]
			},
			{ text: 'Waiting for your approval.' }
		);
		const turn = await runTurn({ sessionId, origin: 'chat' });
		expect(turn.status, JSON.stringify(turn)).toBe('complete');
		// The id came from the host (pvesh nextid skips the CT 100) before approval, so the card shows it.
		const [row] = await sql()<{ id: string }[]>`select id from executions where action = 'vm_create' order by created_at desc limit 1`;
		const e = await load(row.id);
		expect(e).toMatchObject({ status: 'awaiting_approval', target: 'host:strong', classification: 'config_mutation' });
		expect(e.params).toMatchObject({ vmid: '101', name: 'k3s-1' });
		expect(e.commandPreview).toContain(`'qm' 'create' '101' '--name' 'k3s-1' '--memory' '4096'`);
		expect(e.commandPreview).toContain(`'--scsi0' 'local-lvm:0,import-from=${IMAGE}'`);
		expect(e.commandPreview).not.toContain('AAAAC3'); // the key goes over stdin
		expect(toolResults(1)).toContain('awaiting_approval');

		expect((await decide(e.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(e.id);
		const done = await load(e.id);
		expect(done.status, done.error ?? '').toBe('succeeded');
		expect(done.result).toBe(`VM 101 (k3s-1) created from ${IMAGE} and started — healthy`);
		expect(done.steps.map((s) => [s.kind ?? 'command', s.label])).toEqual([
			['command', 'qm create 101 (k3s-1)'],
			['command', 'qm start 101'],
			['health', 'health: VM running'],
			['health', 'health: guest agent answers']
		]);
		const created = (await vm(101))!;
		expect(created).toMatchObject({
			status: 'running',
			agent: 'enabled=1',
			ciuser: 'debian',
			ipconfig0: 'ip=dhcp',
			importedFrom: IMAGE,
			diskGb: 2,
			memory: 4096
		});
		expect(created.ide2).toBe('local-lvm:vm-101-cloudinit,media=cdrom');
		expect(decodeURIComponent(created.sshkeys!)).toBe(`${KEY}\n`);
		// The temp file that carried the keys is gone.
		const keysArg = (await pve.argvLog()).find((a) => a[0] === 'qm' && a[1] === 'create')!;
		expect(keysArg.slice(-2)[0]).toBe('--sshkeys');

		// The agent reads the VM's address through its guest agent: read-only, no approval.
		llm.push(
			{
				toolCalls: [
					{ name: 'request_execution', args: { target: 'strong', action: 'vm_guest', params: { vmid: 101, cmd: 'network-get-interfaces' }, reason: 'its IP' } }
				]
			},
			{ text: 'k3s-1 is at 192.168.1.201.' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const result = toolResults(-1);
		expect(result).toContain('succeeded');
		expect(result).toContain('192.168.1.201');
	});

	it('refuses an image that is not on the host, and an id another guest holds', async () => {
		const missing = await approveAndRun({
			target: 'strong',
			action: 'vm_create',
			params: { vmid: 150, name: 'x', image: '/var/lib/vz/template/iso/nope.img', start: false },
			reason: 'r'
		});
		expect(missing.status).toBe('failed');
		expect(missing.error).toContain("source '/var/lib/vz/template/iso/nope.img' does not exist");
		const taken = await approveAndRun({ target: 'strong', action: 'vm_create', params: { vmid: 100, name: 'x', image: IMAGE }, reason: 'r' });
		expect(taken.error).toBe('not run: CT 100 already has id 100');
		const vmTaken = await approveAndRun({ target: 'strong', action: 'vm_create', params: { vmid: 300, name: 'x', image: IMAGE }, reason: 'r' });
		expect(vmTaken.error).toBe('not run: VM 300 already exists now (it did not when this was approved)');
	});
});

describe('templates and clones', () => {
	it('clones a template (linked), the clone starts and its agent answers; a template cannot start', async () => {
		const c = await approveAndRun({ target: 'strong', action: 'vm_clone', params: { vmid: 9000, newid: 160, name: 'web-1', full: false }, reason: 'web' });
		expect(c.status, c.error ?? '').toBe('succeeded');
		expect(c.result).toBe('VM 160 (web-1) cloned from 9000 (linked)');
		expect((await vm(160))!).toMatchObject({ status: 'stopped', disk: 'local-lvm:base-9000-disk-0/vm-160-disk-0', agent: 'enabled=1' });
		const start = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 160 }, reason: 'r' });
		expect(start.status, start.error ?? '').toBe('succeeded');
		expect(start.steps.filter((s) => s.kind === 'health').map((s) => s.stdoutTail?.trim())).toEqual([
			expect.stringContaining('status: running'),
			'guest agent answers'
		]);

		const tmpl = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 9000 }, reason: 'r' });
		expect(tmpl.error).toContain("you can't start a vm if it's a template");
		const linkedFromVm = await approveAndRun({ target: 'strong', action: 'vm_clone', params: { vmid: 300, newid: 161, name: 'x', full: false }, reason: 'r' });
		expect(linkedFromVm.error).toContain("Linked clone feature is not available for drive 'scsi0'");
	});

	it('vm_template needs a person (irreversible) and a stopped VM', async () => {
		const r = await request({ target: 'strong', action: 'vm_template', params: { vmid: 160 }, reason: 'r' });
		const stale = { kind: 'session' as const, verifiedAt: new Date(Date.now() - 24 * 3_600_000).toISOString() };
		await expect(
			sql().begin((tx) => operatorDecides(tx, r.execution.id, { decision: 'approved', route: 'button', operatorId, credential: stale }))
		).rejects.toMatchObject({ stepUp: true });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		expect((await load(r.execution.id)).error).toBe('not run: VM 160 is running, expected stopped');
	});
});

describe('changing a VM', () => {
	it('vm_set snapshots first (lvmthin) and changes only the named keys', async () => {
		const e = await approveAndRun({ target: 'strong', action: 'vm_set', params: { vmid: 300, cores: 4, tags: ['ha', 'prod'], onboot: true }, reason: 'r' });
		expect(e.status, e.error ?? '').toBe('succeeded');
		const name = nomosSnapshotName(e.id);
		expect(e.steps.map((s) => [s.kind ?? 'command', s.command])).toEqual([
			['snapshot', `'qm' 'snapshot' '300' '${name}' '--description' 'taken by Nomos before vm_set (execution ${e.id})'`],
			['command', "'qm' 'set' '300' '--cores' '4' '--onboot' '1' '--tags' 'ha;prod'"],
			// the read-back (#42): the config shows what was set
			['verify', "'qm' 'config' '300'"]
		]);
		expect((await vm(300))!).toMatchObject({ cores: 4, tags: 'ha;prod', onboot: 1 });
		expect(Object.keys((await vm(300))!.snapshots ?? {})).toEqual([name]);
		expect(e.result).toBe('VM 300 set: cores=4, onboot=true, tags=ha;prod');
		expect([e.verdict, e.verdictDetail]).toEqual(['verified', 'cores 4, onboot 1 (read back: cores 4, onboot 1)']);
	});

	it('a reboot of a VM configured without an agent is healthy on running alone', async () => {
		await pve.patchVm(300, { agent: undefined });
		try {
			const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 300 }, reason: 'r' });
			expect(e.status, e.error ?? '').toBe('succeeded');
			expect(e.steps.find((s) => s.label === 'health: guest agent answers')?.stdoutTail?.trim()).toBe('no guest agent configured');
		} finally {
			await pve.patchVm(300, { agent: 'enabled=1' });
		}
	});

	it('a failed vm_set names the snapshot taken before, and Roll back requests vm_rollback to it', async () => {
		await pve.setFault('fail', { tool: 'qm', match: 'set 300', exitCode: 255, stderr: 'unable to apply' });
		let bad: ExecutionRow;
		try {
			bad = await approveAndRun({ target: 'strong', action: 'vm_set', params: { vmid: 300, cores: 8 }, reason: 'r' });
		} finally {
			await pve.setFault('fail', null);
		}
		expect(bad.status).toBe('failed');
		expect(bad.error).toContain(`Nomos took snapshot ${nomosSnapshotName(bad.id)} before`);
		expect(bad.leftovers).toBe('VM 300 exists on strong, running');
		const rb = await requestRollback(bad.id);
		if (!('execution' in rb)) throw new Error(JSON.stringify(rb));
		expect(rb.execution).toMatchObject({
			action: 'vm_rollback',
			target: 'host:strong',
			classification: 'destructive',
			params: { vmid: '300', name: nomosSnapshotName(bad.id) }
		});
		expect(approveLabel(rb.execution)).toBe('Roll back VM 300 on strong');
		expect((await decide(rb.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(rb.execution.id);
		expect((await load(rb.execution.id)).status).toBe('succeeded');
		expect((await vm(300))!).toMatchObject({ status: 'stopped', cores: 4, parent: nomosSnapshotName(bad.id) });
	});

	it('vm_resize grows, and a size that would shrink is refused before anything runs', async () => {
		const grow = await approveAndRun({ target: 'strong', action: 'vm_resize', params: { vmid: 300, size: '+8G' }, reason: 'r' });
		expect(grow.status, grow.error ?? '').toBe('succeeded');
		expect((await vm(300))!.diskGb).toBe(40);
		const shrink = await request({ target: 'strong', action: 'vm_resize', params: { vmid: 300, size: '16G' }, reason: 'r' });
		expect(shrink.execution.beforeApproval).toMatchObject({
			outcome: 'cannot_run',
			why: 'VM 300 scsi0 is 40G now; resizing it to 16G would shrink it (vm_resize only grows a disk; Proxmox cannot shrink one)'
		});
		expect(await decide(shrink.execution.id, operatorId, 'approved')).toMatchObject({ ok: false, reason: 'cannot_run' });
		expect((await vm(300))!.diskGb).toBe(40);
		expect(await requestExecution(sessionId, { target: 'strong', action: 'vm_resize', params: { vmid: 300, size: '-8G' }, reason: 'r' })).toMatchObject({
			error: expect.stringContaining('size')
		});
		expect(await requestExecution(sessionId, { target: 'strong', action: 'vm_set', params: { vmid: 300, args: '-S' }, reason: 'r' })).toMatchObject({
			error: expect.stringContaining('args')
		});
	});

	it('a shutdown the guest ignores fails at its timeout; the VM still runs and the agent is told to decide about qm_stop', async () => {
		const e = await approveAndRun({ target: 'strong', action: 'vm_shutdown', params: { vmid: 301, timeoutS: 1 }, reason: 'r' });
		expect(e.status).toBe('failed');
		expect(e.error).toContain('VM quit/powerdown failed - got timeout');
		expect((await vm(301))!.status).toBe('running');
		expect(e.leftovers).toBe('VM 301 exists on strong, running');
	});

	it('a locked VM refuses, and vm_unlock frees it', async () => {
		await pve.patchVm(301, { lock: 'backup' });
		const locked = await approveAndRun({ target: 'strong', action: 'vm_snapshot', params: { vmid: 301, name: 'pre' }, reason: 'r' });
		expect(locked.error).toContain('VM is locked (backup)');
		const un = await approveAndRun({ target: 'strong', action: 'vm_unlock', params: { vmid: 301 }, reason: 'r' });
		expect(un.status).toBe('succeeded');
		expect((await vm(301))!.lock).toBeUndefined();
	});
});

describe('destroy', () => {
	it('needs the destructive approval path: no stale session, no token, no typing; then a stopped VM is purged', async () => {
		// Running: known before approval, so it cannot be approved at all.
		const whileRunning = await request({ target: 'strong', action: 'vm_destroy', params: { vmid: 160 }, reason: 'gone' });
		expect(whileRunning.execution.beforeApproval).toMatchObject({
			outcome: 'cannot_run',
			why: expect.stringMatching(/^VM 160 is running: a running guest is not destroyed/)
		});
		expect(await decide(whileRunning.execution.id, operatorId, 'approved')).toMatchObject({ ok: false, reason: 'cannot_run' });
		// Stopped when asked, started behind Nomos's back after approval: the runner's own read refuses it.
		await pve.patchVm(160, { status: 'stopped' });
		const running = await request({ target: 'strong', action: 'vm_destroy', params: { vmid: 160 }, reason: 'gone' });
		expect(running.execution.beforeApproval).toBeNull();
		expect(running.execution.classification).toBe('destructive');
		expect(approveLabel(running.execution)).toBe('Destroy VM 160 on strong');
		const stale = { kind: 'session' as const, verifiedAt: new Date(Date.now() - 24 * 3_600_000).toISOString() };
		const refused = await sql()
			.begin((tx) => operatorDecides(tx, running.execution.id, { decision: 'approved', route: 'button', operatorId, credential: stale }))
			.catch((e: unknown) => e);
		expect(refused).toBeInstanceOf(NotAllowed);
		expect((refused as NotAllowed).stepUp).toBe(true);
		const token = { kind: 'token' as const, token: { id: '00000000-0000-0000-0000-000000000000', name: 'ci', scope: 'approve' as const } };
		await expect(
			sql().begin((tx) => operatorDecides(tx, running.execution.id, { decision: 'approved', route: 'button', operatorId, credential: token }))
		).rejects.toThrow(/needs a person/);
		expect((await decide(running.execution.id, operatorId, 'approved')).ok).toBe(true);
		await pve.patchVm(160, { status: 'running' });
		await runExecution(running.execution.id);
		expect((await load(running.execution.id)).error).toBe('not run: VM 160 is running, expected stopped');

		const stop = await approveAndRun({ target: 'strong', action: 'qm_stop', params: { vmid: 160 }, reason: 'r' });
		expect(stop.status).toBe('succeeded');
		const d = await approveAndRun({ target: 'strong', action: 'vm_destroy', params: { vmid: 160 }, reason: 'gone' });
		expect(d.status, d.error ?? '').toBe('succeeded');
		expect(d.result).toBe('VM 160 destroyed');
		// then the read-back: the host's own "does not exist" verifies it gone (#42)
		expect(d.steps.map((s) => s.command)).toEqual(["'qm' 'destroy' '160' '--purge'", "'qm' 'status' '160'"]);
		expect(d.verdict).toBe('verified');
		expect(await vm(160)).toBeUndefined();
	});
});

describe('read-only', () => {
	it('vm_config and vm_guest run at once; a guest without a running agent says so', async () => {
		const cfg = await request({ target: 'strong', action: 'vm_config', params: { vmid: 101 }, reason: 'r' });
		expect(cfg.via).toBe('read_only');
		expect(cfg.execution.steps[0].stdoutTail).toContain('scsi0: local-lvm:vm-101-disk-0,size=2G');
		expect(cfg.execution.steps[0].stdoutTail).toContain('agent: enabled=1');
		const ping = await request({ target: 'strong', action: 'vm_guest', params: { vmid: 101 }, reason: 'r' });
		expect(ping.execution.status).toBe('succeeded');
		await pve.patchVm(101, { agentDown: true });
		const down = await request({ target: 'strong', action: 'vm_guest', params: { vmid: 101 }, reason: 'r' });
		expect(down.execution.error).toContain('QEMU guest agent is not running');
		const noAgent = await request({ target: 'strong', action: 'vm_guest', params: { vmid: 301 }, reason: 'r' });
		expect(noAgent.execution.error).toContain('No QEMU guest agent configured');
	});
});
