import { z } from 'zod';
import type { Classification } from '../db/schema';
import { createHash } from 'node:crypto';
import { urlHost } from './guest-agent';
// Each action's params live with the schemas the browser shares (its edit form checks with them).
import { ACTION_PARAMS, type ParamsAction } from '../../schemas/action-params';
import { HEALTH_READS } from './health-reads';

/** Where an action runs: on the host itself, or in/on one container of that host. */
export type Scope = 'host' | 'ct' | 'host-or-ct';

/**
 * One command of an execution: a label and its argv (quoted later, in one place). `stdin` is
 * written to the command's standard input over the SSH channel (never onto a command line).
 * `verify` makes it a read-back: it succeeds only when some line of its output starts with the
 * word `expect` — for tools whose exit code does not tell (pveam download, pct push).
 */
export type Step = { label: string; argv: string[]; timeoutMs: number; stdin?: string; verify?: Verify };
export type Verify = {
	expect: string;
	failure: string;
	/** match `<field>: <expect>` lines instead of a line's first word */
	field?: string;
	/** the output is JSON (`pvesh … --output-format json`): the array item whose `id` is `json.id` (or the object itself), its `json.key` */
	json?: { id?: string; key: string };
	/** the output is a `pct|qm listsnapshot` tree: some entry is `` `-> <expect> `` */
	snapshot?: true;
	/**
	 * `<key>: <value>` lines of a config (`pct config`, `qm config`): each key's value holds the
	 * given item among its comma-separated parts (`rootfs: local-lvm:vm-101-disk-0,size=16G` holds
	 * `size=16G`); null: the config has no such line (`lock` after an unlock). `expect` names it.
	 */
	fields?: Record<string, string | null>;
	/** The guest must be gone: the host's own "does not exist" (exit ≠ 0) verifies it, an exit 0 is still failing. */
	gone?: true;
	/** Judged by its output whatever its exit status (`systemctl is-active` exits 3 when inactive). */
	anyExit?: true;
};

/**
 * How an action is finished when the process running it stopped part-way (executions/resume.ts):
 * only for an action whose effect can be read back and that is safe to run again when that
 * effect is missing. `state` reads it (exit 0 and `verify` matched: in place; exit 0 otherwise:
 * missing; no answer or another exit: unknown, and then it is not resumed); `config` is read
 * first, and a `lock:` there (a task of the host's own half done) also leaves it unresumed. The
 * same read, after the command ran again, verifies it.
 */
export type Resume = { state: Step & { verify: Verify }; config: string[] };

/** What must hold right before running, re-read on the host (staleness check). */
export type Precondition =
	| { kind: 'ct-absent'; vmid: string }
	| { kind: 'ct-status'; vmid: string; status: 'running' | 'stopped' }
	| { kind: 'ct-exists'; vmid: string }
	/** `pct config` shows `disk` smaller than `size` (an absolute `<n>G`; `+<n>G` always grows). */
	| { kind: 'ct-disk-grows'; vmid: string; disk: string; size: string }
	| { kind: 'vm-exists'; vmid: string }
	| { kind: 'vm-status'; vmid: string; status: 'running' | 'stopped' }
	/**
	 * The VM's guest agent reports an address to reach it on (guest-agent.ts readAgentAddress): the
	 * runner hands it to the steps as `ctx.address` (vm_http_check); no agent, a silent one or no
	 * usable address refuses the run.
	 */
	| { kind: 'vm-agent-address'; vmid: string }
	/** No guest (VM or CT) has this id: the id space is shared. */
	| { kind: 'vm-absent'; vmid: string }
	/** `qm config` shows `disk` smaller than `size`, as ct-disk-grows. */
	| { kind: 'vm-disk-grows'; vmid: string; disk: string; size: string }
	/**
	 * The migration pre-check (proxmox/migrate.ts): the target node is another member, online and
	 * quorate, has the memory for a running guest and every storage the guest's disks are on; a
	 * running VM goes online, and online with local disks only with `withLocalDisks`.
	 */
	| { kind: 'migrate-target'; guest: 'ct' | 'vm'; vmid: string; node: string; online?: boolean; withLocalDisks?: boolean };

/**
 * What the steps are built from besides the params: the resolved container (ct-scoped actions),
 * and what a reading precondition found on the host right before the run (`vm-agent-address`).
 */
export type StepContext = { vmid?: string; address?: string };

export interface ActionDef<P extends z.ZodType = z.ZodType> {
	classification: Classification;
	description: string;
	scope: Scope;
	params: P;
	/** The fixed command template; `vmid` is the resolved container for ct-scoped actions. */
	steps(p: z.output<P>, ctx: StepContext): Step[];
	preconditions?(p: z.output<P>, ctx: StepContext): Precondition[];
	/** Refresh the inventory afterwards. */
	changesInventory?: boolean;
	/** Loses nothing but cannot be undone (a grown disk never shrinks): approved like a destructive action. */
	irreversible?: true;
	/** A one-line result for a success (default: the last lines of output). */
	summary?(p: z.output<P>, ctx: StepContext): string;
	/** Repeatable: a live worker finishes it after its process stopped (see `Resume`). */
	resume?(p: z.output<P>, ctx: StepContext): Resume;
	/**
	 * A mutation's independent read-back after its command exited 0 (executions/verdict.ts): reads
	 * with a `verify`, judged verified, still failing or inconclusive. Used when no `verify` step of
	 * its own and no health check (executions/safeguards.ts) covers it; none (or none for these
	 * params): only the exit status is known, and the verdict is inconclusive.
	 */
	readBack?(p: z.output<P>, ctx: StepContext): Step[];
	/**
	 * A read's result for the model from its steps' full stdout (in order): a few lines instead of
	 * raw output. Throws when the output does not parse: the read then fails (unknown, with why).
	 */
	digest?(p: z.output<P>, stdout: string[]): string;
}

const MIN = 60_000;
const def = <P extends z.ZodType>(d: ActionDef<P>) => d;

// The read-backs (readBack): one read of the host each, judged by its `verify`.
const statusIs = (guest: 'CT' | 'VM', vmid: string, status: 'running' | 'stopped'): Step => ({
	label: `verify: ${guest} ${vmid} ${status}`,
	argv: [guest === 'CT' ? 'pct' : 'qm', 'status', vmid],
	timeoutMs: MIN,
	verify: { field: 'status', expect: status, failure: `${guest} ${vmid} is not ${status}` }
});
const configHas = (guest: 'CT' | 'VM', vmid: string, fields: Record<string, string | null>, what: string): Step[] =>
	Object.keys(fields).length
		? [
				{
					label: `verify: ${what}`,
					argv: [guest === 'CT' ? 'pct' : 'qm', 'config', vmid],
					timeoutMs: MIN,
					verify: { fields, expect: what, failure: `${guest} ${vmid}'s config does not show ${what}` }
				}
			]
		: [];
const isGone = (guest: 'CT' | 'VM', vmid: string): Step => ({
	label: `verify: ${guest} ${vmid} gone`,
	argv: [guest === 'CT' ? 'pct' : 'qm', 'status', vmid],
	timeoutMs: MIN,
	verify: { gone: true, expect: 'does not exist', failure: `${guest} ${vmid} still exists` }
});
/** The settings a `pct set` / `qm set` asked for, as its config shows them (the description is stored encoded: not compared). */
const settings = (p: Record<string, unknown>, keys: string[]): Record<string, string> =>
	Object.fromEntries(keys.filter((k) => p[k] !== undefined).map((k) => [k, typeof p[k] === 'boolean' ? (p[k] ? '1' : '0') : String(p[k])]));
const shown = (f: Record<string, string | null>) =>
	Object.entries(f)
		.map(([k, v]) => (v === null ? `no ${k}` : `${k} ${v}`))
		.join(', ');
/** An absolute size is read back in the disk's line; a relative one (`+2G`) cannot be told from the config alone. */
const sizeIs = (guest: 'CT' | 'VM', vmid: string, disk: string, size: string): Step[] =>
	size.startsWith('+') ? [] : configHas(guest, vmid, { [disk]: `size=${size}` }, `${disk} size=${size}`);
const unitIs = (vmid: string | undefined, op: string, unit: string): Step[] => {
	const [check, expect] = ['start', 'restart', 'reload'].includes(op)
		? ['is-active', 'active']
		: op === 'stop'
			? ['is-active', 'inactive']
			: op === 'enable'
				? ['is-enabled', 'enabled']
				: ['is-enabled', 'disabled'];
	const where = vmid ? ` in CT ${vmid}` : '';
	return [
		{
			label: `verify: ${unit} ${expect}${where}`,
			argv: inCt(vmid, ['systemctl', check, unit]),
			timeoutMs: MIN,
			verify: { expect, anyExit: true, failure: `${unit} is not ${expect}${where}` }
		}
	];
};
const inCt = (v: string | undefined, argv: string[]) => (v ? ['pct', 'exec', v, '--', ...argv] : argv);
const running = (vmid: string): Precondition[] => [{ kind: 'ct-status', vmid, status: 'running' }];
const exists = (vmid: string): Precondition[] => [{ kind: 'ct-exists', vmid }];
export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/**
 * pct_push's fixed script: the content arrives on stdin into a private temp file that `pct push`
 * copies into the CT; the vmid, path and mode are positional arguments, never spliced into it.
 */
export const PUSH_SCRIPT = `set -e; t=$(mktemp /tmp/nomos-push.XXXXXXXX); trap 'rm -f "$t"' EXIT; cat > "$t"; pct push "$1" "$t" "$2" --perms "$3"`;
const vmExists = (vmid: string): Precondition[] => [{ kind: 'vm-exists', vmid }];
const vmRunning = (vmid: string): Precondition[] => [{ kind: 'vm-status', vmid, status: 'running' }];

/** A resume that reads a guest's status (`pct|qm status`): in place when it is `status`. */
const resumeToStatus = (guest: 'CT' | 'VM', vmid: string, status: 'running' | 'stopped'): Resume => {
	const tool = guest === 'CT' ? 'pct' : 'qm';
	return {
		state: {
			label: `read back: ${tool} status ${vmid}`,
			argv: [tool, 'status', vmid],
			timeoutMs: MIN,
			verify: { field: 'status', expect: status, failure: `${guest} ${vmid} is not ${status}` }
		},
		config: [tool, 'config', vmid]
	};
};
/** A resume of a snapshot: in place when `pct|qm listsnapshot` lists it (taken again only when it is not). */
const resumeToSnapshot = (guest: 'CT' | 'VM', vmid: string, name: string): Resume => {
	const tool = guest === 'CT' ? 'pct' : 'qm';
	return {
		state: {
			label: `read back: ${tool} listsnapshot ${vmid}`,
			argv: [tool, 'listsnapshot', vmid],
			timeoutMs: MIN,
			verify: { snapshot: true, expect: name, failure: `${guest} ${vmid} has no snapshot ${name}` }
		},
		config: [tool, 'config', vmid]
	};
};

/**
 * vm_create's ssh keys: stdin goes to a private temp file, then the qm argv (the positional
 * arguments, never spliced into this script) runs with `--sshkeys <that file>` appended.
 */
export const SSHKEYS_SCRIPT = `set -e; t=$(mktemp /tmp/nomos-keys.XXXXXXXX); trap 'rm -f "$t"' EXIT; cat > "$t"; "$@" --sshkeys "$t"`;

/**
 * How long a VM's health after a start waits for it to come up: the agent's ping (the script
 * below) and then, with `healthHttp`, its address and its service (the runner's HTTP wait).
 */
export const AGENT_WAIT = { tries: 24, intervalS: 5 } as const;

/**
 * A VM's health after a start: its guest agent answers `ping` (a VM configured without an agent
 * passes on running alone). An agent needs some seconds after boot, so this asks up to
 * AGENT_WAIT.tries times, AGENT_WAIT.intervalS apart. The vmid is a positional argument.
 */
export const AGENT_WAIT_SCRIPT = `qm config "$1" | grep -Eq '^agent: (1|enabled=1)' || { echo 'no guest agent configured'; exit 0; }; for i in $(seq 1 ${AGENT_WAIT.tries}); do qm guest cmd "$1" ping && { echo 'guest agent answers'; exit 0; }; sleep ${AGENT_WAIT.intervalS}; done; echo 'the guest agent did not answer in ${(AGENT_WAIT.tries * AGENT_WAIT.intervalS) / 60} minutes' >&2; exit 1`;

/** Stands for the guest agent's address in a step shown before the run (vm_http_check). */
export const AGENT_ADDRESS = '<agent-address>';

/** The read-back after a migration: the cluster lists the guest on the target node. */
const onNode = (type: 'lxc' | 'qemu', vmid: string, node: string): Step => ({
	label: `verify: ${type}/${vmid} on ${node}`,
	argv: ['pvesh', 'get', '/cluster/resources', '--type', 'vm', '--output-format', 'json'],
	timeoutMs: MIN,
	verify: {
		json: { id: `${type}/${vmid}`, key: 'node' },
		expect: node,
		failure: `the migration reported success but the cluster does not list ${type}/${vmid} on ${node}`
	}
});

/** The node-health reads (health-reads.ts), typed as every action is. */
const healthReads: { [K in keyof typeof HEALTH_READS]: ActionDef<(typeof ACTION_PARAMS)[K]> } = HEALTH_READS;

/** Actions that exist only in a cluster: left out of the agent's catalogue when no host is a cluster member. */
export const CLUSTER_ACTIONS: readonly string[] = ['pct_migrate', 'qm_migrate'];

/**
 * The catalogue of executions the agent may request. Each action has its own zod params, a
 * fixed argv template and a classification; nothing else can run.
 */
export const ACTIONS = {
	pct_status: def({
		classification: 'read_only',
		description: 'status of one container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_status,
		steps: (_p, { vmid }) => [{ label: 'pct status', argv: ['pct', 'status', vmid!], timeoutMs: MIN }]
	}),
	pct_config: def({
		classification: 'read_only',
		description: 'configuration of one container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_config,
		steps: (_p, { vmid }) => [{ label: 'pct config', argv: ['pct', 'config', vmid!], timeoutMs: MIN }]
	}),
	service_status: def({
		classification: 'read_only',
		description: 'systemctl status of a unit on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.service_status,
		steps: (p, { vmid }) => [{ label: `status ${p.unit}`, argv: inCt(vmid, ['systemctl', 'status', '--no-pager', p.unit]), timeoutMs: MIN }]
	}),
	restart: def({
		classification: 'config_mutation',
		description: 'reboot a running container',
		scope: 'ct',
		params: ACTION_PARAMS.restart,
		steps: (_p, { vmid }) => [{ label: 'pct reboot', argv: ['pct', 'reboot', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }],
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'running')]
	}),
	systemctl: def({
		classification: 'config_mutation',
		description: 'start/stop/restart/reload/enable/disable a systemd unit on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.systemctl,
		steps: (p, { vmid }) => [{ label: `systemctl ${p.op} ${p.unit}`, argv: inCt(vmid, ['systemctl', p.op, p.unit]), timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : []),
		readBack: (p, { vmid }) => unitIs(vmid, p.op, p.unit)
	}),
	pct_exec: def({
		classification: 'config_mutation',
		description: 'run one command (an argv array, no shell) inside a running container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_exec,
		steps: (p, { vmid }) => [{ label: `exec ${p.argv[0]}`, argv: ['pct', 'exec', vmid!, '--', ...p.argv], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }]
	}),
	apt_upgrade: def({
		classification: 'config_mutation',
		description: 'apt-get update and dist-upgrade on the host or inside a container',
		scope: 'host-or-ct',
		params: ACTION_PARAMS.apt_upgrade,
		steps: (_p, { vmid }) => [
			{ label: 'apt-get update', argv: inCt(vmid, ['apt-get', 'update']), timeoutMs: 10 * MIN },
			{
				label: 'apt-get dist-upgrade',
				argv: inCt(vmid, ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', '-y', '-o', 'Dpkg::Options::=--force-confold', 'dist-upgrade']),
				timeoutMs: 30 * MIN
			}
		],
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : [])
	}),
	pct_create: def({
		classification: 'config_mutation',
		description: 'create a new LXC container on the target host',
		scope: 'host',
		params: ACTION_PARAMS.pct_create,
		steps: (p) => {
			const features = Object.entries(p.features)
				.filter(([, on]) => on !== undefined)
				.map(([k, on]) => `${k}=${on ? 1 : 0}`)
				.join(',');
			const net = `name=eth0,bridge=${p.bridge},ip=${p.ip}${p.gateway ? `,gw=${p.gateway}` : ''}`;
			const argv = [
				'pct',
				'create',
				String(p.vmid),
				p.template,
				'--hostname',
				p.hostname,
				'--cores',
				String(p.cores),
				'--memory',
				String(p.memory),
				'--swap',
				String(p.swap),
				'--rootfs',
				`${p.storage}:${p.disk}`,
				'--net0',
				net,
				'--unprivileged',
				p.unprivileged ? '1' : '0',
				...(features ? ['--features', features] : []),
				'--start',
				p.start ? '1' : '0'
			];
			return [{ label: `pct create ${p.vmid} (${p.hostname})`, argv, timeoutMs: 20 * MIN }];
		},
		preconditions: (p) => [{ kind: 'ct-absent', vmid: String(p.vmid) }],
		changesInventory: true,
		summary: (p) => `CT ${p.vmid} (${p.hostname}) created${p.start ? ' and started' : ''}`,
		readBack: (p) => [statusIs('CT', String(p.vmid), p.start ? 'running' : 'stopped')]
	}),
	pct_start: def({
		classification: 'config_mutation',
		description: 'start a stopped container',
		scope: 'ct',
		params: ACTION_PARAMS.pct_start,
		steps: (_p, { vmid }) => [{ label: 'pct start', argv: ['pct', 'start', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'stopped' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} started`,
		resume: (_p, { vmid }) => resumeToStatus('CT', vmid!, 'running'),
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'running')]
	}),
	pct_unlock: def({
		classification: 'config_mutation',
		description: "remove a container's lock (e.g. 'create' left by an interrupted pct create) so it can be destroyed or started",
		scope: 'ct',
		params: ACTION_PARAMS.pct_unlock,
		steps: (_p, { vmid }) => [{ label: 'pct unlock', argv: ['pct', 'unlock', vmid!], timeoutMs: 1 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} unlocked`,
		readBack: (_p, { vmid }) => configHas('CT', vmid!, { lock: null }, 'no lock')
	}),
	pveam_update: def({
		classification: 'config_mutation',
		description: "refresh the host's list of downloadable container templates (pveam update)",
		scope: 'host',
		params: ACTION_PARAMS.pveam_update,
		steps: () => [{ label: 'pveam update', argv: ['pveam', 'update'], timeoutMs: 5 * MIN }],
		summary: () => 'template list updated'
	}),
	pveam_download: def({
		classification: 'config_mutation',
		description: 'download a container template to a storage (pveam download), verified in pveam list afterwards',
		scope: 'host',
		params: ACTION_PARAMS.pveam_download,
		steps: (p) => [
			{ label: `pveam download ${p.template}`, argv: ['pveam', 'download', p.storage, p.template], timeoutMs: 30 * MIN },
			{
				label: `verify: ${p.storage}:vztmpl/${p.template} in pveam list`,
				argv: ['pveam', 'list', p.storage],
				timeoutMs: MIN,
				verify: {
					expect: `${p.storage}:vztmpl/${p.template}`,
					failure: `pveam download reported success but ${p.storage}:vztmpl/${p.template} is not in pveam list ${p.storage}`
				}
			}
		],
		summary: (p) => `template ${p.storage}:vztmpl/${p.template} downloaded (use it as pct_create's template)`
	}),
	pct_set: def({
		classification: 'config_mutation',
		description: "change a container's cores, memory (MiB), swap (MiB), onboot or description",
		scope: 'ct',
		params: ACTION_PARAMS.pct_set,
		steps: (p, { vmid }) => {
			const opts = [
				...(p.cores !== undefined ? ['--cores', String(p.cores)] : []),
				...(p.memory !== undefined ? ['--memory', String(p.memory)] : []),
				...(p.swap !== undefined ? ['--swap', String(p.swap)] : []),
				...(p.onboot !== undefined ? ['--onboot', p.onboot ? '1' : '0'] : []),
				...(p.description !== undefined ? ['--description', p.description] : [])
			];
			return [{ label: 'pct set', argv: ['pct', 'set', vmid!, ...opts], timeoutMs: MIN }];
		},
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (p, { vmid }) =>
			`CT ${vmid} set: ${(['cores', 'memory', 'swap', 'onboot'] as const)
				.filter((k) => p[k] !== undefined)
				.map((k) => `${k}=${String(p[k])}`)
				.concat(p.description !== undefined ? ['description'] : [])
				.join(', ')}`,
		readBack: (p, { vmid }) => {
			const f = settings(p, ['cores', 'memory', 'swap', 'onboot']);
			return configHas('CT', vmid!, f, shown(f));
		}
	}),
	pct_resize: def({
		classification: 'config_mutation',
		description: "grow a container disk (rootfs or mpN): size '+2G' grows by 2 GiB, '16G' is the new total; shrinking is refused",
		scope: 'ct',
		irreversible: true,
		params: ACTION_PARAMS.pct_resize,
		steps: (p, { vmid }) => [{ label: `pct resize ${p.disk} ${p.size}`, argv: ['pct', 'resize', vmid!, p.disk, p.size], timeoutMs: 10 * MIN }],
		preconditions: (p, { vmid }) => [{ kind: 'ct-disk-grows', vmid: vmid!, disk: p.disk, size: p.size }],
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} ${p.disk} ${p.size.startsWith('+') ? `grown by ${p.size.slice(1)}` : `grown to ${p.size}`}`,
		readBack: (p, { vmid }) => sizeIs('CT', vmid!, p.disk, p.size)
	}),
	pct_snapshot: def({
		classification: 'config_mutation',
		description: 'take a snapshot of a container (its storage must support snapshots, e.g. lvmthin or zfs)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_snapshot,
		steps: (p, { vmid }) => [
			{
				label: `pct snapshot ${p.name}`,
				argv: ['pct', 'snapshot', vmid!, p.name, ...(p.description !== undefined ? ['--description', p.description] : [])],
				timeoutMs: 10 * MIN
			}
		],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} taken`,
		resume: (p, { vmid }) => resumeToSnapshot('CT', vmid!, p.name)
	}),
	pct_rollback: def({
		classification: 'destructive',
		description: 'roll a container back to a snapshot (everything since is lost; a running CT is stopped first)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_rollback,
		steps: (p, { vmid }) => [
			{ label: `pct rollback ${p.name}`, argv: ['pct', 'rollback', vmid!, p.name, ...(p.start ? ['--start', '1'] : [])], timeoutMs: 10 * MIN }
		],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} rolled back to ${p.name}${p.start ? ' and started' : ''}`,
		readBack: (p, { vmid }) => (p.start ? [statusIs('CT', vmid!, 'running')] : [])
	}),
	pct_delsnapshot: def({
		classification: 'destructive',
		description: "delete one of a container's snapshots",
		scope: 'ct',
		params: ACTION_PARAMS.pct_delsnapshot,
		steps: (p, { vmid }) => [{ label: `pct delsnapshot ${p.name}`, argv: ['pct', 'delsnapshot', vmid!, p.name], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} deleted`
	}),
	vzdump: def({
		classification: 'config_mutation',
		description: 'back up one container to a storage with backup content (e.g. local); mode snapshot, suspend or stop',
		scope: 'ct',
		params: ACTION_PARAMS.vzdump,
		steps: (p, { vmid }) => [
			{ label: `vzdump to ${p.storage}`, argv: ['vzdump', vmid!, '--storage', p.storage, '--mode', p.mode, '--compress', p.compress], timeoutMs: 120 * MIN }
		],
		preconditions: (_p, { vmid }) => exists(vmid!)
	}),
	pct_push: def({
		classification: 'config_mutation',
		description: `write a text file into a running container (content verbatim, at most 32 KiB; mode default 0644), verified by its sha256 afterwards`,
		scope: 'ct',
		params: ACTION_PARAMS.pct_push,
		steps: (p, { vmid }) => [
			{ label: `pct push ${p.path}`, argv: ['sh', '-c', PUSH_SCRIPT, 'nomos-push', vmid!, p.path, p.mode], stdin: p.content, timeoutMs: 2 * MIN },
			{
				label: `verify: sha256 of ${p.path}`,
				argv: ['pct', 'exec', vmid!, '--', 'sha256sum', p.path],
				timeoutMs: MIN,
				verify: {
					expect: sha256(p.content),
					failure: `pct push reported success but ${p.path} in CT ${vmid} does not have the content's sha256 (${sha256(p.content).slice(0, 12)}…)`
				}
			}
		],
		preconditions: (_p, { vmid }) => running(vmid!),
		summary: (p, { vmid }) => `wrote ${Buffer.byteLength(p.content, 'utf8')} bytes to ${p.path} in CT ${vmid} (sha256 verified)`
	}),
	ct_http_check: def({
		classification: 'read_only',
		description: 'HTTP GET from inside a running container to one of its local ports (curl -fsS http://127.0.0.1:<port><path>); fails on an HTTP error',
		scope: 'ct',
		params: ACTION_PARAMS.ct_http_check,
		steps: (p, { vmid }) => [
			{
				label: `GET :${p.port}${p.path}`,
				argv: ['pct', 'exec', vmid!, '--', 'curl', '-fsS', '--max-time', String(p.timeoutS), `http://127.0.0.1:${p.port}${p.path}`],
				timeoutMs: (p.timeoutS + 30) * 1000
			}
		],
		preconditions: (_p, { vmid }) => running(vmid!)
	}),
	ct_service_active: def({
		classification: 'read_only',
		description: 'whether a systemd unit inside a running container is active (systemctl is-active); fails when it is not',
		scope: 'ct',
		params: ACTION_PARAMS.ct_service_active,
		steps: (p, { vmid }) => [{ label: `is-active ${p.unit}`, argv: ['pct', 'exec', vmid!, '--', 'systemctl', 'is-active', p.unit], timeoutMs: MIN }],
		preconditions: (_p, { vmid }) => running(vmid!)
	}),
	qm_status: def({
		classification: 'read_only',
		description: 'status of one VM (qm status; target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_status,
		steps: (p) => [{ label: 'qm status', argv: ['qm', 'status', p.vmid, '--verbose'], timeoutMs: MIN }]
	}),
	qm_start: def({
		classification: 'config_mutation',
		description: 'start a stopped VM (target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_start,
		steps: (p) => [{ label: 'qm start', argv: ['qm', 'start', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} started`,
		resume: (p) => resumeToStatus('VM', p.vmid, 'running'),
		readBack: (p) => [statusIs('VM', p.vmid, 'running')]
	}),
	qm_stop: def({
		classification: 'config_mutation',
		description: 'stop a running VM, hard (target the host, vmid in params)',
		scope: 'host',
		params: ACTION_PARAMS.qm_stop,
		steps: (p) => [{ label: 'qm stop', argv: ['qm', 'stop', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'running' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} stopped`,
		resume: (p) => resumeToStatus('VM', p.vmid, 'stopped'),
		readBack: (p) => [statusIs('VM', p.vmid, 'stopped')]
	}),
	vm_create: def({
		classification: 'config_mutation',
		description: 'create a VM from a cloud image (imported as scsi0) with cloud-init (user, ssh keys, ip), serial console and guest agent',
		scope: 'host',
		params: ACTION_PARAMS.vm_create,
		steps: (p) => {
			const id = String(p.vmid);
			const create = [
				'qm',
				'create',
				id,
				'--name',
				p.name,
				'--memory',
				String(p.memory),
				'--cores',
				String(p.cores),
				'--net0',
				`virtio,bridge=${p.bridge}`,
				'--scsihw',
				'virtio-scsi-pci',
				'--scsi0',
				`${p.storage}:0,import-from=${p.image}`,
				'--ide2',
				`${p.storage}:cloudinit`,
				'--boot',
				'order=scsi0',
				'--serial0',
				'socket',
				'--vga',
				'serial0',
				'--agent',
				'enabled=1',
				...(p.ciuser !== undefined ? ['--ciuser', p.ciuser] : []),
				'--ipconfig0',
				p.ip === 'dhcp' ? 'ip=dhcp' : `ip=${p.ip}${p.gateway ? `,gw=${p.gateway}` : ''}`
			];
			const label = `qm create ${id} (${p.name})`;
			return [
				p.sshKeys !== undefined
					? { label, argv: ['sh', '-c', SSHKEYS_SCRIPT, 'nomos-keys', ...create], stdin: p.sshKeys.trim() + '\n', timeoutMs: 30 * MIN }
					: { label, argv: create, timeoutMs: 30 * MIN },
				...(p.start ? [{ label: `qm start ${id}`, argv: ['qm', 'start', id], timeoutMs: 5 * MIN }] : [])
			];
		},
		preconditions: (p) => [{ kind: 'vm-absent', vmid: String(p.vmid) }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} (${p.name}) created from ${p.image}${p.start ? ' and started' : ''}`,
		readBack: (p) => [statusIs('VM', String(p.vmid), p.start ? 'running' : 'stopped')]
	}),
	vm_clone: def({
		classification: 'config_mutation',
		description: 'clone a VM or template to a new VM (full copy by default; full=false is a linked clone of a template)',
		scope: 'host',
		params: ACTION_PARAMS.vm_clone,
		steps: (p) => [
			{
				label: `qm clone ${p.vmid} → ${p.newid} (${p.name})`,
				argv: ['qm', 'clone', p.vmid, String(p.newid), '--name', p.name, '--full', p.full ? '1' : '0'],
				timeoutMs: 60 * MIN
			}
		],
		preconditions: (p) => [...vmExists(p.vmid), { kind: 'vm-absent', vmid: String(p.newid) }],
		changesInventory: true,
		summary: (p) => `VM ${p.newid} (${p.name}) cloned from ${p.vmid}${p.full ? '' : ' (linked)'}`,
		readBack: (p) => [statusIs('VM', String(p.newid), 'stopped')]
	}),
	vm_template: def({
		classification: 'config_mutation',
		description: 'turn a stopped VM into a template (it can then only be cloned, never started again)',
		scope: 'host',
		irreversible: true,
		params: ACTION_PARAMS.vm_template,
		steps: (p) => [{ label: 'qm template', argv: ['qm', 'template', p.vmid], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} is now a template`,
		readBack: (p) => configHas('VM', p.vmid, { template: '1' }, 'template 1')
	}),
	vm_set: def({
		classification: 'config_mutation',
		description: "change a VM's cores, memory, balloon (MiB, 0 = off), onboot, tags or description",
		scope: 'host',
		params: ACTION_PARAMS.vm_set,
		steps: (p) => {
			const opts = [
				...(p.cores !== undefined ? ['--cores', String(p.cores)] : []),
				...(p.memory !== undefined ? ['--memory', String(p.memory)] : []),
				...(p.balloon !== undefined ? ['--balloon', String(p.balloon)] : []),
				...(p.onboot !== undefined ? ['--onboot', p.onboot ? '1' : '0'] : []),
				...(p.tags !== undefined ? ['--tags', p.tags.join(';')] : []),
				...(p.description !== undefined ? ['--description', p.description] : [])
			];
			return [{ label: 'qm set', argv: ['qm', 'set', p.vmid, ...opts], timeoutMs: MIN }];
		},
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) =>
			`VM ${p.vmid} set: ${(['cores', 'memory', 'balloon', 'onboot'] as const)
				.filter((k) => p[k] !== undefined)
				.map((k) => `${k}=${String(p[k])}`)
				.concat(p.tags !== undefined ? [`tags=${p.tags.join(';')}`] : [], p.description !== undefined ? ['description'] : [])
				.join(', ')}`,
		readBack: (p) => {
			const f = settings(p, ['cores', 'memory', 'balloon', 'onboot']);
			return configHas('VM', p.vmid, f, shown(f));
		}
	}),
	vm_resize: def({
		classification: 'config_mutation',
		description: "grow a VM disk: size '+8G' grows by 8 GiB, '40G' is the new total; shrinking is refused",
		scope: 'host',
		irreversible: true,
		params: ACTION_PARAMS.vm_resize,
		steps: (p) => [{ label: `qm resize ${p.disk} ${p.size}`, argv: ['qm', 'resize', p.vmid, p.disk, p.size], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-disk-grows', vmid: p.vmid, disk: p.disk, size: p.size }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} ${p.disk} ${p.size.startsWith('+') ? `grown by ${p.size.slice(1)}` : `grown to ${p.size}`}`,
		readBack: (p) => sizeIs('VM', p.vmid, p.disk, p.size)
	}),
	vm_snapshot: def({
		classification: 'config_mutation',
		description: 'take a snapshot of a VM (disks only, no RAM state)',
		scope: 'host',
		params: ACTION_PARAMS.vm_snapshot,
		steps: (p) => [
			{
				label: `qm snapshot ${p.name}`,
				argv: ['qm', 'snapshot', p.vmid, p.name, ...(p.description !== undefined ? ['--description', p.description] : [])],
				timeoutMs: 10 * MIN
			}
		],
		preconditions: (p) => vmExists(p.vmid),
		summary: (p) => `snapshot ${p.name} of VM ${p.vmid} taken`,
		resume: (p) => resumeToSnapshot('VM', p.vmid, p.name)
	}),
	vm_rollback: def({
		classification: 'destructive',
		description: 'roll a VM back to a snapshot (everything since is lost; a running VM is stopped)',
		scope: 'host',
		params: ACTION_PARAMS.vm_rollback,
		steps: (p) => [{ label: `qm rollback ${p.name}`, argv: ['qm', 'rollback', p.vmid, p.name, ...(p.start ? ['--start', '1'] : [])], timeoutMs: 10 * MIN }],
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} rolled back to ${p.name}${p.start ? ' and started' : ''}`,
		readBack: (p) => (p.start ? [statusIs('VM', p.vmid, 'running')] : [])
	}),
	vm_delsnapshot: def({
		classification: 'destructive',
		description: "delete one of a VM's snapshots",
		scope: 'host',
		params: ACTION_PARAMS.vm_delsnapshot,
		steps: (p) => [{ label: `qm delsnapshot ${p.name}`, argv: ['qm', 'delsnapshot', p.vmid, p.name], timeoutMs: 10 * MIN }],
		preconditions: (p) => vmExists(p.vmid),
		summary: (p) => `snapshot ${p.name} of VM ${p.vmid} deleted`
	}),
	vm_shutdown: def({
		classification: 'config_mutation',
		description: 'clean shutdown of a running VM (ACPI); fails after timeoutS if the guest does not power off (then ask about qm_stop)',
		scope: 'host',
		params: ACTION_PARAMS.vm_shutdown,
		steps: (p) => [{ label: 'qm shutdown', argv: ['qm', 'shutdown', p.vmid, '--timeout', String(p.timeoutS)], timeoutMs: (p.timeoutS + 60) * 1000 }],
		preconditions: (p) => vmRunning(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} shut down`,
		readBack: (p) => [statusIs('VM', p.vmid, 'stopped')]
	}),
	vm_reboot: def({
		classification: 'config_mutation',
		description: 'clean reboot of a running VM (shutdown, then start)',
		scope: 'host',
		params: ACTION_PARAMS.vm_reboot,
		steps: (p) => [{ label: 'qm reboot', argv: ['qm', 'reboot', p.vmid, '--timeout', String(p.timeoutS)], timeoutMs: (p.timeoutS + 120) * 1000 }],
		preconditions: (p) => vmRunning(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} rebooted`,
		readBack: (p) => [statusIs('VM', p.vmid, 'running')]
	}),
	vm_destroy: def({
		classification: 'destructive',
		description: 'destroy a stopped VM and its disks, and remove it from backup/replication/HA jobs',
		scope: 'host',
		params: ACTION_PARAMS.vm_destroy,
		steps: (p) => [{ label: 'qm destroy', argv: ['qm', 'destroy', p.vmid, '--purge'], timeoutMs: 10 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} destroyed`,
		readBack: (p) => [isGone('VM', p.vmid)]
	}),
	vm_unlock: def({
		classification: 'config_mutation',
		description: "remove a VM's lock (e.g. left by an interrupted backup, clone or snapshot)",
		scope: 'host',
		params: ACTION_PARAMS.vm_unlock,
		steps: (p) => [{ label: 'qm unlock', argv: ['qm', 'unlock', p.vmid], timeoutMs: MIN }],
		preconditions: (p) => vmExists(p.vmid),
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} unlocked`,
		readBack: (p) => configHas('VM', p.vmid, { lock: null }, 'no lock')
	}),
	vm_config: def({
		classification: 'read_only',
		description: 'configuration of one VM (qm config)',
		scope: 'host',
		params: ACTION_PARAMS.vm_config,
		steps: (p) => [{ label: 'qm config', argv: ['qm', 'config', p.vmid], timeoutMs: MIN }]
	}),
	vm_guest: def({
		classification: 'read_only',
		description: "ask a running VM's guest agent: ping (does it answer) or network-get-interfaces (its IPs)",
		scope: 'host',
		params: ACTION_PARAMS.vm_guest,
		steps: (p) => [{ label: `guest ${p.cmd}`, argv: ['qm', 'guest', 'cmd', p.vmid, p.cmd], timeoutMs: MIN }],
		preconditions: (p) => vmRunning(p.vmid)
	}),
	vm_http_check: def({
		classification: 'read_only',
		description: 'HTTP GET from the host to a running VM at the address its guest agent reports (curl -fsS http://<ip>:<port><path>); fails on an HTTP error',
		scope: 'host',
		params: ACTION_PARAMS.vm_http_check,
		steps: (p, { address }) => {
			// Before the run (a preview, a plan's card) the address is not known yet; the runner builds the steps again with it.
			const url = `${p.scheme}://${address === undefined ? AGENT_ADDRESS : urlHost(address)}:${p.port}${p.path}`;
			return [
				{
					label: `GET ${url}`,
					argv: ['curl', '-fsS', '--noproxy', '*', '--max-time', String(p.timeoutS), ...(p.scheme === 'https' ? ['--insecure'] : []), url],
					timeoutMs: (p.timeoutS + 30) * 1000
				}
			];
		},
		preconditions: (p) => [...vmRunning(p.vmid), { kind: 'vm-agent-address', vmid: p.vmid }]
	}),
	pct_migrate: def({
		classification: 'config_mutation',
		description: 'move a container to another cluster node (a running one in restart mode: shut down, moved, started there)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_migrate,
		steps: (p, { vmid }) => [
			{
				label: `pct migrate → ${p.node}`,
				argv: ['pct', 'migrate', vmid!, p.node, '--restart', '1', '--timeout', String(p.timeoutS)],
				timeoutMs: (p.timeoutS + 60) * 1000 + 60 * MIN
			},
			onNode('lxc', vmid!, p.node)
		],
		preconditions: (p, { vmid }) => [{ kind: 'migrate-target', guest: 'ct', vmid: vmid!, node: p.node }],
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} migrated to ${p.node}`
	}),
	qm_migrate: def({
		classification: 'config_mutation',
		description: 'move a VM to another cluster node: online (live) for a running VM; local disks are copied only with withLocalDisks',
		scope: 'host',
		params: ACTION_PARAMS.qm_migrate,
		steps: (p) => [
			{
				label: `qm migrate → ${p.node}`,
				argv: ['qm', 'migrate', p.vmid, p.node, ...(p.online ? ['--online', '1'] : []), ...(p.withLocalDisks ? ['--with-local-disks', '1'] : [])],
				timeoutMs: 120 * MIN
			},
			onNode('qemu', p.vmid, p.node)
		],
		preconditions: (p) => [{ kind: 'migrate-target', guest: 'vm', vmid: p.vmid, node: p.node, online: p.online, withLocalDisks: p.withLocalDisks }],
		changesInventory: true,
		summary: (p) => `VM ${p.vmid} migrated to ${p.node}${p.online ? ' (online)' : ''}`
	}),
	pct_stop: def({
		classification: 'config_mutation',
		description: 'stop a running container (hard stop)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_stop,
		steps: (_p, { vmid }) => [{ label: 'pct stop', argv: ['pct', 'stop', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} stopped`,
		resume: (_p, { vmid }) => resumeToStatus('CT', vmid!, 'stopped'),
		readBack: (_p, { vmid }) => [statusIs('CT', vmid!, 'stopped')]
	}),
	pct_destroy: def({
		classification: 'destructive',
		description: 'destroy a container and its disks (it must be stopped first)',
		scope: 'ct',
		params: ACTION_PARAMS.pct_destroy,
		steps: (_p, { vmid }) => [{ label: 'pct destroy', argv: ['pct', 'destroy', vmid!, '--purge'], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-exists', vmid: vmid! }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} destroyed`,
		readBack: (_p, { vmid }) => [isGone('CT', vmid!)]
	}),
	...healthReads
} satisfies { [K in ParamsAction]: ActionDef<(typeof ACTION_PARAMS)[K]> };

export type ActionName = keyof typeof ACTIONS;
export const ACTION_NAMES = Object.keys(ACTIONS) as ActionName[];

export function isActionName(s: string): s is ActionName {
	return Object.hasOwn(ACTIONS, s);
}

/** Actions a live worker finishes after the process running them stopped (they have a `resume`). */
export const RESUMABLE_ACTIONS: readonly ActionName[] = ACTION_NAMES.filter((a) => (ACTIONS[a] as ActionDef).resume !== undefined);

export function isResumable(action: string): action is ActionName {
	return isActionName(action) && RESUMABLE_ACTIONS.includes(action);
}

/**
 * Whether approving this action needs a person at a browser: destructive actions and irreversible
 * ones. No API token approves them, no rule covers them, typing does not approve them, and a
 * browser session that gave its password too long ago gives it again (step-up). Unknown
 * actions count as needing one.
 */
export function needsPerson(action: string): boolean {
	if (!isActionName(action)) return true;
	const def: ActionDef = ACTIONS[action];
	return def.classification === 'destructive' || def.irreversible === true;
}

/** The params an action accepts, for an error hint. */
export function paramFields(action: ActionName): string {
	const shape = (ACTIONS[action].params as unknown as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
	return shape ? Object.keys(shape).join(', ') || '(none)' : '(none)';
}
