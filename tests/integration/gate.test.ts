// nomos-gate (deploy/nomos-gate) as the forced command of two keys on the real SSH double: every
// catalogue argv and every path Nomos takes (grouped reads, cancel, push, leftovers, inventory)
// passes; off-catalogue commands, metacharacters, newlines, $(), extra or reordered arguments and
// a read key asking for a mutation are refused with nothing run; a stale gate is named.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIONS, ACTION_NAMES, PUSH_SCRIPT, type ActionDef, type Step } from '../../src/lib/server/proxmox/actions';
import { ACTION_PARAMS } from '../../src/lib/schemas/action-params';
import { gateAllowlist, catalogueVersion } from '../../src/lib/server/proxmox/gate-shapes';
import { readInventory } from '../../src/lib/server/proxmox/inventory';
import { RESOURCES_ARGV } from '../../src/lib/server/proxmox/cluster';
import { connect, execArgv, type SshTarget } from '../../src/lib/server/ssh/client';
import { groupedArgv, stopGroupArgv, toCommand } from '../../src/lib/server/ssh/quote';
import { GATE_REVISION, gateProblem, readGate } from '../../src/lib/server/ssh/gate';
import { generateKeyPair, processRunning, startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { SAMPLE_PARAMS } from '../helpers/sample-params';

const GATE = resolve('deploy/nomos-gate');
const ALLOW = resolve('deploy/nomos-gate.allow');
const dir = mkdtempSync(join(tmpdir(), 'nomos-gate-test-'));
const CANARY = join(dir, 'canary');
const STALE = join(dir, 'stale.allow');
/** The node's container configs as the gate reads them (/etc/pve/lxc/<vmid>.conf on a node). */
const LXC = join(dir, 'lxc');
const CONFS: Record<number, string> = {
	// contained; a snapshot that once had a device is history, not the running config
	100: 'hostname: caddy\nunprivileged: 1\n\n[before]\ndev0: /dev/sda\n',
	101: 'hostname: db\nrootfs: local-lvm:vm-101-disk-0,size=8G\nunprivileged: 1\n',
	102: 'hostname: old\nrootfs: local-lvm:vm-102-disk-0,size=8G\n',
	103: 'hostname: nas\nmp0: /tank/media,mp=/media\nunprivileged: 1\n',
	104: 'hostname: gpu\nlxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir\nunprivileged: 1\n',
	105: 'hostname: disk\ndev0: /dev/sda\nunprivileged: 1\n',
	106: 'hostname: later\nunprivileged: 1\n\n[pve:pending]\ndev0: /dev/sda\n'
};

let pve: ProxmoxDouble;
const clients: Record<'read' | 'mutate' | 'stale' | 'oldScript', Client> = {} as never;
const forced = (role: string, allow = ALLOW, gate = GATE) => `restrict,command="perl ${gate} --role ${role} --allow ${allow} --lxc ${LXC}"`;
/** The gate script as revision 1 answered its version: no revision (it had no container check). */
const OLD_GATE = join(dir, 'nomos-gate-r1');

beforeAll(async () => {
	writeFileSync(STALE, readFileSync(ALLOW, 'utf8').replace(/^catalogue \S+$/m, 'catalogue 0000000000000000'));
	writeFileSync(OLD_GATE, readFileSync(GATE, 'utf8').replace(' revision $REVISION\\n', '\\n'));
	mkdirSync(LXC);
	for (const [vmid, conf] of Object.entries(CONFS)) writeFileSync(join(LXC, `${vmid}.conf`), conf);
	const keys = {
		read: await generateKeyPair(dir, 'read'),
		mutate: await generateKeyPair(dir, 'mutate'),
		stale: await generateKeyPair(dir, 'stale'),
		oldScript: await generateKeyPair(dir, 'old-script')
	};
	const pub = (k: { publicKeyPath: string }) => readFileSync(k.publicKeyPath, 'utf8').trim();
	pve = await startProxmoxDouble({
		delayMs: 1,
		seed: [
			{ vmid: 100, hostname: 'caddy', status: 'running' },
			{ vmid: 101, hostname: 'db', status: 'stopped' }
		],
		vms: [{ vmid: 200, name: 'win11', status: 'stopped' }],
		authorizedKeys: [
			`${forced('read')} ${pub(keys.read)}`,
			`${forced('mutate')} ${pub(keys.mutate)}`,
			`${forced('read', STALE)} ${pub(keys.stale)}`,
			`${forced('mutate', ALLOW, OLD_GATE)} ${pub(keys.oldScript)}`
		].join('\n')
	});
	for (const role of ['read', 'mutate', 'stale', 'oldScript'] as const) {
		const target: SshTarget = {
			name: pve.nodeName,
			address: pve.host,
			port: pve.port,
			username: 'root',
			keyPath: keys[role].privateKeyPath,
			hostKeyFingerprint: pve.hostKeyFingerprint
		};
		clients[role] = await connect(target);
	}
}, 60_000);

afterAll(async () => {
	for (const c of Object.values(clients)) c?.end();
	await pve?.close();
	rmSync(dir, { recursive: true, force: true });
});

const refused = (r: { exitCode: number | null; stderr: string }) => r.exitCode === 126 && /nomos-gate: refused/.test(r.stderr);

/** Sends a command string as is (no quoting): what an attacker holding the key could send. */
function raw(client: Client, command: string): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
	return new Promise((res, rej) =>
		client.exec(command, (err, ch) => {
			if (err) return rej(err);
			let stdout = '';
			let stderr = '';
			let exitCode: number | null = null;
			ch.on('data', (d: Buffer) => (stdout += d.toString()));
			ch.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
			ch.on('exit', (c: number | null) => (exitCode = c));
			ch.on('close', () => res({ exitCode, stdout, stderr }));
			ch.end();
		})
	);
}

/** Every argv an action's own builders make for its sample params: steps, read-backs, resume reads. */
function argvsOf(name: string): { argv: string[]; stdin?: string; read: boolean }[] {
	const def = ACTIONS[name as keyof typeof ACTIONS] as ActionDef;
	const out: { argv: string[]; stdin?: string; read: boolean }[] = [];
	for (const raw of SAMPLE_PARAMS[name] ?? []) {
		const p = (ACTION_PARAMS[name as keyof typeof ACTION_PARAMS] as { parse(x: unknown): unknown }).parse(raw);
		const ctx = { vmid: def.scope === 'host' ? undefined : '100', address: '192.0.2.10' };
		const steps: Step[] = [...def.steps(p, ctx), ...(def.readBack?.(p, ctx) ?? [])];
		const r = def.resume?.(p, ctx);
		if (r) steps.push(r.state, { label: 'config', argv: r.config, timeoutMs: 60_000 });
		for (const s of steps)
			out.push({ argv: s.argv, stdin: s.stdin, read: def.classification === 'read_only' || s.verify !== undefined || s.label === 'config' });
	}
	return out;
}

describe('the allowlist', () => {
	it('shipped in deploy/ is the one the catalogue generates', () => {
		const shipped = readFileSync(ALLOW, 'utf8');
		expect(shipped === gateAllowlist().text, 'deploy/nomos-gate.allow is stale: run `npm run gate:allowlist` and commit it').toBe(true);
	});

	it('has sample params for every catalogue action', () => {
		expect(ACTION_NAMES.filter((a) => !SAMPLE_PARAMS[a]?.length)).toEqual([]);
	});
});

describe('nomos-gate lets the catalogue through', () => {
	it('pushes a file over stdin and runs grouped reads (plan and leftovers checks)', async () => {
		const content = "line 1\nit's $(not) `run`\n";
		const push = await execArgv(clients.mutate, ['sh', '-c', PUSH_SCRIPT, 'nomos-push', '100', '/etc/x.conf', '0644'], {
			stdin: content,
			group: true,
			timeoutMs: 20_000
		});
		expect(push.exitCode, push.stderr).toBe(0);
		expect((await pve.guestFile(100, '/etc/x.conf'))?.toString()).toBe(content);
		for (const argv of [
			['pct', 'config', '100'],
			['pct', 'status', '101'],
			['qm', 'status', '200']
		]) {
			const r = await execArgv(clients.read, argv, { group: true, timeoutMs: 20_000 });
			expect(r.exitCode, r.stderr).toBe(0);
			expect(r.group?.pgid).toBeGreaterThan(1);
		}
		const gone = await execArgv(clients.read, ['pct', 'status', '999'], { timeoutMs: 20_000 });
		expect(refused(gone)).toBe(false);
		expect(gone.stderr).toMatch(/does not exist/);
	}, 60_000);

	it('reads the inventory and the cluster through the read key', async () => {
		const inv = await readInventory(clients.read, pve.nodeName, { timeoutMs: 20_000 });
		expect(inv.containers.map((c) => c.vmid).sort()).toEqual((await pve.containers()).map((c) => c.vmid).sort());
		expect(inv.containers.length).toBeGreaterThan(0);
		// a standalone double has no cluster to report: only that the gate let both reads through
		for (const argv of [RESOURCES_ARGV, ['pvecm', 'status']]) expect(refused(await execArgv(clients.read, argv, { timeoutMs: 20_000 }))).toBe(false);
	}, 60_000);

	it('cancels a grouped command: the remote stop passes and the group is gone', async () => {
		await pve.setFault('hang', 'vzdump');
		const ac = new AbortController();
		const run = execArgv(clients.mutate, ['vzdump', '100', '--storage', 'local', '--mode', 'snapshot', '--compress', 'zstd'], {
			group: true,
			signal: ac.signal,
			onGroup: () => setTimeout(() => ac.abort(), 300),
			timeoutMs: 30_000
		});
		const r = await run;
		await pve.setFault('hang', null);
		expect(r.aborted).toBe(true);
		expect(r.stopped).toBe('stopped');
		expect((await pve.hangs()).length).toBeGreaterThan(0);
		for (const h of await pve.hangs()) expect(await processRunning(h.pid)).toBe(false);
	}, 60_000);
	it('runs every action argv with the mutation key, and the reads with the read key', async () => {
		const failures: string[] = [];
		for (const name of ACTION_NAMES) {
			for (const { argv, stdin, read } of argvsOf(name)) {
				for (const role of read ? (['read', 'mutate'] as const) : (['mutate'] as const)) {
					const before = (await pve.argvLog()).length;
					const r = await execArgv(clients[role], argv, { timeoutMs: 20_000, stdin });
					if (refused(r)) failures.push(`${name} (${role}): ${argv.join(' ').slice(0, 120)} → ${r.stderr.trim()}`);
					// the fake tool it names (or the one its script runs) was invoked
					else if (argv[0] !== 'env' && (await pve.argvLog()).length === before)
						failures.push(`${name} (${role}): nothing ran for ${argv.join(' ').slice(0, 80)}`);
				}
			}
		}
		expect(failures).toEqual([]);
	}, 300_000);
});

/**
 * The argv an action's own builder makes from valid params with one value swapped for a hostile
 * one its schema refuses: exactly what the gate's shape saw before the review (issue #47), so a
 * refusal here is the allowlist's doing, not a changed word order.
 */
function hostile(
	name: keyof typeof ACTIONS,
	valid: Record<string, unknown>,
	swap: Record<string, unknown>,
	ctx: { vmid?: string; address?: string } = {}
): string {
	const def = ACTIONS[name] as ActionDef;
	const schema = ACTION_PARAMS[name] as unknown as { parse(x: unknown): Record<string, unknown>; safeParse(x: unknown): { success: boolean } };
	const p = { ...schema.parse(valid), ...swap };
	expect(schema.safeParse(p).success, `${name} with ${JSON.stringify(swap)} must be refused by its schema`).toBe(false);
	return toCommand(def.steps(p, ctx)[0].argv);
}

const CT = { vmid: 150, hostname: 'web', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst' };
const VM = { vmid: 300, name: 'vm1', image: '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2' };

/** vm_http_check's argv as built for a guest's address, that address then swapped for one of the node's own. */
function nodeFetch(own: string, scheme: 'http' | 'https' = 'http'): string {
	const v6 = own.includes(':');
	const argv = ACTIONS.vm_http_check.steps(ACTIONS.vm_http_check.params.parse({ vmid: 200, port: 85, path: '/api2/json/nodes', scheme }), {
		address: v6 ? '2001:db8::5' : '192.0.2.10'
	})[0].argv;
	return toCommand(argv.map((w) => w.replace(v6 ? '2001:db8::5' : '192.0.2.10', own)));
}

/** What a stolen key tried to reach the node itself with, each allowed by the allowlist before this review. */
const escapes: [string, 'read' | 'mutate', () => string][] = [
	["a privileged container (its root is the node's)", 'mutate', () => hostile('pct_create', { ...CT, features: { nesting: true } }, { unprivileged: false })],
	['a container rootfs of size 0 (a directory on the node)', 'mutate', () => hostile('pct_create', CT, { disk: 0 })],
	[
		"import-from a file in a container's subvol (a symlink to a node file)",
		'mutate',
		() => hostile('vm_create', VM, { image: '/rpool/data/subvol-100-disk-0/root/host.raw' })
	],
	['import-from a host block device spelled as an image', 'mutate', () => hostile('vm_create', VM, { image: '/dev/disk/by-id/nvme-host.raw' })],
	[
		"import-from with '..' out of the ISO directory",
		'mutate',
		() => hostile('vm_create', VM, { image: '/var/lib/vz/template/iso/../../images/101/vm-101-disk-0.raw' })
	],
	['a unit that is an option (systemctl -H: another host)', 'read', () => hostile('service_status', { unit: 'ssh.service' }, { unit: '-Hroot@pve2' })],
	['a unit that is an option, on the mutation key', 'mutate', () => hostile('systemctl', { unit: 'ssh.service', op: 'stop' }, { unit: '--all' })],
	['the reserved vzdump snapshot', 'mutate', () => hostile('vm_delsnapshot', { vmid: 200, name: 'before' }, { name: 'vzdump' })],
	["a '..' in a container path", 'mutate', () => toCommand(['sh', '-c', PUSH_SCRIPT, 'nomos-push', '100', '/etc/../x.conf', '0644'])],
	["the node's own pvedaemon over loopback", 'read', () => nodeFetch('127.0.0.1')],
	['the node over 0.0.0.0', 'read', () => nodeFetch('0.0.0.0')],
	['the node over an IPv4-mapped IPv6 loopback', 'read', () => nodeFetch('::ffff:7f00:1', 'https')],
	['a link-local metadata address', 'read', () => nodeFetch('169.254.169.254')],
	// pct_exec and pct_push are allowed shapes; in a container that is not contained they reach the node
	...[
		[102, 'a privileged container'],
		[104, 'a container with a raw lxc.mount.entry'],
		[105, 'a container with a node device'],
		[106, 'a container with a device pending'],
		[107, 'a container whose config cannot be read']
	].flatMap(([id, what]): [string, 'mutate', () => string][] => [
		[`pct_exec in ${what}`, 'mutate', () => toCommand(['pct', 'exec', String(id), '--', 'sh', '-c', 'echo x > /proc/sys/kernel/core_pattern'])],
		[`pct_push into ${what}`, 'mutate', () => toCommand(['sh', '-c', PUSH_SCRIPT, 'nomos-push', String(id), '/etc/cron.d/x', '0644'])]
	])
];

describe('nomos-gate refuses everything else, and nothing runs', () => {
	for (const [what, role, command] of escapes) {
		it(`refuses ${what}`, async () => {
			const before = await pve.argvLog();
			const r = await raw(clients[role], command());
			expect(refused(r), `${r.exitCode} ${r.stderr}`).toBe(true);
			expect(await pve.argvLog()).toEqual(before);
		});
	}

	const attempts: [string, 'read' | 'mutate', string][] = [
		['an off-catalogue command', 'mutate', toCommand(['id'])],
		['an off-catalogue command, unquoted', 'mutate', 'id'],
		['a shell on the read key', 'read', toCommand(['bash', '-c', `touch ${CANARY}`])],
		['a ; after a catalogue command', 'mutate', `${toCommand(['pct', 'status', '100'])}; touch ${CANARY}`],
		['a && after a catalogue command', 'mutate', `${toCommand(['pct', 'status', '100'])} && touch ${CANARY}`],
		['a pipe', 'mutate', `${toCommand(['pct', 'config', '100'])} | tee ${CANARY}`],
		['a redirection', 'mutate', `${toCommand(['pct', 'config', '100'])} > ${CANARY}`],
		['a newline', 'mutate', `${toCommand(['pct', 'status', '100'])}\ntouch ${CANARY}`],
		['$() outside quotes', 'mutate', `'pct' 'status' $(touch ${CANARY})`],
		['backticks outside quotes', 'mutate', `'pct' 'status' \`touch ${CANARY}\``],
		['$() inside a vmid', 'mutate', toCommand(['pct', 'status', `$(touch ${CANARY})`])],
		['a newline inside a vmid', 'mutate', toCommand(['pct', 'status', '100\n'])],
		['an extra argument', 'mutate', toCommand(['pct', 'status', '100', '--verbose', '--extra'])],
		['reordered arguments', 'mutate', toCommand(['pct', '100', 'status'])],
		['an option where a vmid goes', 'mutate', toCommand(['pct', 'destroy', '--purge', '100'])],
		['a mutation on the read key', 'read', toCommand(['pct', 'stop', '100'])],
		['a grouped mutation on the read key', 'read', toCommand(groupedArgv(['pct', 'stop', '100'], 'abcdef0123456789'))],
		['an off-catalogue command in the group wrapper', 'mutate', toCommand(groupedArgv(['touch', CANARY], 'abcdef0123456789'))],
		[
			'a changed group script',
			'mutate',
			toCommand(['setsid', '-w', 'sh', '-c', `touch ${CANARY}; exec "$@"`, 'nomos', 'abcdef0123456789', 'pct', 'status', '100'])
		],
		['a changed stop script', 'mutate', toCommand(['sh', '-c', `touch ${CANARY}`, 'nomos-stop', '2', 'abcdef0123456789'])],
		['a changed push script', 'mutate', toCommand(['sh', '-c', `touch ${CANARY}`, 'nomos-push', '100', '/etc/x', '0644'])],
		['an unclosed quote', 'mutate', `'pct' 'status '100`],
		['an empty command', 'mutate', '']
	];

	for (const [what, role, command] of attempts) {
		it(`refuses ${what}`, async () => {
			const before = await pve.argvLog();
			const r = await raw(clients[role], command);
			expect(refused(r), `${r.exitCode} ${r.stderr}`).toBe(true);
			expect(await pve.argvLog()).toEqual(before);
			expect(existsSync(CANARY)).toBe(false);
		});
	}

	it("lets the read key's fixed commands into a container that is not contained", async () => {
		const r = await execArgv(clients.read, ['pct', 'exec', '102', '--', 'systemctl', 'is-active', 'nginx.service'], { timeoutMs: 20_000 });
		expect(refused(r), r.stderr).toBe(false);
	});

	it('names why a container is not contained', async () => {
		const r = await raw(clients.mutate, toCommand(['pct', 'exec', '105', '--', 'id']));
		expect(r.stderr).toBe('nomos-gate: refused: CT 105 has a device of the node (dev0): pct exec and push in it would reach the node\n');
	});

	it('lets pct_exec into an unprivileged container with a bind mount (uid-mapped: what the container has already)', async () => {
		const r = await raw(clients.mutate, toCommand(['pct', 'exec', '103', '--', 'id']));
		expect(refused(r), r.stderr).toBe(false);
	});

	it('refuses with the stop argv of a real group on the read key only for a wrong tag', async () => {
		const r = await execArgv(clients.read, stopGroupArgv({ pgid: 999_999, tag: 'abcdef0123456789' }), { timeoutMs: 20_000 });
		expect(refused(r)).toBe(false);
		expect(r.exitCode).toBe(0);
	});
});

describe('the gate version', () => {
	it('is answered to both keys, and a gated key refuses the probe', async () => {
		for (const role of ['read', 'mutate'] as const) {
			const a = await readGate(clients[role]);
			expect(a).toEqual({ state: 'gated', version: catalogueVersion(), role, revision: GATE_REVISION });
			expect(gateProblem('strong', a, catalogueVersion(), role)).toBeNull();
		}
	});

	it('names a gate whose catalogue is older than this Nomos', async () => {
		const a = await readGate(clients.stale);
		expect(gateProblem('strong', a, catalogueVersion(), 'read')).toBe(
			`nomos-gate on strong has catalogue 0000000000000000, Nomos needs ${catalogueVersion()}: copy deploy/nomos-gate.allow of this Nomos to /usr/local/etc/nomos-gate.allow on strong`
		);
	});

	it('names a gate script older than the one this Nomos ships, though its allowlist is new', async () => {
		expect(readFileSync(GATE, 'utf8')).toContain(`my $REVISION = ${GATE_REVISION};`);
		const a = await readGate(clients.oldScript);
		expect(a).toEqual({ state: 'gated', version: catalogueVersion(), role: 'mutate', revision: 1 });
		expect(gateProblem('strong', a, catalogueVersion(), 'mutate')).toBe(
			`nomos-gate on strong is revision 1, Nomos needs ${GATE_REVISION}: copy deploy/nomos-gate of this Nomos to /usr/local/sbin/nomos-gate on strong`
		);
	});

	it('tells a key that still reaches a full shell', async () => {
		const target: SshTarget = {
			name: 'strong',
			address: pve.host,
			port: pve.port,
			username: 'root',
			keyPath: pve.clientKeyPath,
			hostKeyFingerprint: pve.hostKeyFingerprint
		};
		const c = await connect(target);
		try {
			const a = await readGate(c);
			expect(a).toEqual({ state: 'shell' });
			expect(gateProblem('strong', a, catalogueVersion(), 'mutate')).toMatch(/reaches a full shell/);
		} finally {
			c.end();
		}
	});
});
