// The node operations of issue #45 item 2 against the SSH Proxmox double: a package refresh and
// the upgrade with its read-back (nothing pending) and "reboot needed" for a kernel, a PVE
// service's restart read back active, a unit's journal tail, and a failed start whose error
// carries the cause its host task logged.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { describeActionTool } from '../../src/lib/server/agent/tools/describe-action';
import { createRule } from '../../src/lib/server/executions/allow-rules';
import { approvalVerdict, type Credential } from '../../src/lib/server/executions/authority';
import { needsPerson } from '../../src/lib/server/proxmox/actions';
import { decide, freshSession, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { pve } = useStage({
	env: { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'on' },
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped', lock: 'backup' },
				{ vmid: 102, hostname: 'web', status: 'stopped' },
				{ vmid: 103, hostname: 'media', status: 'stopped' }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'node ops');
});
beforeEach(async () => {
	await pve.setHealth({ apt: null, aptRepo: null, storages: null, tasks: null });
});

async function request(input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, { reason: 'test', ...input });
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}
const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await request(input);
	expect(r.execution.status).toBe('awaiting_approval');
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return load(r.execution.id);
}

const pkg = (Package: string, OldVersion: string, Version: string, Origin = 'Proxmox') => ({ Package, OldVersion, Version, Origin });

describe('node updates', () => {
	it('node_apt_refresh runs the API refresh at once and lists what became pending, a new kernel flagged', async () => {
		await pve.setHealth({ aptRepo: [pkg('proxmox-kernel-6.8', '6.8.12-5', '6.8.12-6'), pkg('pve-manager', '8.3.2', '8.3.3')] });
		const r = await request({ target: 'strong', action: 'node_apt_refresh', params: {} });
		expect(r.via).toBe('read_only');
		const e = await load(r.execution.id);
		expect(e.status).toBe('succeeded');
		expect(e.steps.map((s) => s.command)).toEqual([
			"'pvesh' 'create' '/nodes/localhost/apt/update'",
			"'pvesh' 'get' '/nodes/localhost/apt/update' '--output-format' 'json'"
		]);
		expect(e.result).toMatch(/^2 pending updates .*a new kernel \(proxmox-kernel-6\.8\): reboot needed/);
		expect((await pve.health()).apt?.map((p) => p.Package)).toEqual(['proxmox-kernel-6.8', 'pve-manager']);
	});

	it('apt_upgrade on the node: the card says reboot before approval; dist-upgrade, read back nothing pending, reboot needed', async () => {
		await pve.setHealth({ apt: [pkg('proxmox-kernel-6.8', '6.8.12-5', '6.8.12-6'), pkg('libpve-common-perl', '8.2.9', '8.3.0')] });
		const r = await request({ target: 'strong', action: 'apt_upgrade', params: {} });
		expect(r.execution.beforeApproval).toMatchObject({
			outcome: 'note',
			why: 'reboot needed afterwards: a new kernel (proxmox-kernel-6.8) is among the 2 pending updates'
		});
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		const e = await load(r.execution.id);
		expect(e.status).toBe('succeeded');
		expect(e.steps.map((s) => s.command)).toContain(
			"'env' 'DEBIAN_FRONTEND=noninteractive' 'apt-get' '-y' '-o' 'Dpkg::Options::=--force-confold' 'dist-upgrade'"
		);
		expect(e.verdict).toBe('verified');
		expect(e.verdictDetail).toContain('no pending updates');
		expect(e.result).toContain('dist-upgrade: 2 packages upgraded');
		expect(e.result).toContain('proxmox-kernel-6.8 6.8.12-6');
		expect(e.result).toMatch(/reboot needed: a new kernel \(proxmox-kernel-6\.8\)/);
		expect((await pve.health()).apt).toEqual([]);
	});

	it('a pending list that cannot be read: the card says a reboot is unknown, not that none follows', async () => {
		await pve.setHealth({ apt: [pkg('proxmox-kernel-6.8', '6.8.12-5', '6.8.12-6')] });
		await pve.setFault('fail', { tool: 'pvesh', match: 'apt/update', exitCode: 255, stderr: 'proxy detected vanished client connection' });
		try {
			const r = await request({ target: 'strong', action: 'apt_upgrade', params: {} });
			expect(r.execution.beforeApproval).toMatchObject({
				outcome: 'note',
				why: 'whether a reboot is needed afterwards is unknown: the pending updates could not be read (proxy detected vanished client connection)'
			});
		} finally {
			await pve.setFault('fail', null);
		}
	});

	it('without a kernel among them, no reboot is said', async () => {
		await pve.setHealth({ apt: [pkg('pve-manager', '8.3.2', '8.3.3')] });
		expect((await request({ target: 'strong', action: 'apt_upgrade', params: {} })).execution.beforeApproval).toBeNull();
		const e = await approveAndRun({ target: 'strong', action: 'apt_upgrade', params: {} });
		expect(e.status).toBe('succeeded');
		expect(e.result).toContain('pve-manager 8.3.3');
		expect(e.result).not.toContain('reboot');
	});
});

describe('PVE services and journals', () => {
	it('pve_service restarts an allowed service and reads it back active', async () => {
		await pve.setService('pveproxy', { active: false });
		const e = await approveAndRun({ target: 'strong', action: 'pve_service', params: { service: 'pveproxy' } });
		expect(e).toMatchObject({ status: 'succeeded', result: 'pveproxy restarted' });
		expect(e.steps[0].command).toBe("'systemctl' 'restart' 'pveproxy'");
		expect(e.verdict).toBe('verified');
		expect(e.verdictDetail).toContain('pveproxy active');
		expect(await pve.service('pveproxy')).toMatchObject({ active: true });
	});

	it('pve_service refuses a unit outside the allowlist, the cluster stack included', async () => {
		for (const service of ['sshd', 'corosync', 'pve-cluster', 'pve-ha-lrm']) {
			const r = await requestExecution(sessionId, { target: 'strong', action: 'pve_service', params: { service }, reason: 'test' });
			expect('error' in r && r.error, service).toMatch(/service/);
		}
	});

	it('pve_cluster_service (corosync, pve-cluster, pve-ha-*) is approved only by a person: no rule, no typed yes, no token', async () => {
		const refused = await sql().begin((tx) => createRule(tx, { action: 'pve_cluster_service', pattern: 'host:strong' }, { id: operatorId, username: 'alice' }));
		expect(refused).toMatchObject({
			error: "pve_cluster_service can stop more than itself (quorum, an HA fence): no rule can allow it; each one needs an operator's click"
		});
		expect(needsPerson('pve_cluster_service')).toBe(true);
		expect(needsPerson('pve_service')).toBe(false);
		expect(approvalVerdict({ action: 'pve_cluster_service', requestedWithToken: null }, 'typed', freshSession())).toMatchObject({ ok: false });
		const token: Credential = { kind: 'token', token: { id: 't', name: 'ci', scope: 'approve' } };
		expect(approvalVerdict({ action: 'pve_cluster_service', requestedWithToken: null }, 'click', token)).toMatchObject({ ok: false });
		expect(approvalVerdict({ action: 'pve_cluster_service', requestedWithToken: null }, 'click', { kind: 'session', verifiedAt: null })).toMatchObject({
			ok: false,
			stepUp: true,
			reason: expect.stringContaining('can stop more than itself')
		});

		// A click in a browser whose password is fresh runs it, read back.
		await pve.setService('corosync', { active: false });
		const e = await approveAndRun({ target: 'strong', action: 'pve_cluster_service', params: { service: 'corosync' } });
		expect(e).toMatchObject({ status: 'succeeded', result: 'corosync restarted', verdict: 'verified' });
		expect(e.steps[0].command).toBe("'systemctl' 'restart' 'corosync'");
		expect(await pve.service('corosync')).toMatchObject({ active: true });
	});

	it("journal_tail reads a CT unit's last lines at once; none is said in words", async () => {
		await pve.setService('caddy', { active: false }, 100);
		await pve.addJournal('caddy', ['Dec 06 21:40:01 caddy caddy[312]: Error: loading config: listen tcp :443: bind: address already in use'], 100);
		const r = await request({ target: 'strong/100', action: 'journal_tail', params: { unit: 'caddy.service', lines: 20 } });
		const e = await load(r.execution.id);
		expect(e.steps[0].command).toBe("'pct' 'exec' '100' '--' 'journalctl' '-u' 'caddy.service' '-n' '20' '--no-pager'");
		expect(e.result).toBe(
			'last 1 journal line of caddy.service:\nDec 06 21:40:01 caddy caddy[312]: Error: loading config: listen tcp :443: bind: address already in use'
		);
		const none = await load((await request({ target: 'strong', action: 'journal_tail', params: { unit: 'nothing' } })).execution.id);
		expect(none.result).toBe('no journal entries for nothing');
	});

	it('describe_action health lists them after the reads, a change marked as one', async () => {
		const d = (await describeActionTool({} as never).execute!({ action: 'health' }, { toolCallId: 'd', messages: [] })) as {
			actions: string[];
			classification: string;
		};
		expect(d.classification).toBe('read_only unless marked');
		expect(d.actions[0]).toMatch(/^storage_status\(node\?\): /);
		expect(d.actions.slice(9, 14)).toEqual([
			expect.stringMatching(/^node_apt_refresh\(node\?\): refresh a node's package lists/),
			expect.stringMatching(/^pve_service\(service: pveproxy\|pvedaemon\|.*\|systemd-timesyncd, op\?=restart\) \[waits for approval\]: /),
			expect.stringMatching(/^pve_cluster_service\(service: pve-cluster\|corosync\|pve-ha-crm\|pve-ha-lrm, op\?=restart\) \[disruptive: a person approves\]: /),
			expect.stringMatching(/^storage_content\(storage, limit\?=15, node\?\): what takes a storage's space/),
			expect.stringMatching(/^journal_tail\(unit, lines\?=50\): /)
		]);
	});
});

describe('a failed start says why', () => {
	it('a locked CT: the CLI error itself, and no task to read', async () => {
		const e = await approveAndRun({ target: 'strong/101', action: 'pct_start', params: {} });
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(/pct start exited with 255: CT is locked \(backup\)/);
		expect(e.steps.filter((s) => s.kind === 'cause').map((s) => s.label)).toEqual(['read the failed vzstart task']);
	});

	it('a full storage: the task log gives "No space left on device" where the CLI says only "startup failed"', async () => {
		await pve.fill('local-lvm', 1);
		const e = await approveAndRun({ target: 'strong/102', action: 'pct_start', params: {} });
		expect(e.status).toBe('failed');
		expect(e.error).toMatch(
			/^pct start exited with 255: startup for container '102' failed; the task log says: lxc_setup_rootfs_prepare_root: 3858 No space left on device - Failed to mount rootfs "\/dev\/pve\/vm-102-disk-0" \(UPID:strong:[0-9A-F]+:[0-9A-F]+:[0-9A-F]+:vzstart:102:root@pam:\)/
		);
		const cause = e.steps.filter((s) => s.kind === 'cause');
		expect(cause).toHaveLength(2);
		expect(cause[0].command).toMatch(/^'pvesh' 'get' '\/nodes\/localhost\/tasks' '--errors' '1' '--typefilter' 'vzstart' '--vmid' '102' '--since' '\d+'/);
		expect((await pve.containers()).find((c) => c.vmid === 102)?.status).toBe('stopped');
	});

	it('a missing storage: said by the CLI and the task alike, said once', async () => {
		await pve.patchCt(103, { rootfs: 'nas:vm-103-disk-0,size=8G' });
		const e = await approveAndRun({ target: 'strong/103', action: 'pct_start', params: {} });
		expect(e.status).toBe('failed');
		expect(e.error).toBe("pct start exited with 255: storage 'nas' does not exist");
	});
});
