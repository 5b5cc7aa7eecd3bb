import { tool } from 'ai';
import { z } from 'zod';
import { sql } from '../../db/index';
import { entityRef, resolveEntity, type Entity } from '../../db/queries/entities';
import { getHostByName } from '../../db/queries/hosts';
import {
	formatUptime,
	lxcAttributes,
	parsePctConfig,
	parsePctStatus,
	ProxmoxError,
	runChecked,
	statusEntry,
	type CtConfig,
	type LxcAttributes
} from '../../proxmox/inventory';
import { lease } from '../../ssh/pool';
import { toolError, type ToolContext } from './context';
import { unresolvedError } from './get-entity';
import { guestStale } from './fleet-truth';
import { hostReachability } from '../../hosts/reachability';
import { inventoryReadMs } from '../../inventory/sync';

export const getLxcStateInput = z
	.object({
		vmid: z
			.string()
			.regex(/^[1-9][0-9]{2,8}$/, 'vmid is a string of 3-9 digits, e.g. "101"')
			.optional(),
		name: z.string().min(1).max(128).optional()
	})
	.strict()
	.refine((v) => (v.vmid === undefined) !== (v.name === undefined), { message: 'give exactly one of vmid or name' });

const TIMEOUT_MS = 15_000;

const ORDER = [
	'cpuPercent',
	'cpus',
	'cores',
	'memUsedMb',
	'memLimitMb',
	'swapMb',
	'diskUsedGb',
	'diskLimitGb',
	'uptimeSec',
	'ips',
	'ipMode',
	'bridge',
	'hwaddr',
	'hostname',
	'ostype',
	'unprivileged',
	'features',
	'tags'
];

/** The flat view of a container state, stored or live (known keys first, in a fixed order). */
function view(e: Entity, a: Record<string, unknown>) {
	const uptimeSec = typeof a.uptimeSec === 'number' ? a.uptimeSec : 0;
	const { vmid, status, ...rest } = a;
	const ordered = Object.fromEntries([...ORDER.filter((k) => k in rest).map((k) => [k, rest[k]]), ...Object.entries(rest).filter(([k]) => !ORDER.includes(k))]);
	return { vmid, name: e.name, host: e.hostName, ref: entityRef(e), status, uptime: formatUptime(uptimeSec), ...ordered };
}

type Live = { ok: true; attributes: LxcAttributes; config: CtConfig } | { ok: false; gone: boolean; error: string };

/** Runs `pct status --verbose` and `pct config` on the container's host over one connection. */
async function readLive(hostName: string, vmid: number, signal: AbortSignal): Promise<Live> {
	const host = await getHostByName(sql(), hostName);
	if (!host) return { ok: false, gone: false, error: `host "${hostName}" is no longer configured` };
	try {
		const { client, release } = await lease(host);
		try {
			const opts = { timeoutMs: Math.min(TIMEOUT_MS, inventoryReadMs()), signal };
			const status = parsePctStatus(await runChecked(client, ['pct', 'status', String(vmid), '--verbose'], opts));
			const config = parsePctConfig(await runChecked(client, ['pct', 'config', String(vmid)], opts));
			return { ok: true, attributes: lxcAttributes(statusEntry(vmid, status.values), config), config };
		} finally {
			release();
		}
	} catch (e) {
		const error = (e as Error).message;
		return { ok: false, gone: e instanceof ProxmoxError && /does not exist/.test(error), error };
	}
}

/**
 * `get_lxc_state({ vmid } | { name })`: one container in detail, read live over SSH and merged
 * with the stored inventory; when the host is unreachable, the stored data with `stale: true`.
 */
export function getLxcStateTool(ctx: ToolContext) {
	return tool({
		description:
			'One container read live from its host: status, resources, network, features, raw config. Give vmid ("101") ' + 'or name ("caddy", "strong/101").',
		inputSchema: getLxcStateInput,
		execute: async ({ vmid, name }) => {
			if ((vmid === undefined) === (name === undefined)) {
				return toolError('give exactly one of vmid or name', 'e.g. { "vmid": "101" } or { "name": "caddy" }');
			}
			const ref = vmid ?? name!;
			const r = await resolveEntity(sql(), ref.startsWith('lxc:') ? ref : `lxc:${ref}`);
			if (!r.ok) return unresolvedError(ref, r, 'lxc');
			const e = r.entity;
			const stored = e.attributes;
			const id = Number(stored.vmid ?? e.externalId.split('/').pop());
			const syncedAt = e.seenAt;
			const live = await readLive(e.hostName ?? '', id, ctx.signal);
			if (live.ok) {
				const checkedAt = new Date().toISOString();
				return { ...view(e, { ...stored, ...live.attributes }), live: true, stale: false, checkedAt, syncedAt, config: live.config.raw };
			}
			if (live.gone) {
				return toolError(
					`CT ${id} no longer exists on ${e.hostName}`,
					'The stored inventory is out of date (it re-syncs about every minute); call list_lxcs for the current containers.'
				);
			}
			// Unknown, not absent: the stored state as last seen, and why it could not be checked.
			const stale = guestStale({ reach: await hostReachability(sql(), e.hostName ?? ''), stale: `could not check CT ${id} now: ${live.error}` }, syncedAt);
			return {
				...view(e, stored),
				status: `unknown now (was ${typeof stored.status === 'string' ? stored.status : 'unknown'})`,
				live: false,
				stale: true,
				note: stale,
				sshError: live.error,
				syncedAt
			};
		}
	});
}
