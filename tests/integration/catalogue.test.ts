// The catalogue beyond create/start/stop, end to end against the SSH Proxmox double: templates,
// pct set/resize/snapshots, vzdump, pct push, VMs and the read-only checks inside a CT. The tools
// that exit 0 when their task failed (pveam download, pct push) are verified by reading back.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { approveLabel } from '../../src/lib/execution-labels';
import { decide, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { pve } = useStage({
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped', diskGb: 8 },
				{ vmid: 102, hostname: 'dirstore', status: 'stopped', storage: 'local' },
				{ vmid: 103, hostname: 'app', status: 'running' }
			],
			vms: [{ vmid: 200, name: 'win11', status: 'stopped' }]
		}
	]
});
let operatorId: string;
let sessionId: string;
const canaryDir = mkdtempSync(join(tmpdir(), 'nomos-catalogue-canary-'));

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'catalogue');
});

afterAll(() => {
	rmSync(canaryDir, { recursive: true, force: true });
});

async function request(input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}
const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

/** Request, approve and run one mutation; returns the finished execution. */
async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await request(input);
	expect(r.execution.status).toBe('awaiting_approval');
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return load(r.execution.id);
}

async function argvDuring(fn: () => Promise<unknown>): Promise<string[][]> {
	const before = (await pve.argvLog()).length;
	await fn();
	return (await pve.argvLog()).slice(before);
}

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('templates', () => {
	it('pveam_update refreshes the list', async () => {
		const e = await approveAndRun({ target: 'strong', action: 'pveam_update', params: {}, reason: 'refresh templates' });
		expect(e).toMatchObject({ status: 'succeeded', result: 'template list updated', classification: 'config_mutation' });
		expect(e.steps[0].stdoutTail).toContain('update successful');
	});

	it('pveam_download downloads, then verifies the template in pveam list', async () => {
		const e = await approveAndRun({
			target: 'strong',
			action: 'pveam_download',
			params: { template: 'debian-11-standard_11.7-1_amd64.tar.zst' },
			reason: 'need bullseye'
		});
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.result).toBe("template local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst downloaded (use it as pct_create's template)");
		expect(e.steps.map((s) => s.label)).toEqual([
			'pveam download debian-11-standard_11.7-1_amd64.tar.zst',
			'verify: local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst in pveam list'
		]);
		expect(e.steps[1]).toMatchObject({ exitCode: 0, verified: true });
		// The new template is usable by pct_create at once.
		const created = await approveAndRun({
			target: 'strong',
			action: 'pct_create',
			params: { vmid: 150, hostname: 'bullseye', template: 'local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst' },
			reason: 'r'
		});
		expect(created.status, created.error ?? '').toBe('succeeded');
	});

	it('a download that exits 0 but failed its task is reported as failed', async () => {
		await pve.setFault('quiet', { tool: 'pveam', match: 'download' });
		try {
			const e = await approveAndRun({
				target: 'strong',
				action: 'pveam_download',
				params: { storage: 'local', template: 'rockylinux-9-default_20240912_amd64.tar.xz' },
				reason: 'r'
			});
			expect(e.steps[0]).toMatchObject({ exitCode: 0 });
			expect(e.steps[0].stdoutTail).toContain('TASK ERROR: checksum verification failed');
			expect(e.steps[1]).toMatchObject({ exitCode: 0, verified: false });
			expect(e.status).toBe('failed');
			expect(e.error).toBe(
				'verification failed: pveam download reported success but local:vztmpl/rockylinux-9-default_20240912_amd64.tar.xz is not in pveam list local'
			);
		} finally {
			await pve.setFault('quiet', null);
		}
	});

	it("an unknown template fails with pveam's own error; a bad name never reaches the host", async () => {
		const e = await approveAndRun({ target: 'strong', action: 'pveam_download', params: { template: 'debian-99-standard_99.0-1_amd64.tar.zst' }, reason: 'r' });
		expect(e.status).toBe('failed');
		expect(e.error).toContain('template: no such template');
		const bad = await requestExecution(sessionId, { target: 'strong', action: 'pveam_download', params: { template: 'x.tar.zst; reboot' }, reason: 'r' });
		expect(bad).toMatchObject({ error: expect.stringContaining('bad params for pveam_download: template:') });
	});
});

describe('pct_set and pct_resize', () => {
	it('pct_set changes cores, memory, swap, onboot and description', async () => {
		const e = await approveAndRun({
			target: 'lxc:strong/101',
			action: 'pct_set',
			params: { cores: 2, memory: 2048, swap: 0, onboot: true, description: "db's box; $(touch x)" },
			reason: 'more room'
		});
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.commandPreview).toBe(`'pct' 'set' '101' '--cores' '2' '--memory' '2048' '--swap' '0' '--onboot' '1' '--description' 'db'\\''s box; $(touch x)'`);
		expect(e.result).toBe('CT 101 set: cores=2, memory=2048, swap=0, onboot=true, description');
		const ct = (await pve.containers()).find((c) => c.vmid === 101)!;
		expect(ct).toMatchObject({ cores: 2, memory: 2048, swap: 0, onboot: 1, description: "db's box; $(touch x)" });
	});

	it('pct_set with nothing to set, or a guessed field, is refused with the allowed fields', async () => {
		expect(await requestExecution(sessionId, { target: 'strong/101', action: 'pct_set', params: {}, reason: 'r' })).toMatchObject({
			error: expect.stringContaining('set at least one of cores, memory, swap, onboot, description')
		});
		expect(await requestExecution(sessionId, { target: 'strong/101', action: 'pct_set', params: { memory_mb: 2048 }, reason: 'r' })).toEqual({
			error: expect.stringContaining('memory_mb'),
			hint: 'fields of pct_set: vmid, cores, memory, swap, onboot, description'
		});
	});

	it('pct_resize grows by +2G and to a larger total; a smaller total is refused before running', async () => {
		const grown = await approveAndRun({ target: 'strong/101', action: 'pct_resize', params: { size: '+2G' }, reason: 'r' });
		expect(grown.status, grown.error ?? '').toBe('succeeded');
		expect(grown.result).toBe('CT 101 rootfs grown by 2G');
		expect((await pve.containers()).find((c) => c.vmid === 101)!.rootfs).toContain('size=10G');

		// Known before approval: the request reads the config, says it cannot run, and nothing approves it.
		const during = await argvDuring(async () => {
			const r = await request({ target: 'strong/101', action: 'pct_resize', params: { disk: 'rootfs', size: '4G' }, reason: 'r' });
			expect(r.execution.beforeApproval).toMatchObject({
				outcome: 'cannot_run',
				why: 'CT 101 rootfs is 10G now; resizing it to 4G would shrink it (pct_resize only grows a disk; Proxmox cannot shrink one)'
			});
			expect(await decide(r.execution.id, operatorId, 'approved')).toMatchObject({ ok: false, reason: 'cannot_run' });
		});
		expect(during).toEqual([['pct', 'config', '101']]);

		const to16 = await approveAndRun({ target: 'strong/101', action: 'pct_resize', params: { size: '16G' }, reason: 'r' });
		expect(to16.status, to16.error ?? '').toBe('succeeded');
		expect((await pve.containers()).find((c) => c.vmid === 101)!.rootfs).toContain('size=16G');

		for (const size of ['-2G', '2T', '0G', '+0G', '2.5G']) {
			expect(await requestExecution(sessionId, { target: 'strong/101', action: 'pct_resize', params: { size }, reason: 'r' })).toMatchObject({
				error: expect.stringContaining('size:')
			});
		}
	});

	it("the host refuses to shrink when the disk grew behind the precondition's back (its own error text)", async () => {
		const r = await request({ target: 'strong/101', action: 'pct_resize', params: { size: '20G' }, reason: 'r' });
		expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
		await pve.patchCt(101, { rootfs: 'local-lvm:vm-101-disk-0,size=32G' });
		await runExecution(r.execution.id);
		expect((await load(r.execution.id)).error).toBe('not run: CT 101 rootfs is 32G now; 20G would not grow it (pct_resize only grows, a disk cannot shrink)');
	});
});

describe('a container that is not contained', () => {
	it('pct_exec and pct_push in a privileged CT: a note on a full-shell host, refused before approval on a gated one (nomos-gate refuses them)', async () => {
		await pve.patchCt(103, { unprivileged: 0 });
		const both = [
			['pct_exec', { argv: ['id'] }],
			['pct_push', { path: '/etc/cron.d/x', content: 'x' }]
		] as const;
		try {
			for (const [action, params] of both) {
				const r = await request({ target: 'strong/103', action, params, reason: 'r' });
				expect(r.execution.beforeApproval, action).toMatchObject({ outcome: 'note', why: "CT 103 is privileged: its root is the node's root" });
			}
			await sql()`update hosts set gate_state = 'gated' where name = 'strong'`;
			for (const [action, params] of both) {
				const r = await request({ target: 'strong/103', action, params, reason: 'r' });
				expect(r.execution.beforeApproval, action).toMatchObject({
					outcome: 'cannot_run',
					why: `CT 103 is privileged: its root is the node's root: nomos-gate on strong refuses ${action} in it`
				});
			}
		} finally {
			await sql()`update hosts set gate_state = null where name = 'strong'`;
			await pve.patchCt(103, { unprivileged: 1 });
		}
		const ok = await approveAndRun({ target: 'strong/103', action: 'pct_exec', params: { argv: ['true'] }, reason: 'r' });
		expect(ok.status, ok.error ?? '').toBe('succeeded');
	});
});

describe('snapshots', () => {
	it('snapshot, rollback (destructive, named button), delsnapshot', async () => {
		const snap = await approveAndRun({ target: 'strong/103', action: 'pct_snapshot', params: { name: 'before-upgrade', description: 'pre apt' }, reason: 'r' });
		expect(snap.status, snap.error ?? '').toBe('succeeded');
		expect((await pve.containers()).find((c) => c.vmid === 103)!.snapshots?.['before-upgrade']).toBeTruthy();

		await approveAndRun({ target: 'strong/103', action: 'pct_set', params: { memory: 4096 }, reason: 'r' });
		const rb = await request({ target: 'strong/103', action: 'pct_rollback', params: { name: 'before-upgrade', start: true }, reason: 'undo' });
		expect(rb.execution.classification).toBe('destructive');
		expect(approveLabel(rb.execution)).toBe('Roll back CT 103');
		expect((await decide(rb.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(rb.execution.id);
		expect(await load(rb.execution.id)).toMatchObject({ status: 'succeeded', result: 'CT 103 rolled back to before-upgrade and started' });
		expect((await pve.containers()).find((c) => c.vmid === 103)).toMatchObject({ memory: 512, status: 'running' });

		const del = await request({ target: 'strong/103', action: 'pct_delsnapshot', params: { name: 'before-upgrade' }, reason: 'r' });
		expect(del.execution.classification).toBe('destructive');
		expect(approveLabel(del.execution)).toBe('Delete snapshot CT 103');
		expect((await decide(del.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(del.execution.id);
		expect((await load(del.execution.id)).status).toBe('succeeded');
		expect((await pve.containers()).find((c) => c.vmid === 103)!.snapshots).toBeUndefined();

		const again = await approveAndRun({ target: 'strong/103', action: 'pct_delsnapshot', params: { name: 'before-upgrade' }, reason: 'r' });
		expect(again.error).toBe("pct delsnapshot before-upgrade exited with 255: snapshot 'before-upgrade' does not exist");
	});

	it("storage without snapshots and a locked CT fail with the host's words", async () => {
		const dir = await approveAndRun({ target: 'strong/102', action: 'pct_snapshot', params: { name: 'x1' }, reason: 'r' });
		expect(dir.error).toBe('pct snapshot x1 exited with 255: snapshot feature is not available');
		await pve.patchCt(103, { lock: 'snapshot' });
		try {
			const locked = await approveAndRun({ target: 'strong/103', action: 'pct_snapshot', params: { name: 'x2' }, reason: 'r' });
			expect(locked.error).toBe('pct snapshot x2 exited with 255: CT is locked (snapshot)');
		} finally {
			await pve.patchCt(103, { lock: undefined });
		}
	});

	it('snapshot names are validated', async () => {
		for (const name of ['current', 'vzdump', '1abc', 'a', 'a b', 'x;reboot', '-rf', 'a'.repeat(41)]) {
			expect(await requestExecution(sessionId, { target: 'strong/103', action: 'pct_snapshot', params: { name }, reason: 'r' }), name).toMatchObject({
				error: expect.stringContaining('name:')
			});
		}
	});
});

describe('vzdump', () => {
	it("backs one CT up to local; a storage without backups fails with vzdump's error", async () => {
		const e = await approveAndRun({ target: 'strong/100', action: 'vzdump', params: { storage: 'local', mode: 'snapshot' }, reason: 'backup' });
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.commandPreview).toBe("'vzdump' '100' '--storage' 'local' '--mode' 'snapshot' '--compress' 'zstd'");
		expect(e.steps[0].stderrTail).toContain('INFO: Backup job finished successfully');
		const bad = await approveAndRun({ target: 'strong/100', action: 'vzdump', params: { storage: 'local-lvm', mode: 'stop' }, reason: 'backup' });
		expect(bad.error).toBe("vzdump to local-lvm exited with 255: storage 'local-lvm' does not support backups");
	});
});

describe('pct_push', () => {
	const unit = `[Unit]\nDescription=typetype\n\n[Service]\nExecStart=/usr/bin/node /opt/app/server.js 'quoted' "$(touch ${canaryDir}/pwned)" \`id\`\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n`;

	it('writes the content over stdin (never on a command line) and verifies its sha256', async () => {
		const e = await approveAndRun({
			target: 'strong/103',
			action: 'pct_push',
			params: { path: '/etc/systemd/system/typetype.service', content: unit },
			reason: 'unit file'
		});
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.result).toBe(`wrote ${Buffer.byteLength(unit)} bytes to /etc/systemd/system/typetype.service in CT 103 (sha256 verified)`);
		expect(e.steps[1]).toMatchObject({ label: 'verify: sha256 of /etc/systemd/system/typetype.service', verified: true });
		expect(e.steps[1].stdoutTail).toContain(sha(unit));
		expect((await pve.guestFile(103, '/etc/systemd/system/typetype.service'))?.toString('utf8')).toBe(unit);
		for (const cmd of pve.execLog()) expect(cmd).not.toContain('ExecStart');
		expect(e.commandPreview).not.toContain('ExecStart');
		expect(readdirSync(canaryDir)).toEqual([]);
		const push = (await pve.argvLog()).find((a) => a[0] === 'pct' && a[1] === 'push')!;
		expect(push.slice(0, 3)).toEqual(['pct', 'push', '103']);
		expect(push[3]).toMatch(/^\/tmp\/nomos-push\./);
		expect(push.slice(4)).toEqual(['/etc/systemd/system/typetype.service', '--perms', '0644']);
	});

	it('a push that exits 0 but wrote a cut-short file fails its verification', async () => {
		await pve.setFault('quiet', { tool: 'pct', match: 'push' });
		try {
			const e = await approveAndRun({
				target: 'strong/103',
				action: 'pct_push',
				params: { path: '/opt/app/config.json', content: '{"port": 8080, "name": "typetype"}\n', mode: '0600' },
				reason: 'config'
			});
			expect(e.steps[0].exitCode).toBe(0);
			expect(e.steps[1]).toMatchObject({ exitCode: 0, verified: false });
			expect(e.status).toBe('failed');
			expect(e.error).toMatch(/^verification failed: pct push reported success but \/opt\/app\/config\.json in CT 103 does not have the content's sha256/);
		} finally {
			await pve.setFault('quiet', null);
		}
	});

	it('refuses content over 32 KiB, NUL, relative paths and ..; a stopped CT is not pushed to', async () => {
		const big = await requestExecution(sessionId, {
			target: 'strong/103',
			action: 'pct_push',
			params: { path: '/x', content: 'é'.repeat(16 * 1024 + 1) },
			reason: 'r'
		});
		expect(big).toMatchObject({ error: expect.stringContaining('content: the content is at most 32768 bytes') });
		for (const [path, content] of [
			['/x', 'a\0b'],
			['etc/x', 'a'],
			['/etc/../root/x', 'a'],
			['/etc/', 'a']
		]) {
			expect(await requestExecution(sessionId, { target: 'strong/103', action: 'pct_push', params: { path, content }, reason: 'r' })).toHaveProperty('error');
		}
		const stopped = await approveAndRun({ target: 'strong/101', action: 'pct_push', params: { path: '/x', content: 'a' }, reason: 'r' });
		expect(stopped.error).toBe('not run: CT 101 is stopped, expected running');
	});
});

describe('VMs', () => {
	it('qm_status reads at once; qm_start and qm_stop wait for approval and check the state first', async () => {
		const st = await request({ target: 'strong', action: 'qm_status', params: { vmid: 200 }, reason: 'r' });
		expect(st.via).toBe('read_only');
		expect(st.execution.status).toBe('succeeded');
		expect(st.execution.steps[0].stdoutTail).toContain('status: stopped');

		const start = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 200 }, reason: 'r' });
		expect(start).toMatchObject({ status: 'succeeded', result: 'VM 200 started' });
		expect((await pve.vms())[0].status).toBe('running');
		const again = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 200 }, reason: 'r' });
		expect(again.error).toBe('not run: VM 200 is running, expected stopped');
		const stop = await approveAndRun({ target: 'strong', action: 'qm_stop', params: { vmid: 200 }, reason: 'r' });
		expect(stop).toMatchObject({ status: 'succeeded', result: 'VM 200 stopped' });
		const missing = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 299 }, reason: 'r' });
		expect(missing.error).toBe('not run: VM 299 does not exist (anymore)');
		expect(await requestExecution(sessionId, { target: 'strong', action: 'qm_start', params: {}, reason: 'r' })).toMatchObject({
			error: expect.stringContaining('vmid')
		});
	});
});

describe('read-only checks inside a CT', () => {
	it("ct_http_check runs without approval: ok on 200, failed with curl's error otherwise", async () => {
		await pve.setHttp(103, 8080, { paths: { '/healthz': { status: 200, body: 'ok' }, '/broken': { status: 500, body: 'boom' } } });
		const ok = await request({ target: 'strong/103', action: 'ct_http_check', params: { port: 8080, path: '/healthz' }, reason: 'verify' });
		expect(ok.via).toBe('read_only');
		expect(ok.execution).toMatchObject({ status: 'succeeded', classification: 'read_only' });
		expect(ok.execution.commandPreview).toBe("'pct' 'exec' '103' '--' 'curl' '-fsS' '--max-time' '5' 'http://127.0.0.1:8080/healthz'");
		expect(ok.execution.steps[0].stdoutTail).toBe('ok');
		const broken = await request({ target: 'strong/103', action: 'ct_http_check', params: { port: 8080, path: '/broken' }, reason: 'verify' });
		expect(broken.execution.error).toBe('GET :8080/broken exited with 22: curl: (22) The requested URL returned error: 500');
		const closed = await request({ target: 'strong/103', action: 'ct_http_check', params: { port: 9999 }, reason: 'verify' });
		expect(closed.execution.error).toContain("curl: (7) Failed to connect to 127.0.0.1 port 9999 after 0 ms: Couldn't connect to server");
		expect(
			await requestExecution(sessionId, { target: 'strong/103', action: 'ct_http_check', params: { port: 80, path: '/a b' }, reason: 'r' })
		).toHaveProperty('error');
	});

	it('ct_service_active: active succeeds, inactive fails', async () => {
		const on = await request({ target: 'strong/103', action: 'ct_service_active', params: { unit: 'cron' }, reason: 'verify' });
		expect(on.execution).toMatchObject({ status: 'succeeded', classification: 'read_only' });
		const off = await request({ target: 'strong/103', action: 'ct_service_active', params: { unit: 'typetype.service' }, reason: 'verify' });
		expect(off.execution.status).toBe('failed');
		expect(off.execution.error).toBe('is-active typetype.service exited with 3: inactive');
	});
});
