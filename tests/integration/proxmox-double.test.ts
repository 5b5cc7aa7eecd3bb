import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collect, connectTo, execOn, openExec, shQuote } from '../doubles/proxmox/client';
import { generateHostKey, startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { scaled } from '../helpers/time';

const run = promisify(execFile);
const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

/** Alive = has a /proc entry that is not a zombie. */
async function isAlive(pid: number): Promise<boolean> {
	const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
	return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
	const until = Date.now() + scaled(timeoutMs);
	for (;;) {
		const v = await probe();
		if (v !== undefined) return v;
		if (Date.now() > until) throw new Error('waitFor: timed out');
		await new Promise((r) => setTimeout(r, 25));
	}
}

let pve: ProxmoxDouble;
let conn: Client;
const sh = (command: string) => execOn(conn, command);

beforeAll(async () => {
	pve = await startProxmoxDouble({
		delayMs: 20,
		seed: [
			{ vmid: 100, hostname: 'caddy', status: 'running', cores: 2, memory: 1024 },
			{ vmid: 101, hostname: 'db', status: 'stopped' },
			{ vmid: 110, hostname: 'snappy', status: 'running', diskGb: 8 },
			{ vmid: 111, hostname: 'dirstore', status: 'stopped', storage: 'local' }
		],
		vms: [{ vmid: 200, name: 'win11', status: 'stopped', memory: 8192, diskGb: 64 }]
	});
	conn = await connectTo(pve);
});

afterEach(async () => {
	for (const name of ['create', 'hang', 'fail', 'quiet'] as const) await pve.setFault(name, null);
});

afterAll(async () => {
	conn?.end();
	await pve?.close();
});

describe('ssh transport', () => {
	it('advertises the host key whose fingerprint ssh-keygen prints', async () => {
		const { stdout: scan } = await run('ssh-keyscan', ['-t', 'ed25519', '-p', String(pve.port), '127.0.0.1']);
		const keyscanLine = scan.split('\n').find((l) => l.includes('ssh-ed25519')) ?? '';
		const lf = await new Promise<string>((resolve, reject) => {
			const child = execFile('ssh-keygen', ['-lf', '-'], (e, out) => (e ? reject(new Error(e.message)) : resolve(out)));
			child.stdin?.end(keyscanLine + '\n');
		});
		expect(lf.split(/\s+/)[1]).toBe(pve.hostKeyFingerprint);
		expect(pve.hostKeyFingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
	});

	it('reuses a given host key, and a different key fails host verification', async () => {
		const key = await generateHostKey();
		const other = await startProxmoxDouble({ hostKeyPath: key.privateKeyPath });
		try {
			const { stdout } = await run('ssh-keygen', ['-lf', key.publicKeyPath]);
			expect(stdout.split(/\s+/)[1]).toBe(other.hostKeyFingerprint);
			expect(other.hostKeyFingerprint).not.toBe(pve.hostKeyFingerprint);
			// pinning the first server's fingerprint against the second server must fail
			await expect(connectTo({ ...other, hostKeyFingerprint: pve.hostKeyFingerprint })).rejects.toThrow(/verification failed/i);
		} finally {
			await other.close();
			await rm(dirname(key.privateKeyPath), { recursive: true, force: true });
		}
	});

	it('rejects a wrong client key and password auth', async () => {
		const stranger = await generateHostKey(); // any other ed25519 key pair
		await expect(connectTo({ ...pve, clientKeyPath: stranger.privateKeyPath })).rejects.toThrow(/authentication methods failed/);
		await expect(connectTo(pve, { privateKey: undefined, password: 'hunter22' })).rejects.toThrow(/authentication methods failed/);
		await expect(connectTo({ ...pve, user: 'admin' })).rejects.toThrow(/authentication methods failed/);
		await rm(dirname(stranger.privateKeyPath), { recursive: true, force: true });
	});

	it('runs commands through bash with stdin, stderr and exit codes', async () => {
		expect(await sh('echo out; echo oops >&2; exit 7')).toMatchObject({ stdout: 'out\n', stderr: 'oops\n', code: 7 });
		const ch = await openExec(conn, 'cat; echo done >&2');
		ch.end('piped-in');
		expect(await collect(ch)).toMatchObject({ stdout: 'piped-in', stderr: 'done\n', code: 0 });
		expect(pve.execLog()).toContain('cat; echo done >&2');
	});
});

describe('argv logging', () => {
	const hostile = [
		`it's "quoted"`,
		'$(touch /tmp/pve-double-pwned)',
		'`id`',
		'line1\nline2',
		'  spaced  out  ',
		'ünïcødé → 🚀',
		'',
		'--',
		'-n',
		'*',
		'a;b|c&&d',
		'back\\slash',
		'$HOME',
		"'"
	];

	it('logs pct exec argv byte-exact and executes it without a shell', async () => {
		const r = await sh(`pct exec 100 -- printf '%s\\0' ${hostile.map(shQuote).join(' ')}`);
		expect(r.code).toBe(0);
		expect(r.stdout.split('\0').slice(0, -1)).toEqual(hostile);
		const log = await pve.argvLog();
		expect(log.at(-1)).toEqual(['pct', 'exec', '100', '--', 'printf', '%s\\0', ...hostile]);
		expect(existsSync('/tmp/pve-double-pwned')).toBe(false);
	});

	it('logs every tool invocation with argv[0] = tool name', async () => {
		await sh(`pvesh get ${shQuote('/nodes/$(id)')} --output-format json; systemctl is-active ${shQuote('we ird')}`);
		expect((await pve.argvLog()).slice(-2)).toEqual([
			['pvesh', 'get', '/nodes/$(id)', '--output-format', 'json'],
			['systemctl', 'is-active', 'we ird']
		]);
	});
});

describe('pct', () => {
	it('create streams progress, then list / status / config show the CT', async () => {
		const ch = await openExec(
			conn,
			`pct create 120 ${TEMPLATE} --hostname web --cores 2 --memory 2048 --rootfs local-lvm:8 --net0 name=eth0,bridge=vmbr0,ip=dhcp --features nesting=1 --unprivileged 1`
		);
		const chunkTimes: number[] = [];
		ch.on('data', () => chunkTimes.push(Date.now()));
		const r = await collect(ch);
		expect(r.code).toBe(0);
		expect(chunkTimes.length).toBeGreaterThan(5);
		expect(chunkTimes.at(-1)! - chunkTimes[0]).toBeGreaterThan(100); // really streamed over time
		expect(r.stdout).toContain('  Logical volume "vm-120-disk-0" created.\n');
		expect(r.stdout).toContain('Creating filesystem with 2097152 4k blocks and 524288 inodes\n');
		expect(r.stdout).toContain("extracting archive '/var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst'\n");
		expect(r.stdout).toContain('Total bytes read: 524288000 (500MiB, 250MiB/s)\n');

		const list = await sh('pct list');
		expect(list.stdout.split('\n')[0]).toBe('VMID       Status     Lock         Name                ');
		expect(list.stdout).toContain('120        stopped                 web                 \n');
		expect(list.stdout).toContain('100        running                 caddy               \n');

		expect((await sh('pct status 120')).stdout).toBe('status: stopped\n');
		expect((await sh('pct config 120')).stdout).toMatch(
			/^arch: amd64\ncores: 2\nfeatures: nesting=1\nhostname: web\nmemory: 2048\nnet0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11(:[0-9A-F]{2}){3},ip=dhcp,type=veth\nostype: debian\nrootfs: local-lvm:vm-120-disk-0,size=8G\nswap: 512\nunprivileged: 1\n$/
		);
		expect(await sh('pct start 120 && pct status 120')).toMatchObject({ code: 0, stdout: 'status: running\n' });
		expect(await sh('pct start 120')).toMatchObject({ code: 255, stderr: 'CT 120 already running\n' });
		expect((await pve.containers()).find((c) => c.vmid === 120)).toMatchObject({ status: 'running', cores: 2, memory: 2048 });
	});

	it('reports real errors for existing / unknown ids and bad templates', async () => {
		expect(await sh(`pct create 100 ${TEMPLATE} --rootfs local-lvm:4`)).toMatchObject({ code: 255, stderr: "CT 100 already exists on node 'strong'\n" });
		expect(await sh('pct status 999')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/strong/lxc/999.conf' does not exist\n" });
		const bad = await sh('pct create 121 local:vztmpl/nope.tar.zst --rootfs local-lvm:4');
		expect(bad).toMatchObject({ code: 255, stderr: "unable to create CT 121 - volume 'local:vztmpl/nope.tar.zst' does not exist\n" });
		expect(bad.stdout).toContain('  Logical volume "vm-121-disk-0" successfully removed.');
		expect((await pve.containers()).map((c) => c.vmid)).not.toContain(121);
		expect((await sh(`pct create 122 ${TEMPLATE}`)).stderr).toContain("storage: storage 'local' does not support container directories");
	});

	it('refuses to destroy a running CT, destroys a stopped one', async () => {
		await sh(`pct create 130 ${TEMPLATE} --rootfs local-lvm:4 --start 1`);
		expect(await sh('pct destroy 130 --purge')).toMatchObject({ code: 255, stderr: 'unable to destroy CT 130 - container is running\n' });
		expect(await sh('pct stop 130 && pct destroy 130 --purge')).toMatchObject({ code: 0, stdout: '  Logical volume "vm-130-disk-0" successfully removed.\n' });
		expect((await sh('pct list')).stdout).not.toContain('130 ');
	});

	it('pct exec requires a running CT and runs in the CT dir', async () => {
		expect(await sh('pct exec 101 -- true')).toMatchObject({ code: 255, stderr: 'CT 101 not running\n' });
		expect((await sh('pct exec 100 -- pwd')).stdout).toBe(join(pve.stateDir, 'guests', '100', 'rootfs') + '\n');
		expect((await sh('pct exec 100 -- sh -c "exit 3"')).code).toBe(3);
	});
});

describe('pvesh / pvesm / systemctl / apt-get', () => {
	it('pvesh prints PVE JSON', async () => {
		const nodes = JSON.parse((await sh('pvesh get /nodes --output-format json')).stdout) as Record<string, unknown>[];
		expect(nodes).toEqual([expect.objectContaining({ node: 'strong', status: 'online', type: 'node', id: 'node/strong', maxcpu: 8 })]);

		const cts = JSON.parse((await sh('pvesh get /nodes/strong/lxc --output-format json')).stdout) as Record<string, unknown>[];
		const caddy = cts.find((c) => c.vmid === 100);
		expect(caddy).toMatchObject({ name: 'caddy', status: 'running', type: 'lxc', cpus: 2, maxmem: 1024 * 1024 ** 2 });
		expect(caddy?.cpu).toBeGreaterThan(0);
		expect(caddy?.mem).toBeGreaterThan(0);
		expect(cts.find((c) => c.vmid === 101)).toMatchObject({ status: 'stopped', cpu: 0, mem: 0, uptime: 0 });

		const current = JSON.parse((await sh('pvesh get /nodes/strong/lxc/100/status/current --output-format json')).stdout) as Record<string, unknown>;
		expect(current).toMatchObject({ vmid: 100, status: 'running', ha: { managed: 0 } });

		expect((await sh('pvesh get /cluster/nextid')).stdout).toBe('102\n');
		expect(JSON.parse((await sh('pvesh get /cluster/nextid --output-format json')).stdout)).toBe('102');
		// pve-manager stable-8 PVE/CLI/pvesh.pm extract_path_info: `print STDERR "No '$cmd' handler defined for '$path'\n"; exit(1);`
		expect(await sh('pvesh get /nope')).toMatchObject({ code: 1, stderr: "No 'get' handler defined for '/nope'\n" });
	});

	it('pvesm status prints the real table', async () => {
		const lines = (await sh('pvesm status')).stdout.trimEnd().split('\n');
		expect(lines[0]).toBe('Name             Type     Status           Total            Used       Available        %');
		expect(lines[1]).toMatch(/^local\s+dir\s+active\s+\d+\s+\d+\s+\d+\s+\d+\.\d\d%$/);
		expect(lines[2]).toMatch(/^local-lvm\s+lvmthin\s+active\s+\d+\s+\d+\s+\d+\s+\d+\.\d\d%$/);
	});

	it('systemctl keeps unit state; status exits 3 when inactive', async () => {
		expect(await sh('systemctl is-active pveproxy')).toMatchObject({ code: 0, stdout: 'active\n' });
		await sh('systemctl stop pveproxy');
		const st = await sh('systemctl status pveproxy');
		expect(st.code).toBe(3);
		expect(st.stdout).toMatch(/^○ pveproxy\.service - PVE API Proxy Server\n.*\n\s+Active: inactive \(dead\)\n$/);
		await sh('systemctl start pveproxy');
		expect((await sh('systemctl status pveproxy.service')).stdout).toContain('Active: active (running) since');
		expect(await sh('systemctl status nope')).toMatchObject({ code: 4, stderr: 'Unit nope.service could not be found.\n' });
	});

	it('apt-get update / dist-upgrade print Debian-style output', async () => {
		expect((await sh('apt-get update')).stdout).toMatch(
			/Hit:\d+ http:\/\/download\.proxmox\.com\/debian\/pve bookworm InRelease\n[\s\S]*Reading package lists\.\.\.\n$/
		);
		expect(await sh('apt-get dist-upgrade')).toMatchObject({ code: 1, stdout: expect.stringContaining('Do you want to continue? [Y/n] Abort.') });
		const up = await sh('apt-get -y dist-upgrade');
		expect(up.stdout).toContain('Setting up pve-manager (8.3.3) ...');
		expect((await sh('apt-get -y dist-upgrade')).stdout).toContain('0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.');
	});
});

describe('faults', () => {
	it('create: fail dies midway with a real-looking error', async () => {
		await pve.setFault('create', 'fail');
		const r = await sh(`pct create 140 ${TEMPLATE} --rootfs local-lvm:4`);
		expect(r.code).toBe(255);
		expect(r.stdout).toContain("extracting archive '/var/lib/vz/template/cache/");
		expect(r.stderr).toMatch(/^tar: .*No space left on device\n[\s\S]*unable to create CT 140 - command 'lxc-usernsexec .* failed: exit code 2\n$/);
		expect((await pve.containers()).map((c) => c.vmid)).not.toContain(140);
	});

	it('create: hang outlives a closed channel, as under sshd; killing its group stops it', async () => {
		await pve.setFault('create', 'hang');
		const ch = await openExec(conn, `pct create 141 ${TEMPLATE} --rootfs local-lvm:4`);
		const firstLine = new Promise<string>((resolve) => ch.once('data', (d: Buffer) => resolve(d.toString())));
		const closed = collect(ch);
		expect(await firstLine).toContain('Logical volume "vm-141-disk-0" created.');
		const { pid } = await waitFor(async () => (await pve.hangs()).find((h) => h.tool === 'pct'));
		expect(await isAlive(pid)).toBe(true);
		expect((await sh('pct list')).stdout).toMatch(/141\s+stopped\s+create\s+CT141/); // locked while creating
		ch.close();
		await closed;
		// A later command on the same connection proves the double handled the close first.
		expect((await sh('true')).code).toBe(0);
		expect(await isAlive(pid)).toBe(true);
		process.kill(-pid, 'SIGKILL'); // bash exec'd the fake: its pid leads the command's group
		await waitFor(async () => ((await isAlive(pid)) ? undefined : true));
	});

	it('an SSH signal reaches the top process only, as sshd delivers it', async () => {
		await pve.setFault('hang', 'pvesm');
		const ch = await openExec(conn, 'echo started; pvesm status; echo never');
		const result = collect(ch);
		const { pid } = await waitFor(async () => (await pve.hangs()).find((h) => h.tool === 'pvesm'));
		const [, ppid, pgid] = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ').map(Number);
		ch.signal('KILL');
		// bash (the top process) dies; the pvesm it waited for does not.
		await waitFor(async () => ((await isAlive(ppid)) ? undefined : true));
		expect(await isAlive(pid)).toBe(true);
		process.kill(-pgid, 'SIGKILL');
		const r = await result;
		expect(r.stdout).toBe('started\n');
		expect(r).toMatchObject({ code: null, signal: 'SIGKILL' }); // ssh2's client re-adds the SIG prefix
		await waitFor(async () => ((await isAlive(pid)) ? undefined : true));
	});

	it('create: { slow } forks a worker that finishes the create later, even when pct itself was killed', async () => {
		await pve.setFault('create', { slow: 300 });
		const ch = await openExec(conn, `pct create 142 ${TEMPLATE} --rootfs local-lvm:4`);
		const closed = collect(ch);
		const task = await waitFor(async () => (await pve.tasks()).find((t) => t.argv.includes('142')));
		expect(task).toMatchObject({ tool: 'pct', done: false });
		ch.signal('KILL'); // reaches bash's exec'd pct, not its worker
		expect((await closed).signal).toBe('SIGKILL');
		expect(await isAlive(task.pid)).toBe(false);
		await waitFor(async () => ((await pve.tasks()).find((t) => t.worker === task.worker)?.done ? true : undefined));
		expect((await pve.containers()).find((c) => c.vmid === 142)).toMatchObject({ status: 'stopped' });
		expect((await pve.containers()).find((c) => c.vmid === 142)?.lock).toBeUndefined();
	});

	it('an unreachable host answers nothing and takes no new connection; commands run on; reachable again, it serves', async () => {
		await pve.setFault('create', { slow: 200 });
		const other = await connectTo(pve);
		const ch = await openExec(other, `pct create 143 ${TEMPLATE} --rootfs local-lvm:4`);
		const task = await waitFor(async () => (await pve.tasks()).find((t) => t.argv.includes('143')));
		pve.setReachable(false);
		let answered = false;
		other.exec('true', () => (answered = true));
		await expect(connectTo(pve)).rejects.toThrow();
		await waitFor(async () => ((await pve.tasks()).find((t) => t.worker === task.worker)?.done ? true : undefined));
		expect(answered).toBe(false);
		ch.removeAllListeners();
		other.on('error', () => undefined);
		pve.setReachable(true);
		const again = await connectTo(pve);
		expect((await execOn(again, 'pct status 143')).stdout).toBe('status: stopped\n');
		again.end();
		other.end();
		conn = await connectTo(pve); // the shared one was frozen too
	});

	it('slowHost: every host tool waits before it runs, a tool inside a guest does not wait again; off by default', async () => {
		const timed = async (cmd: string) => {
			const t = Date.now();
			const r = await sh(cmd);
			return { ms: Date.now() - t, r };
		};
		const base = await timed('pct status 100');
		expect(base.r.code).toBe(0);
		await pve.setFault('slowHost', { ms: 1_200 });
		try {
			const slowed = await Promise.all(['pct status 100', 'qm status 200', 'pvesm status', 'pct exec 100 -- systemctl is-active nginx'].map(timed));
			for (const s of slowed) expect(s.ms).toBeGreaterThanOrEqual(1_200);
			// pct waited once; the systemctl inside the CT did not wait a second time.
			expect(slowed[3].ms).toBeLessThan(2_400 + base.ms);
			expect(slowed[0].r).toMatchObject({ code: 0, stdout: 'status: running\n' });
			// A genuinely absent guest is still said so, in the host's own words, just later.
			expect(await sh('pct status 199')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/strong/lxc/199.conf' does not exist\n" });
		} finally {
			await pve.setFault('slowHost', null);
		}
	});

	it('setRefusing: nothing listens, so connections are refused; then the same port serves again', async () => {
		const other = await connectTo(pve);
		other.on('error', () => undefined);
		const closed = new Promise<void>((r) => other.once('close', () => r()));
		await pve.setRefusing(true);
		await closed;
		await expect(connectTo(pve)).rejects.toThrow(/ECONNREFUSED/);
		await pve.setRefusing(false);
		const again = await connectTo(pve);
		expect((await execOn(again, 'pct status 100')).stdout).toBe('status: running\n');
		again.end();
		conn = await connectTo(pve); // the shared one was closed too
	});

	it('fail: makes a matching invocation exit with the given code and stderr', async () => {
		const stderr = 'Job for pveproxy.service failed because the control process exited with error code.';
		await pve.setFault('fail', { tool: 'systemctl', match: 'restart pveproxy', exitCode: 1, stderr });
		expect(await sh('systemctl restart pveproxy')).toMatchObject({ code: 1, stderr: stderr + '\n' });
		expect((await sh('systemctl restart pvedaemon')).code).toBe(0);
	});
});

describe('pveam', () => {
	it('update, available, list in the real layouts; download adds the template; errors as PVE 8 words them', async () => {
		expect(await sh('pveam update')).toMatchObject({ stdout: 'update successful\n', code: 0 });
		const avail = (await sh('pveam available --section system')).stdout.split('\n');
		expect(avail).toContain('system          debian-11-standard_11.7-1_amd64.tar.zst');
		const list = (await sh('pveam list local')).stdout.split('\n');
		expect(list[0]).toBe(`${'NAME'.padEnd(60)} ${'SIZE'.padEnd(8)}`);
		expect(list[1]).toMatch(/^local:vztmpl\/alpine-3\.20-default_20240908_amd64\.tar\.xz +\d+\.\d\dMB$/);
		const dl = await sh('pveam download local debian-11-standard_11.7-1_amd64.tar.zst');
		expect(dl.code).toBe(0);
		expect(dl.stdout).toContain('calculating checksum...OK, checksum verified');
		expect((await sh('pveam list local')).stdout).toContain('local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst');
		expect((await sh(`pct create 150 local:vztmpl/debian-11-standard_11.7-1_amd64.tar.zst --rootfs local-lvm:2`)).code).toBe(0);
		expect(await sh('pveam download local nope_1.0_amd64.tar.zst')).toMatchObject({
			code: 255,
			stderr: '400 Parameter verification failed.\ntemplate: no such template\npveam download <storage> <template> [OPTIONS]\n'
		});
		expect(await sh('pveam list local-lvm')).toMatchObject({ code: 255, stderr: "storage 'local-lvm' does not support templates\n" });
	});

	it('quiet fault: download exits 0 after a TASK ERROR and the template never lands', async () => {
		await pve.setFault('quiet', { tool: 'pveam', match: 'download' });
		const dl = await sh('pveam download local fedora-40-default_20240909_amd64.tar.xz');
		expect(dl.code).toBe(0);
		expect(dl.stdout).toContain('TASK ERROR: checksum verification failed');
		expect((await sh('pveam list local')).stdout).not.toContain('fedora-40');
	});
});

describe('pct snapshots, resize, push; vzdump; qm', () => {
	it('snapshot / listsnapshot / rollback / delsnapshot, with PVE 8 errors', async () => {
		expect((await sh('pct snapshot 110 before --description "pre upgrade"')).code).toBe(0);
		expect(await sh('pct snapshot 110 before')).toMatchObject({ code: 255, stderr: "snapshot name 'before' already used\n" });
		expect((await sh('pct listsnapshot 110')).stdout).toMatch(/^`-> before +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +pre upgrade\n `-> current +You are here!\n$/);
		expect((await sh('pct config 110')).stdout).toContain('parent: before\n');
		expect((await sh('pct set 110 --memory 4096')).code).toBe(0);
		expect((await sh('pct rollback 110 before')).code).toBe(0);
		expect((await pve.containers()).find((c) => c.vmid === 110)).toMatchObject({ memory: 512, status: 'stopped' });
		expect(await sh('pct rollback 110 nope')).toMatchObject({ code: 255, stderr: "snapshot 'nope' does not exist\n" });
		expect((await sh('pct delsnapshot 110 before')).code).toBe(0);
		expect(await sh('pct delsnapshot 110 before')).toMatchObject({ code: 255, stderr: "snapshot 'before' does not exist\n" });
		expect(await sh('pct snapshot 111 x1')).toMatchObject({ code: 255, stderr: 'snapshot feature is not available\n' });
		await pve.patchCt(110, { lock: 'snapshot' });
		expect(await sh('pct snapshot 110 x2')).toMatchObject({ code: 255, stderr: 'CT is locked (snapshot)\n' });
		await pve.patchCt(110, { lock: undefined });
		expect(await sh('pct snapshot 199 x')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/strong/lxc/199.conf' does not exist\n" });
	});

	it('resize grows (relative or absolute) and refuses to shrink', async () => {
		expect(await sh('pct resize 110 rootfs 4G')).toMatchObject({ code: 255, stderr: 'unable to shrink disk size\n' });
		const grow = await sh('pct resize 110 rootfs +2G');
		expect(grow.code).toBe(0);
		expect(grow.stdout).toContain('Size of logical volume pve/vm-110-disk-0 changed from 8.00 GiB (2048 extents) to 10.00 GiB (2560 extents).');
		expect((await sh('pct resize 110 rootfs 12G')).code).toBe(0);
		expect((await sh('pct config 110')).stdout).toContain('rootfs: local-lvm:vm-110-disk-0,size=12G\n');
	});

	it('push copies a host file into a running CT; the quiet fault cuts it short and still exits 0', async () => {
		await pve.patchCt(110, { status: 'running' });
		expect((await sh("printf 'a=1\\nb=2\\n' > /tmp/pve-double-push.txt && pct push 110 /tmp/pve-double-push.txt /etc/app.conf")).code).toBe(0);
		expect((await pve.guestFile(110, '/etc/app.conf'))?.toString()).toBe('a=1\nb=2\n');
		const sum = await sh('pct exec 110 -- sha256sum /etc/app.conf');
		expect(sum.stdout).toBe(`${createHash('sha256').update('a=1\nb=2\n').digest('hex')}  /etc/app.conf\n`);
		await pve.setFault('quiet', { tool: 'pct', match: 'push' });
		expect((await sh('pct push 110 /tmp/pve-double-push.txt /etc/app2.conf')).code).toBe(0);
		expect((await pve.guestFile(110, '/etc/app2.conf'))?.toString()).toBe('a=1\n');
		expect(await sh('pct exec 110 -- sha256sum /etc/missing')).toMatchObject({ code: 1, stderr: 'sha256sum: /etc/missing: No such file or directory\n' });
		await rm('/tmp/pve-double-push.txt', { force: true });
	});

	it('curl inside a CT reaches only what listens there', async () => {
		await pve.setHttp(110, 8080, { paths: { '/healthz': { body: 'ok' }, '/err': { status: 503 } } });
		expect(await sh('pct exec 110 -- curl -fsS --max-time 5 http://127.0.0.1:8080/healthz')).toMatchObject({ code: 0, stdout: 'ok' });
		expect(await sh('pct exec 110 -- curl -fsS http://127.0.0.1:8080/err')).toMatchObject({
			code: 22,
			stderr: 'curl: (22) The requested URL returned error: 503\n'
		});
		expect(await sh('pct exec 110 -- curl -fsS http://127.0.0.1:8080/other')).toMatchObject({ code: 22 });
		expect(await sh('pct exec 110 -- curl -fsS http://127.0.0.1:9/')).toMatchObject({ code: 7 });
	});

	it('vzdump backs up to local, refuses storages without backups', async () => {
		const ok = await sh('vzdump 110 --storage local --mode snapshot --compress zstd');
		expect(ok.code).toBe(0);
		expect(ok.stderr).toMatch(/INFO: creating vzdump archive '\/var\/lib\/vz\/dump\/vzdump-lxc-110-\d{4}_\d\d_\d\d-\d\d_\d\d_\d\d\.tar\.zst'/);
		expect(ok.stderr.trimEnd().split('\n').pop()).toBe('INFO: Backup job finished successfully');
		expect((await sh('vzdump 111 --storage local --mode snapshot')).stderr).toContain("INFO: trying 'suspend' mode instead");
		expect(await sh('vzdump 110 --storage local-lvm')).toMatchObject({ code: 255, stderr: "storage 'local-lvm' does not support backups\n" });
		expect((await sh('vzdump 199 --storage local')).stderr).toContain("ERROR: Backup of VM 199 failed - unable to find VM '199'");
	});

	it('qm list / status / start / stop for minimal VMs', async () => {
		const list = (await sh('qm list')).stdout.split('\n');
		expect(list[0]).toBe('      VMID NAME                 STATUS     MEM(MB)    BOOTDISK(GB) PID       ');
		expect(list[1]).toBe('       200 win11                stopped    8192              64.00 0         ');
		expect((await sh('qm status 200')).stdout).toBe('status: stopped\n');
		expect((await sh('qm start 200')).code).toBe(0);
		expect(await sh('qm start 200')).toMatchObject({ code: 255, stderr: 'VM 200 already running\n' });
		expect((await sh('qm status 200 --verbose')).stdout).toContain('qmpstatus: running\n');
		expect((await sh('qm stop 200')).code).toBe(0);
		expect((await pve.vms())[0].status).toBe('stopped');
		expect(await sh('qm status 299')).toMatchObject({ code: 2, stderr: "Configuration file 'nodes/strong/qemu-server/299.conf' does not exist\n" });
	});

	it('qm create from a cloud image, clone, resize, snapshots, guest agent and destroy, with real qm errors', async () => {
		const img = '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2';
		const create = (id: number, extra = '') =>
			sh(
				`qm create ${id} --name ci --memory 1024 --net0 virtio,bridge=vmbr0 --scsi0 local-lvm:0,import-from=${img} --ide2 local-lvm:cloudinit --agent enabled=1 --ipconfig0 ip=10.0.0.5/24,gw=10.0.0.1${extra}`
			);
		expect((await create(250)).code).toBe(0);
		expect(await create(250)).toMatchObject({ code: 255, stderr: "unable to create VM 250 - VM 250 already exists on node 'strong'\n" });
		expect(await sh(`qm create 251 --scsi0 local-lvm:0,import-from=/nope.img`)).toMatchObject({
			code: 255,
			stderr: "unable to create VM - source '/nope.img' does not exist\n"
		});
		expect(await create(252, ' --sshkeys /tmp/does-not-exist.pub')).toMatchObject({
			code: 255,
			stderr: "unable to open file '/tmp/does-not-exist.pub' - No such file or directory\n"
		});
		const cfg = (await sh('qm config 250')).stdout;
		expect(cfg).toContain('scsi0: local-lvm:vm-250-disk-0,size=2G\n');
		expect(cfg).toContain('ide2: local-lvm:vm-250-cloudinit,media=cdrom\n');
		expect(await sh('qm guest cmd 250 ping')).toMatchObject({ code: 255, stderr: 'VM 250 is not running\n' });
		expect((await sh('qm start 250')).code).toBe(0);
		expect((await sh('qm guest cmd 250 ping')).code).toBe(0);
		const ifaces = JSON.parse((await sh('qm guest cmd 250 network-get-interfaces')).stdout) as { name: string; 'ip-addresses': { 'ip-address': string }[] }[];
		expect(ifaces.find((i) => i.name === 'eth0')?.['ip-addresses'][0]['ip-address']).toBe('10.0.0.5');
		expect(await sh('qm guest cmd 200 ping')).toMatchObject({ code: 255, stderr: 'VM 200 is not running\n' });
		expect(await sh('qm resize 250 scsi0 1G')).toMatchObject({ code: 255, stderr: 'shrinking disks is not supported\n' });
		expect((await sh('qm resize 250 scsi0 +2G')).code).toBe(0);
		expect((await sh('qm snapshot 250 pre')).code).toBe(0);
		expect((await sh('qm listsnapshot 250')).stdout).toMatch(/^`-> pre +\S+ \S+ +no-description\n `-> current/);
		await pve.patchVm(250, { lock: 'backup' });
		expect(await sh('qm set 250 --cores 2')).toMatchObject({ code: 255, stderr: 'VM is locked (backup)\n' });
		expect((await sh('qm unlock 250')).code).toBe(0);
		expect(await sh('qm set 250 --args -S')).toMatchObject({ code: 255 });
		expect(await sh('qm destroy 250 --purge')).toMatchObject({ code: 255, stderr: 'VM 250 is running - destroy failed\n' });
		expect((await sh('qm stop 250')).code).toBe(0);
		expect((await sh('qm template 250')).code).toBe(0);
		expect(await sh('qm start 250')).toMatchObject({ code: 255, stderr: "you can't start a vm if it's a template\n" });
		expect((await sh('qm clone 250 253 --name linked --full 0')).code).toBe(0);
		expect((await sh('qm config 253')).stdout).toContain('scsi0: local-lvm:base-250-disk-0/vm-253-disk-0,size=4G\n');
		expect((await sh('qm destroy 253 --purge')).code).toBe(0);
		expect((await pve.vms()).map((v) => v.vmid)).toEqual([200, 250]);
	});
});
