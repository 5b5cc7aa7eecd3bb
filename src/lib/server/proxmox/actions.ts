import { z } from 'zod';
import type { Classification } from '../db/schema';
import { argvWord, bridge, gateway, hostname, ipConfig, storage, template, unit, vmid } from './params';

/** Where an action runs: on the host itself, or in/on one container of that host. */
export type Scope = 'host' | 'ct' | 'host-or-ct';

/** One command of an execution: a label and its argv (quoted later, in one place). */
export type Step = { label: string; argv: string[]; timeoutMs: number };

/** What must hold right before running, re-read on the host (staleness check). */
export type Precondition =
	| { kind: 'ct-absent'; vmid: string }
	| { kind: 'ct-status'; vmid: string; status: 'running' | 'stopped' }
	| { kind: 'ct-exists'; vmid: string };

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
	/** A one-line result for a success (default: the last lines of output). */
	summary?(p: z.output<P>, ctx: { vmid?: string }): string;
}

const MIN = 60_000;
const ctParams = z.object({ vmid: vmid.optional() }).strict();
const def = <P extends z.ZodType>(d: ActionDef<P>) => d;
const inCt = (v: string | undefined, argv: string[]) => (v ? ['pct', 'exec', v, '--', ...argv] : argv);

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
		preconditions: (_p, { vmid }) => [{ kind: 'ct-exists', vmid: vmid! }],
		changesInventory: true,
		summary: (_p, { vmid }) => `CT ${vmid} unlocked`
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

/** A one-line catalogue for tool descriptions and error hints. */
export function catalogueSummary(): string {
	return ACTION_NAMES.map((n) => `${n} (${ACTIONS[n].classification}): ${ACTIONS[n].description}`).join('; ');
}

/** The params an action accepts, for an error hint. */
export function paramFields(action: ActionName): string {
	const shape = (ACTIONS[action].params as unknown as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
	return shape ? Object.keys(shape).join(', ') || '(none)' : '(none)';
}
