// The VM actions' argv templates, checked against the Proxmox VE 8 `qm` man page (qm(1)), and
// the zod params that keep model text out of them: unknown keys, shrinking, bad images and keys.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ACTIONS, AGENT_WAIT_SCRIPT, SSHKEYS_SCRIPT, needsPerson, type ActionName } from '../../src/lib/server/proxmox/actions';
import { actionSignature } from '../../src/lib/server/proxmox/tool-schema';
import { toCommand } from '../../src/lib/server/ssh/quote';
import { guestOf, healthSteps, pruneSteps, rollbackRequest, snapshotStep, vmDiskStorage, wantsSnapshot } from '../../src/lib/server/executions/safeguards';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr6cNHM0ZrnRRVpdVoQmBEqxDj0cGgCq6GNkcRVZrXo alice@laptop';

function argvOf(action: ActionName, params: Record<string, unknown>): string[][] {
	const def = ACTIONS[action];
	const p = def.params.parse(params);
	return def.steps(p as never, {}).map((s) => s.argv);
}
const refusal = (action: ActionName, params: Record<string, unknown>) => {
	const r = ACTIONS[action].params.safeParse(params);
	return r.success ? null : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
};

describe('VM argv templates (qm(1), PVE 8)', () => {
	it('vm_create imports the cloud image as scsi0 with a cloud-init drive, serial console and agent, then starts', () => {
		expect(argvOf('vm_create', { vmid: 150, name: 'k3s-1', image: '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2', ciuser: 'debian' })).toEqual([
			[
				'qm',
				'create',
				'150',
				'--name',
				'k3s-1',
				'--memory',
				'2048',
				'--cores',
				'2',
				'--net0',
				'virtio,bridge=vmbr0',
				'--scsihw',
				'virtio-scsi-pci',
				'--scsi0',
				'local-lvm:0,import-from=/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2',
				'--ide2',
				'local-lvm:cloudinit',
				'--boot',
				'order=scsi0',
				'--serial0',
				'socket',
				'--vga',
				'serial0',
				'--agent',
				'enabled=1',
				'--ciuser',
				'debian',
				'--ipconfig0',
				'ip=dhcp'
			],
			['qm', 'start', '150']
		]);
		const [create] = argvOf('vm_create', {
			vmid: 151,
			name: 'db',
			image: 'local:import/debian-12-genericcloud-amd64.qcow2',
			ip: '192.168.1.51/24',
			gateway: '192.168.1.1',
			start: false
		});
		expect(create.slice(-2)).toEqual(['--ipconfig0', 'ip=192.168.1.51/24,gw=192.168.1.1']);
		expect(argvOf('vm_create', { vmid: 151, name: 'db', image: 'local:import/debian-12-genericcloud-amd64.qcow2', start: false })).toHaveLength(1);
	});

	it('vm_create passes ssh keys on stdin to a temp file, never on the command line', () => {
		const def = ACTIONS.vm_create;
		const [step] = def.steps(
			def.params.parse({ vmid: 150, name: 'k3s-1', image: '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2', sshKeys: KEY }),
			{}
		);
		expect(step.argv.slice(0, 5)).toEqual(['sh', '-c', SSHKEYS_SCRIPT, 'nomos-keys', 'qm']);
		expect(step.argv.join(' ')).not.toContain('AAAAC3');
		expect(step.stdin).toBe(`${KEY}\n`);
		// The script appends --sshkeys <file> to exactly the qm argv it was given.
		const seen = execFileSync(
			'sh',
			['-c', SSHKEYS_SCRIPT.replace('"$@" --sshkeys "$t"', 'printf "%s|" "$@" --sshkeys; cat "$t"'), 'nomos-keys', 'qm', 'create', '150', "--name=a'b"],
			{ input: KEY }
		).toString();
		expect(seen).toBe(`qm|create|150|--name=a'b|--sshkeys|${KEY}`);
	});

	it('clone, template, set, resize, snapshots, shutdown, reboot, destroy, unlock, config, guest', () => {
		expect(argvOf('vm_clone', { vmid: 9000, newid: 152, name: 'web-2' })).toEqual([['qm', 'clone', '9000', '152', '--name', 'web-2', '--full', '1']]);
		expect(argvOf('vm_clone', { vmid: 9000, newid: 152, name: 'web-2', full: false })[0].slice(-2)).toEqual(['--full', '0']);
		expect(argvOf('vm_template', { vmid: 9000 })).toEqual([['qm', 'template', '9000']]);
		expect(argvOf('vm_set', { vmid: 150, cores: 4, memory: 4096, balloon: 1024, onboot: true, tags: ['k3s', 'prod'], description: "it's -x" })).toEqual([
			['qm', 'set', '150', '--cores', '4', '--memory', '4096', '--balloon', '1024', '--onboot', '1', '--tags', 'k3s;prod', '--description', "it's -x"]
		]);
		expect(argvOf('vm_resize', { vmid: 150, size: '+8G' })).toEqual([['qm', 'resize', '150', 'scsi0', '+8G']]);
		expect(argvOf('vm_snapshot', { vmid: 150, name: 'before-upgrade' })).toEqual([['qm', 'snapshot', '150', 'before-upgrade']]);
		expect(argvOf('vm_rollback', { vmid: 150, name: 'before-upgrade', start: true })).toEqual([['qm', 'rollback', '150', 'before-upgrade', '--start', '1']]);
		expect(argvOf('vm_delsnapshot', { vmid: 150, name: 'before-upgrade' })).toEqual([['qm', 'delsnapshot', '150', 'before-upgrade']]);
		expect(argvOf('vm_shutdown', { vmid: 150 })).toEqual([['qm', 'shutdown', '150', '--timeout', '180']]);
		expect(argvOf('vm_reboot', { vmid: 150, timeoutS: 60 })).toEqual([['qm', 'reboot', '150', '--timeout', '60']]);
		expect(argvOf('vm_destroy', { vmid: 150 })).toEqual([['qm', 'destroy', '150', '--purge']]);
		expect(argvOf('vm_unlock', { vmid: 150 })).toEqual([['qm', 'unlock', '150']]);
		expect(argvOf('vm_config', { vmid: 150 })).toEqual([['qm', 'config', '150']]);
		expect(argvOf('vm_guest', { vmid: 150 })).toEqual([['qm', 'guest', 'cmd', '150', 'ping']]);
		expect(argvOf('vm_guest', { vmid: 150, cmd: 'network-get-interfaces' })).toEqual([['qm', 'guest', 'cmd', '150', 'network-get-interfaces']]);
		expect(argvOf('qm_status', { vmid: 150 })).toEqual([['qm', 'status', '150', '--verbose']]);
	});

	it('quotes a description with quotes and shell words as one argument', () => {
		const [argv] = argvOf('vm_set', { vmid: 150, description: "x'; rm -rf / #" });
		expect(toCommand(argv)).toBe(`'qm' 'set' '150' '--description' 'x'\\''; rm -rf / #'`);
	});

	it('classifies: destroy, rollback and delsnapshot are destructive; template and resize irreversible; both need a person', () => {
		expect(['vm_destroy', 'vm_rollback', 'vm_delsnapshot'].map((a) => ACTIONS[a as ActionName].classification)).toEqual([
			'destructive',
			'destructive',
			'destructive'
		]);
		expect(ACTIONS.vm_template.irreversible && ACTIONS.vm_resize.irreversible).toBe(true);
		for (const a of ['vm_destroy', 'vm_rollback', 'vm_template', 'vm_resize']) expect(needsPerson(a)).toBe(true);
		for (const a of ['vm_create', 'vm_set', 'vm_shutdown', 'vm_snapshot']) expect(needsPerson(a)).toBe(false);
		expect([ACTIONS.vm_config.classification, ACTIONS.vm_guest.classification]).toEqual(['read_only', 'read_only']);
	});

	it('preconditions: a create needs a free id, a resize must grow, destroy needs a stopped VM', () => {
		const pre = <A extends ActionName>(a: A, params: Record<string, unknown>) => ACTIONS[a].preconditions!(ACTIONS[a].params.parse(params) as never, {});
		expect(pre('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img' })).toEqual([{ kind: 'vm-absent', vmid: '150' }]);
		expect(pre('vm_clone', { vmid: 9000, newid: 152, name: 'a' })).toEqual([
			{ kind: 'vm-exists', vmid: '9000' },
			{ kind: 'vm-absent', vmid: '152' }
		]);
		expect(pre('vm_resize', { vmid: 150, size: '40G' })).toEqual([{ kind: 'vm-disk-grows', vmid: '150', disk: 'scsi0', size: '40G' }]);
		expect(pre('vm_destroy', { vmid: 150 })).toEqual([{ kind: 'vm-status', vmid: '150', status: 'stopped' }]);
		expect(pre('vm_shutdown', { vmid: 150 })).toEqual([{ kind: 'vm-status', vmid: '150', status: 'running' }]);
	});
});

describe('VM params refuse', () => {
	it('unknown keys (only cores, memory, balloon, onboot, tags, description are settable)', () => {
		expect(refusal('vm_set', { vmid: 150, args: '-no-reboot' })).toMatch(/args/);
		expect(refusal('vm_set', { vmid: 150, hookscript: 'local:snippets/x.sh' })).toMatch(/hookscript/);
		expect(refusal('vm_set', { vmid: 150 })).toMatch(/set at least one of cores, memory, balloon, onboot, tags, description/);
		expect(refusal('vm_set', { vmid: 150, memory: 1024, balloon: 2048 })).toMatch(/balloon cannot exceed memory/);
		expect(refusal('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img', cicustom: 'user=local:snippets/u.yaml' })).toMatch(/cicustom/);
	});

	it('shrinking or odd sizes', () => {
		for (const size of ['-2G', '0G', '2T', '2', '+2G;reboot']) expect(refusal('vm_resize', { vmid: 150, size })).toBeTruthy();
		expect(refusal('vm_resize', { vmid: 150, disk: 'efidisk0', size: '+1G' })).toMatch(/disk/);
	});

	it('images outside the pattern, keys that are not keys, a gateway with dhcp, bad tags and names', () => {
		for (const image of [
			'/var/lib/vz/../../etc/shadow.img',
			'relative/a.img',
			'/x/a.img,discard=on',
			'/x/a.iso',
			'local:images/a.qcow2',
			'/x/a b.img',
			"/x/a'.img",
			// a node path qm would read as root (docs/security.md): not a storage's ISO or import directory
			'/x/a.img',
			'/rpool/data/subvol-100-disk-0/x.raw',
			'/var/lib/vz/images/101/vm-101-disk-0.qcow2',
			'/var/lib/vz/template/iso/sub/a.img',
			'/var/lib/vz/template/iso/.hidden.img'
		]) {
			expect(refusal('vm_create', { vmid: 150, name: 'a', image }), image).toBeTruthy();
		}
		expect(refusal('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img', sshKeys: 'hello' })).toMatch(/OpenSSH public keys/);
		expect(refusal('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img', sshKeys: `${KEY}\n$(reboot)` })).toMatch(
			/OpenSSH public keys/
		);
		expect(refusal('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img', gateway: '192.168.1.1' })).toMatch(
			/gateway goes with a static ip/
		);
		expect(refusal('vm_create', { vmid: 150, name: 'A_b', image: '/var/lib/vz/template/iso/a.img' })).toMatch(/name/);
		expect(refusal('vm_create', { vmid: 150, name: 'a', image: '/var/lib/vz/template/iso/a.img', ciuser: 'root;id' })).toMatch(/ciuser/);
		expect(refusal('vm_set', { vmid: 150, tags: ['Prod'] })).toMatch(/tags/);
		expect(refusal('vm_guest', { vmid: 150, cmd: 'exec' })).toMatch(/cmd/);
		expect(refusal('vm_clone', { vmid: 9000, newid: 99, name: 'a' })).toMatch(/newid/);
	});
});

describe('snapshot before and health after, for VMs', () => {
	it('a VM mutation on a host target snapshots params.vmid with qm; creates and snapshot actions do not', () => {
		const g = guestOf('vm_set', undefined, { vmid: '150' });
		expect(g).toEqual({ kind: 'vm', vmid: '150' });
		expect(wantsSnapshot('vm_set', 'config_mutation', g)).toBe(true);
		expect(wantsSnapshot('vm_create', 'config_mutation', guestOf('vm_create', undefined, { vmid: '150' }))).toBe(false);
		expect(wantsSnapshot('vm_destroy', 'destructive', g)).toBe(false);
		expect(wantsSnapshot('vm_config', 'read_only', g)).toBe(false);
		expect(guestOf('pct_set', '101', {})).toEqual({ kind: 'ct', vmid: '101' });
		expect(guestOf('apt_upgrade', undefined, {})).toBeUndefined();
		const step = snapshotStep('0123456789abcdef', 'vm_set', g!);
		expect(step.argv).toEqual(['qm', 'snapshot', '150', 'nomos-0123456789ab', '--description', 'taken by Nomos before vm_set (execution 0123456789abcdef)']);
		expect(pruneSteps(['nomos-1', 'nomos-2', 'nomos-3'], 2, g!).map((s) => s.argv)).toEqual([['qm', 'delsnapshot', '150', 'nomos-1']]);
		expect(rollbackRequest(g!, 'nomos-1')).toEqual({ action: 'vm_rollback', params: { vmid: '150', name: 'nomos-1' } });
	});

	it("reads the boot disk's storage from qm config, skipping the cloud-init drive", () => {
		expect(vmDiskStorage('boot: order=scsi0\nide2: local-lvm:vm-150-cloudinit,media=cdrom\nscsi0: local-lvm:vm-150-disk-0,size=2G\n')).toBe('local-lvm');
		expect(vmDiskStorage('ide2: local:iso/debian.iso,media=cdrom\nvirtio0: tank:vm-150-disk-0,size=32G\n')).toBe('tank');
		expect(vmDiskStorage('memory: 2048\n')).toBeNull();
	});

	it('after a VM start: running, then the agent answers (the wait script gets the vmid as an argument)', () => {
		const steps = healthSteps('vm_create', { vmid: '150', start: true }, undefined);
		expect(steps.map((s) => s.argv)).toEqual([
			['qm', 'status', '150', '--verbose'],
			['sh', '-c', AGENT_WAIT_SCRIPT, 'nomos-agent', '150']
		]);
		expect(healthSteps('vm_create', { vmid: '150', start: false }, undefined)).toEqual([]);
		expect(healthSteps('qm_start', { vmid: '200' }, undefined)).toHaveLength(2);
		expect(healthSteps('vm_set', { vmid: '200', cores: 2 }, undefined)).toEqual([]);
	});
});

describe('the agent sees them', () => {
	it('one-line signatures', () => {
		expect(actionSignature('vm_create')).toBe(
			'vm_create(name, image, vmid?, storage?=local-lvm, cores?=2, memory?=2048 MiB, bridge?=vmbr0, ciuser?, sshKeys?, ip?=dhcp, gateway?, start?=true, healthHttp?: {port, path})'
		);
		expect(actionSignature('vm_guest')).toBe('vm_guest(vmid, cmd?: ping|network-get-interfaces)');
		expect(actionSignature('vm_http_check')).toBe('vm_http_check(vmid, port, path?=/, timeoutS?=5, scheme?: http|https)');
		expect(actionSignature('qm_start')).toBe('qm_start(vmid, healthHttp?: {port, path})');
		// A long enum with a default shows the default only; describe_action lists the values.
		expect(actionSignature('vzdump')).toBe('vzdump(storage?=local, mode?=snapshot, compress?=zstd, prune?)');
	});
});
