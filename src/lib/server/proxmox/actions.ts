import { z } from 'zod';
import type { Classification } from '../db/schema';
import { createHash } from 'node:crypto';
import {
	argvWord, bridge, ctDisk, ctPath, description, fileMode, gateway, growSize, hostname, ipConfig, pushContent, snapshotName, storage,
	template, templateName, unit, urlPath, vmid
} from './params';

/** Where an action runs: on the host itself, or in/on one container of that host. */
export type Scope = 'host' | 'ct' | 'host-or-ct';

/**
 * One command of an execution: a label and its argv (quoted later, in one place). `stdin` is
 * written to the command's standard input over the SSH channel (never onto a command line).
 * `verify` makes it a read-back: it succeeds only when some line of its output starts with the
 * word `expect` — for tools whose exit code does not tell (pveam download, pct push).
 */
export type Step = { label: string; argv: string[]; timeoutMs: number; stdin?: string; verify?: Verify };
export type Verify = { expect: string; failure: string; /** match `<field>: <expect>` lines instead of a line's first word */ field?: string };

/** What must hold right before running, re-read on the host (staleness check). */
export type Precondition =
	| { kind: 'ct-absent'; vmid: string }
	| { kind: 'ct-status'; vmid: string; status: 'running' | 'stopped' }
	| { kind: 'ct-exists'; vmid: string }
	/** `pct config` shows `disk` smaller than `size` (an absolute `<n>G`; `+<n>G` always grows). */
	| { kind: 'ct-disk-grows'; vmid: string; disk: string; size: string }
	| { kind: 'vm-exists'; vmid: string }
	| { kind: 'vm-status'; vmid: string; status: 'running' | 'stopped' };

export interface ActionDef<P extends z.ZodType = z.ZodType> {
	classification: Classification;
	description: string;
	scope: Scope;
	params: P;
	/** The fixed command template; `vmid` is the resolved container for ct-scoped actions. */
	steps(p: z.output<P>, ctx: { vmid?: string }): Step[];
	preconditions?(p: z.output<P>, ctx: { vmid?: string }): Precondition[];
	/** Refresh the inventory afterwards. */
	changesInventory?: boolean;
	/** Loses nothing but cannot be undone (a grown disk never shrinks): approved like a destructive action. */
	irreversible?: true;
	/** A one-line result for a success (default: the last lines of output). */
	summary?(p: z.output<P>, ctx: { vmid?: string }): string;
}

const MIN = 60_000;
const ctParams = z.object({ vmid: vmid.optional() }).strict();
const def = <P extends z.ZodType>(d: ActionDef<P>) => d;
const inCt = (v: string | undefined, argv: string[]) => (v ? ['pct', 'exec', v, '--', ...argv] : argv);
const running = (vmid: string): Precondition[] => [{ kind: 'ct-status', vmid, status: 'running' }];
const exists = (vmid: string): Precondition[] => [{ kind: 'ct-exists', vmid }];
export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/**
 * pct_push's fixed script: the content arrives on stdin into a private temp file that `pct push`
 * copies into the CT; the vmid, path and mode are positional arguments, never spliced into it.
 */
export const PUSH_SCRIPT = `set -e; t=$(mktemp /tmp/nomos-push.XXXXXXXX); trap 'rm -f "$t"' EXIT; cat > "$t"; pct push "$1" "$t" "$2" --perms "$3"`;
const vmParams = z.object({ vmid }).strict();

/**
 * The catalogue of executions the agent may request. Each action has its own zod params, a
 * fixed argv template and a classification; nothing else can run.
 */
export const ACTIONS = {
	pct_status: def({
		classification: 'read_only',
		description: 'status of one container',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct status', argv: ['pct', 'status', vmid!], timeoutMs: MIN }]
	}),
	pct_config: def({
		classification: 'read_only',
		description: 'configuration of one container',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct config', argv: ['pct', 'config', vmid!], timeoutMs: MIN }]
	}),
	service_status: def({
		classification: 'read_only',
		description: 'systemctl status of a unit on the host or inside a container',
		scope: 'host-or-ct',
		params: z.object({ vmid: vmid.optional(), unit }).strict(),
		steps: (p, { vmid }) => [{ label: `status ${p.unit}`, argv: inCt(vmid, ['systemctl', 'status', '--no-pager', p.unit]), timeoutMs: MIN }]
	}),
	restart: def({
		classification: 'config_mutation',
		description: 'reboot a running container',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct reboot', argv: ['pct', 'reboot', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }]
	}),
	systemctl: def({
		classification: 'config_mutation',
		description: 'start/stop/restart/reload/enable/disable a systemd unit on the host or inside a container',
		scope: 'host-or-ct',
		params: z.object({ vmid: vmid.optional(), unit, op: z.enum(['start', 'stop', 'restart', 'reload', 'enable', 'disable']) }).strict(),
		steps: (p, { vmid }) => [{ label: `systemctl ${p.op} ${p.unit}`, argv: inCt(vmid, ['systemctl', p.op, p.unit]), timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => (vmid ? [{ kind: 'ct-status', vmid, status: 'running' }] : [])
	}),
	pct_exec: def({
		classification: 'config_mutation',
		description: 'run one command (an argv array, no shell) inside a running container',
		scope: 'ct',
		params: z.object({ vmid: vmid.optional(), argv: z.array(argvWord).min(1).max(64) }).strict(),
		steps: (p, { vmid }) => [{ label: `exec ${p.argv[0]}`, argv: ['pct', 'exec', vmid!, '--', ...p.argv], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }]
	}),
	apt_upgrade: def({
		classification: 'config_mutation',
		description: 'apt-get update and dist-upgrade on the host or inside a container',
		scope: 'host-or-ct',
		params: z.object({ vmid: vmid.optional() }).strict(),
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
		params: z
			.object({
				vmid: z.union([vmid, z.literal('auto')]).default('auto'),
				hostname,
				template,
				cores: z.number().int().min(1).max(128).default(1),
				memory: z.number().int().min(16).max(1_048_576).default(512).describe('MiB'),
				swap: z.number().int().min(0).max(1_048_576).default(512).describe('MiB'),
				disk: z.number().int().min(1).max(65_536).default(8).describe('GiB'),
				storage: storage.default('local-lvm'),
				bridge: bridge.default('vmbr0'),
				ip: ipConfig.default('dhcp'),
				gateway: gateway.optional(),
				unprivileged: z.boolean().default(true),
				features: z.object({ nesting: z.boolean().optional(), keyctl: z.boolean().optional(), fuse: z.boolean().optional() }).strict().default({}),
				start: z.boolean().default(true)
			})
			.strict(),
		steps: (p) => {
			const features = Object.entries(p.features)
				.filter(([, on]) => on !== undefined)
				.map(([k, on]) => `${k}=${on ? 1 : 0}`)
				.join(',');
			const net = `name=eth0,bridge=${p.bridge},ip=${p.ip}${p.gateway ? `,gw=${p.gateway}` : ''}`;
			const argv = [
				'pct', 'create', String(p.vmid), p.template,
				'--hostname', p.hostname,
				'--cores', String(p.cores),
				'--memory', String(p.memory),
				'--swap', String(p.swap),
				'--rootfs', `${p.storage}:${p.disk}`,
				'--net0', net,
				'--unprivileged', p.unprivileged ? '1' : '0',
				...(features ? ['--features', features] : []),
				'--start', p.start ? '1' : '0'
			];
			return [{ label: `pct create ${p.vmid} (${p.hostname})`, argv, timeoutMs: 20 * MIN }];
		},
		preconditions: (p) => [{ kind: 'ct-absent', vmid: String(p.vmid) }],
		changesInventory: true,
		summary: (p) => `CT ${p.vmid} (${p.hostname}) created${p.start ? ' and started' : ''}`
	}),
	pct_start: def({
		classification: 'config_mutation',
		description: 'start a stopped container',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct start', argv: ['pct', 'start', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'stopped' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} started`
	}),
	pct_unlock: def({
		classification: 'config_mutation',
		description: "remove a container's lock (e.g. 'create' left by an interrupted pct create) so it can be destroyed or started",
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct unlock', argv: ['pct', 'unlock', vmid!], timeoutMs: 1 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} unlocked`
	}),
	pveam_update: def({
		classification: 'config_mutation',
		description: "refresh the host's list of downloadable container templates (pveam update)",
		scope: 'host',
		params: z.object({}).strict(),
		steps: () => [{ label: 'pveam update', argv: ['pveam', 'update'], timeoutMs: 5 * MIN }],
		summary: () => 'template list updated'
	}),
	pveam_download: def({
		classification: 'config_mutation',
		description: 'download a container template to a storage (pveam download), verified in pveam list afterwards',
		scope: 'host',
		params: z.object({ storage: storage.default('local'), template: templateName }).strict(),
		steps: (p) => [
			{ label: `pveam download ${p.template}`, argv: ['pveam', 'download', p.storage, p.template], timeoutMs: 30 * MIN },
			{
				label: `verify: ${p.storage}:vztmpl/${p.template} in pveam list`,
				argv: ['pveam', 'list', p.storage],
				timeoutMs: MIN,
				verify: { expect: `${p.storage}:vztmpl/${p.template}`, failure: `pveam download reported success but ${p.storage}:vztmpl/${p.template} is not in pveam list ${p.storage}` }
			}
		],
		summary: (p) => `template ${p.storage}:vztmpl/${p.template} downloaded (use it as pct_create's template)`
	}),
	pct_set: def({
		classification: 'config_mutation',
		description: "change a container's cores, memory (MiB), swap (MiB), onboot or description",
		scope: 'ct',
		params: z
			.object({
				vmid: vmid.optional(),
				cores: z.number().int().min(1).max(128).optional(),
				memory: z.number().int().min(16).max(1_048_576).optional().describe('MiB'),
				swap: z.number().int().min(0).max(1_048_576).optional().describe('MiB'),
				onboot: z.boolean().optional(),
				description: description.optional()
			})
			.strict()
			.refine((p) => ['cores', 'memory', 'swap', 'onboot', 'description'].some((k) => (p as Record<string, unknown>)[k] !== undefined), 'set at least one of cores, memory, swap, onboot, description'),
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
			`CT ${vmid} set: ${(['cores', 'memory', 'swap', 'onboot'] as const).filter((k) => p[k] !== undefined).map((k) => `${k}=${String(p[k])}`).concat(p.description !== undefined ? ['description'] : []).join(', ')}`
	}),
	pct_resize: def({
		classification: 'config_mutation',
		description: "grow a container disk (rootfs or mpN): size '+2G' grows by 2 GiB, '16G' is the new total; shrinking is refused",
		scope: 'ct',
		irreversible: true,
		params: z.object({ vmid: vmid.optional(), disk: ctDisk.default('rootfs'), size: growSize }).strict(),
		steps: (p, { vmid }) => [{ label: `pct resize ${p.disk} ${p.size}`, argv: ['pct', 'resize', vmid!, p.disk, p.size], timeoutMs: 10 * MIN }],
		preconditions: (p, { vmid }) => [{ kind: 'ct-disk-grows', vmid: vmid!, disk: p.disk, size: p.size }],
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} ${p.disk} ${p.size.startsWith('+') ? `grown by ${p.size.slice(1)}` : `grown to ${p.size}`}`
	}),
	pct_snapshot: def({
		classification: 'config_mutation',
		description: 'take a snapshot of a container (its storage must support snapshots, e.g. lvmthin or zfs)',
		scope: 'ct',
		params: z.object({ vmid: vmid.optional(), name: snapshotName, description: description.optional() }).strict(),
		steps: (p, { vmid }) => [
			{ label: `pct snapshot ${p.name}`, argv: ['pct', 'snapshot', vmid!, p.name, ...(p.description !== undefined ? ['--description', p.description] : [])], timeoutMs: 10 * MIN }
		],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} taken`
	}),
	pct_rollback: def({
		classification: 'destructive',
		description: 'roll a container back to a snapshot (everything since is lost; a running CT is stopped first)',
		scope: 'ct',
		params: z.object({ vmid: vmid.optional(), name: snapshotName, start: z.boolean().default(false) }).strict(),
		steps: (p, { vmid }) => [{ label: `pct rollback ${p.name}`, argv: ['pct', 'rollback', vmid!, p.name, ...(p.start ? ['--start', '1'] : [])], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		changesInventory: true,
		summary: (p, { vmid }) => `CT ${vmid} rolled back to ${p.name}${p.start ? ' and started' : ''}`
	}),
	pct_delsnapshot: def({
		classification: 'destructive',
		description: "delete one of a container's snapshots",
		scope: 'ct',
		params: z.object({ vmid: vmid.optional(), name: snapshotName }).strict(),
		steps: (p, { vmid }) => [{ label: `pct delsnapshot ${p.name}`, argv: ['pct', 'delsnapshot', vmid!, p.name], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => exists(vmid!),
		summary: (p, { vmid }) => `snapshot ${p.name} of CT ${vmid} deleted`
	}),
	vzdump: def({
		classification: 'config_mutation',
		description: 'back up one container to a storage with backup content (e.g. local); mode snapshot, suspend or stop',
		scope: 'ct',
		params: z
			.object({
				vmid: vmid.optional(),
				storage: storage.default('local'),
				mode: z.enum(['snapshot', 'suspend', 'stop']).default('snapshot'),
				compress: z.enum(['zstd', 'gzip', 'lzo', '0']).default('zstd')
			})
			.strict(),
		steps: (p, { vmid }) => [
			{ label: `vzdump to ${p.storage}`, argv: ['vzdump', vmid!, '--storage', p.storage, '--mode', p.mode, '--compress', p.compress], timeoutMs: 120 * MIN }
		],
		preconditions: (_p, { vmid }) => exists(vmid!)
	}),
	pct_push: def({
		classification: 'config_mutation',
		description: `write a text file into a running container (content verbatim, at most 32 KiB; mode default 0644), verified by its sha256 afterwards`,
		scope: 'ct',
		params: z.object({ vmid: vmid.optional(), path: ctPath, content: pushContent, mode: fileMode.default('0644') }).strict(),
		steps: (p, { vmid }) => [
			{ label: `pct push ${p.path}`, argv: ['sh', '-c', PUSH_SCRIPT, 'nomos-push', vmid!, p.path, p.mode], stdin: p.content, timeoutMs: 2 * MIN },
			{
				label: `verify: sha256 of ${p.path}`,
				argv: ['pct', 'exec', vmid!, '--', 'sha256sum', p.path],
				timeoutMs: MIN,
				verify: { expect: sha256(p.content), failure: `pct push reported success but ${p.path} in CT ${vmid} does not have the content's sha256 (${sha256(p.content).slice(0, 12)}…)` }
			}
		],
		preconditions: (_p, { vmid }) => running(vmid!),
		summary: (p, { vmid }) => `wrote ${Buffer.byteLength(p.content, 'utf8')} bytes to ${p.path} in CT ${vmid} (sha256 verified)`
	}),
	ct_http_check: def({
		classification: 'read_only',
		description: 'HTTP GET from inside a running container to one of its local ports (curl -fsS http://127.0.0.1:<port><path>); fails on an HTTP error',
		scope: 'ct',
		params: z
			.object({ vmid: vmid.optional(), port: z.number().int().min(1).max(65_535), path: urlPath.default('/'), timeoutS: z.number().int().min(1).max(60).default(5) })
			.strict(),
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
		params: z.object({ vmid: vmid.optional(), unit }).strict(),
		steps: (p, { vmid }) => [{ label: `is-active ${p.unit}`, argv: ['pct', 'exec', vmid!, '--', 'systemctl', 'is-active', p.unit], timeoutMs: MIN }],
		preconditions: (_p, { vmid }) => running(vmid!)
	}),
	qm_status: def({
		classification: 'read_only',
		description: 'status of one VM (qm status; target the host, vmid in params)',
		scope: 'host',
		params: vmParams,
		steps: (p) => [{ label: 'qm status', argv: ['qm', 'status', p.vmid, '--verbose'], timeoutMs: MIN }]
	}),
	qm_start: def({
		classification: 'config_mutation',
		description: 'start a stopped VM (target the host, vmid in params)',
		scope: 'host',
		params: vmParams,
		steps: (p) => [{ label: 'qm start', argv: ['qm', 'start', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'stopped' }],
		summary: (p) => `VM ${p.vmid} started`
	}),
	qm_stop: def({
		classification: 'config_mutation',
		description: 'stop a running VM, hard (target the host, vmid in params)',
		scope: 'host',
		params: vmParams,
		steps: (p) => [{ label: 'qm stop', argv: ['qm', 'stop', p.vmid], timeoutMs: 5 * MIN }],
		preconditions: (p) => [{ kind: 'vm-status', vmid: p.vmid, status: 'running' }],
		summary: (p) => `VM ${p.vmid} stopped`
	}),
	pct_stop: def({
		classification: 'config_mutation',
		description: 'stop a running container (hard stop)',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct stop', argv: ['pct', 'stop', vmid!], timeoutMs: 5 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-status', vmid: vmid!, status: 'running' }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} stopped`
	}),
	pct_destroy: def({
		classification: 'destructive',
		description: 'destroy a container and its disks (it must be stopped first)',
		scope: 'ct',
		params: ctParams,
		steps: (_p, { vmid }) => [{ label: 'pct destroy', argv: ['pct', 'destroy', vmid!, '--purge'], timeoutMs: 10 * MIN }],
		preconditions: (_p, { vmid }) => [{ kind: 'ct-exists', vmid: vmid! }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} destroyed`
	})
} satisfies Record<string, ActionDef>;

export type ActionName = keyof typeof ACTIONS;
export const ACTION_NAMES = Object.keys(ACTIONS) as ActionName[];

export function isActionName(s: string): s is ActionName {
	return Object.hasOwn(ACTIONS, s);
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

/** A one-line catalogue for tool descriptions and error hints. */
export function catalogueSummary(): string {
	return ACTION_NAMES.map((n) => `${n} (${ACTIONS[n].classification}): ${ACTIONS[n].description}`).join('; ');
}

/** The params an action accepts, for an error hint. */
export function paramFields(action: ActionName): string {
	const shape = (ACTIONS[action].params as unknown as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
	return shape ? Object.keys(shape).join(', ') || '(none)' : '(none)';
}
