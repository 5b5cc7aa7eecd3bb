// The params of every catalogue action, as zod schemas the server and the browser share: the
// server parses a request or an edit with them (proxmox/actions.ts pairs each with its argv
// template), the Edit-before-approve form checks the operator's values with the very same
// schema while they type. Browser-safe: zod and the field schemas only, nothing from node.
import { z } from 'zod';
import {
	argvWord,
	bridge,
	ciUser,
	ctDisk,
	ctPath,
	description,
	fileMode,
	gateway,
	growSize,
	hostname,
	ipConfig,
	pushContent,
	snapshotName,
	sshKeys,
	storage,
	template,
	templateName,
	unit,
	urlPath,
	vmDisk,
	vmid,
	vmImage,
	vmTag,
	nodeName
} from './param-fields';
import { HEALTH_PARAMS } from './health-params';
import { NODE_OPS_PARAMS } from './node-ops-params';
import { BACKUP_PARAMS, retention } from './backup-params';

const ctParams = z.object({ vmid: vmid.optional() }).strict();
const vmParams = z.object({ vmid }).strict();
const VM_SET_KEYS = ['cores', 'memory', 'balloon', 'onboot', 'tags', 'description'] as const;
const newVmid = z.union([vmid, z.literal('auto')]).default('auto');
const port = z.number().int().min(1).max(65_535);
const httpTimeoutS = z.number().int().min(1).max(60).default(5);
/** The health check after a VM (re)start, when named: vm_http_check's GET of the address its guest agent reports. */
const healthHttp = z
	.object({ port, path: urlPath.default('/') })
	.strict()
	.optional();

/** Each action's params; proxmox/actions.ts has one entry per key here (tests/unit/param-form.test.ts checks both ways). */
export const ACTION_PARAMS = {
	pct_status: ctParams,
	pct_config: ctParams,
	service_status: z.object({ vmid: vmid.optional(), unit }).strict(),
	restart: ctParams,
	systemctl: z.object({ vmid: vmid.optional(), unit, op: z.enum(['start', 'stop', 'restart', 'reload', 'enable', 'disable']) }).strict(),
	pct_exec: z.object({ vmid: vmid.optional(), argv: z.array(argvWord).min(1).max(64) }).strict(),
	apt_upgrade: z.object({ vmid: vmid.optional() }).strict(),
	pct_create: z
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
			// Unprivileged only: a privileged container's root is root on the node (docs/security.md), so
			// neither the model nor a stolen mutation key may create one (the gate allows --unprivileged 1 only).
			unprivileged: z.literal(true, { error: 'Nomos creates unprivileged containers only: the root of a privileged one is root on the node' }).default(true),
			features: z.object({ nesting: z.boolean().optional(), keyctl: z.boolean().optional(), fuse: z.boolean().optional() }).strict().default({}),
			start: z.boolean().default(true)
		})
		.strict(),
	pct_start: ctParams,
	pct_unlock: ctParams,
	pveam_update: z.object({}).strict(),
	pveam_download: z.object({ storage: storage.default('local'), template: templateName }).strict(),
	pct_set: z
		.object({
			vmid: vmid.optional(),
			cores: z.number().int().min(1).max(128).optional(),
			memory: z.number().int().min(16).max(1_048_576).optional().describe('MiB'),
			swap: z.number().int().min(0).max(1_048_576).optional().describe('MiB'),
			onboot: z.boolean().optional(),
			description: description.optional()
		})
		.strict()
		.refine(
			(p) => ['cores', 'memory', 'swap', 'onboot', 'description'].some((k) => (p as Record<string, unknown>)[k] !== undefined),
			'set at least one of cores, memory, swap, onboot, description'
		),
	pct_resize: z.object({ vmid: vmid.optional(), disk: ctDisk.default('rootfs'), size: growSize }).strict(),
	pct_snapshot: z.object({ vmid: vmid.optional(), name: snapshotName, description: description.optional() }).strict(),
	pct_rollback: z.object({ vmid: vmid.optional(), name: snapshotName, start: z.boolean().default(false) }).strict(),
	pct_delsnapshot: z.object({ vmid: vmid.optional(), name: snapshotName }).strict(),
	vzdump: z
		.object({
			vmid: vmid.optional(),
			storage: storage.default('local'),
			mode: z.enum(['snapshot', 'suspend', 'stop']).default('snapshot'),
			compress: z.enum(['zstd', 'gzip', 'lzo', '0']).default('zstd'),
			prune: retention.optional().describe('retention applied after the backup (vzdump --prune-backups)')
		})
		.strict(),
	pct_push: z.object({ vmid: vmid.optional(), path: ctPath, content: pushContent, mode: fileMode.default('0644') }).strict(),
	ct_http_check: z.object({ vmid: vmid.optional(), port, path: urlPath.default('/'), timeoutS: httpTimeoutS }).strict(),
	ct_service_active: z.object({ vmid: vmid.optional(), unit }).strict(),
	qm_status: vmParams,
	qm_start: z.object({ vmid, healthHttp }).strict(),
	qm_stop: vmParams,
	vm_create: z
		.object({
			vmid: newVmid,
			name: hostname,
			image: vmImage,
			storage: storage.default('local-lvm'),
			cores: z.number().int().min(1).max(128).default(2),
			memory: z.number().int().min(64).max(4_194_304).default(2048).describe('MiB'),
			bridge: bridge.default('vmbr0'),
			ciuser: ciUser.optional(),
			sshKeys: sshKeys.optional(),
			ip: ipConfig.default('dhcp'),
			gateway: gateway.optional(),
			start: z.boolean().default(true),
			healthHttp
		})
		.strict()
		.refine((p) => p.gateway === undefined || p.ip !== 'dhcp', { message: 'a gateway goes with a static ip, not dhcp', path: ['gateway'] })
		.refine((p) => p.healthHttp === undefined || p.start, { message: 'an HTTP health check needs the VM started', path: ['healthHttp'] }),
	vm_clone: z.object({ vmid, newid: newVmid, name: hostname, full: z.boolean().default(true) }).strict(),
	vm_template: vmParams,
	vm_set: z
		.object({
			vmid,
			cores: z.number().int().min(1).max(128).optional(),
			memory: z.number().int().min(64).max(4_194_304).optional().describe('MiB'),
			balloon: z.number().int().min(0).max(4_194_304).optional().describe('MiB'),
			onboot: z.boolean().optional(),
			tags: z.array(vmTag).max(32).optional(),
			description: description.optional()
		})
		.strict()
		.refine((p) => VM_SET_KEYS.some((k) => p[k] !== undefined), `set at least one of ${VM_SET_KEYS.join(', ')}`)
		.refine((p) => p.balloon === undefined || p.memory === undefined || p.balloon <= p.memory, { message: 'balloon cannot exceed memory', path: ['balloon'] }),
	vm_resize: z.object({ vmid, disk: vmDisk.default('scsi0'), size: growSize }).strict(),
	vm_snapshot: z.object({ vmid, name: snapshotName, description: description.optional() }).strict(),
	vm_rollback: z.object({ vmid, name: snapshotName, start: z.boolean().default(false) }).strict(),
	vm_delsnapshot: z.object({ vmid, name: snapshotName }).strict(),
	vm_shutdown: z.object({ vmid, timeoutS: z.number().int().min(1).max(3600).default(180) }).strict(),
	vm_reboot: z.object({ vmid, timeoutS: z.number().int().min(1).max(3600).default(180), healthHttp }).strict(),
	vm_destroy: vmParams,
	vm_unlock: vmParams,
	vm_config: vmParams,
	vm_guest: z.object({ vmid, cmd: z.enum(['ping', 'network-get-interfaces']).default('ping') }).strict(),
	vm_http_check: z.object({ vmid, port, path: urlPath.default('/'), timeoutS: httpTimeoutS, scheme: z.enum(['http', 'https']).default('http') }).strict(),
	pct_migrate: z.object({ vmid: vmid.optional(), node: nodeName, timeoutS: z.number().int().min(1).max(3600).default(180) }).strict(),
	qm_migrate: z.object({ vmid, node: nodeName, online: z.boolean().default(false), withLocalDisks: z.boolean().default(false) }).strict(),
	pct_stop: ctParams,
	pct_destroy: ctParams,
	...HEALTH_PARAMS,
	...NODE_OPS_PARAMS,
	...BACKUP_PARAMS
} satisfies Record<string, z.ZodType>;

export type ParamsAction = keyof typeof ACTION_PARAMS;

/**
 * Plain words for zod's built-in messages (`at least 16` for "Too small: expected number to be
 * >=16"). Given per parse, so a schema's own message (a pattern's "a bridge such as vmbr0")
 * still wins.
 */
export function plainIssue(i: z.core.$ZodRawIssue): string | undefined {
	const n = (x: number | bigint, what: string) => `${x} ${what}${Number(x) === 1 ? '' : 's'}`;
	switch (i.code) {
		case 'invalid_type':
			if (i.input === undefined) return 'required';
			if (i.expected === 'int') return 'must be a whole number';
			return (
				{ string: 'must be text', number: 'must be a number', boolean: 'must be yes or no', array: 'must be a list', object: 'must be an object' } as Record<
					string,
					string
				>
			)[i.expected];
		case 'too_small':
			if (i.origin === 'string') return Number(i.minimum) === 1 ? 'required' : `at least ${n(i.minimum, 'character')}`;
			if (i.origin === 'array') return `at least ${n(i.minimum, 'item')}`;
			return `at least ${i.minimum}`;
		case 'too_big':
			if (i.origin === 'string') return `at most ${n(i.maximum, 'character')}`;
			if (i.origin === 'array') return `at most ${n(i.maximum, 'item')}`;
			return `at most ${i.maximum}`;
		case 'invalid_value':
			return i.values.length === 1 ? `must be ${JSON.stringify(i.values[0])}` : `one of ${i.values.join(', ')}`;
		case 'invalid_union':
			return i.input === undefined ? 'required' : 'not an accepted value';
	}
	return undefined;
}

/** A zod error as one readable message per field path (`memory`, `features.nesting`, `argv.2`; `_` for the whole). */
export function fieldErrorsOf(error: z.ZodError, limit = 50): Record<string, string> {
	const out: Record<string, string> = {};
	for (const i of error.issues.slice(0, limit)) {
		if (i.code === 'unrecognized_keys') {
			for (const k of i.keys.slice(0, limit)) out[[...i.path, k].join('.').slice(0, 200)] ??= 'not a field of this action';
		} else out[i.path.length ? i.path.join('.') : '_'] ??= i.message.slice(0, 300);
	}
	return out;
}

/** Parses an action's params with plain-worded messages: the edit form's check, in the browser and on the server alike. */
export function parseParams(action: ParamsAction, params: unknown) {
	return (ACTION_PARAMS[action] as z.ZodType).safeParse(params, { error: plainIssue });
}

/** One message per failing field of an action's params (empty when valid); an unknown action has none. */
export function paramErrors(action: string, params: unknown): Record<string, string> {
	if (!Object.hasOwn(ACTION_PARAMS, action)) return {};
	const r = parseParams(action as ParamsAction, params);
	return r.success ? {} : fieldErrorsOf(r.error);
}
