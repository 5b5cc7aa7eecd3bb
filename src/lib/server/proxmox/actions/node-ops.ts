// Operations on a node itself (issue #45 item 2, the node half): refresh its package lists, restart
// one of its Proxmox services, read a unit's journal on it or in a container, list what takes a
// storage's space. Applying the updates is apt_upgrade (exec-packages.ts) on the host, in a plan
// after snapshots of the guests that matter. Described on demand with the health reads (describe_action "health", families.ts).
import { ACTION_PARAMS } from '../../../schemas/action-params';
import { updatesSummary } from '../health-parse';
import { contentSummary } from '../content-parse';
import { MIN, def, inCt, running } from './def';
import { unitIs } from './read-backs';

/** The API path's node: the target host itself (`localhost`, as pvesh resolves it) unless a member is named. */
const at = (node: string | undefined) => `/nodes/${node ?? 'localhost'}`;

/** The tail of a journal as the model reads it: its last lines, `-- No entries --` said in words. */
export function journalDigest(unit: string, out: string): string {
	const lines = out.split('\n').filter((l) => l.trim() !== '');
	if (!lines.length || (lines.length === 1 && lines[0].trim() === '-- No entries --')) return `no journal entries for ${unit}`;
	return [`last ${lines.length} journal line${lines.length === 1 ? '' : 's'} of ${unit}:`, ...lines.map((l) => l.slice(0, 300))].join('\n');
}

export const NODE_OPS = {
	node_apt_refresh: def({
		classification: 'read_only',
		description: "refresh a node's package lists (the GUI's Refresh: POST /nodes/<n>/apt/update), then list its pending updates, a new kernel flagged",
		scope: 'host',
		params: ACTION_PARAMS.node_apt_refresh,
		steps: (p) => [
			{ label: 'refresh package lists', argv: ['pvesh', 'create', `${at(p.node)}/apt/update`], timeoutMs: 10 * MIN },
			{ label: 'pending updates', argv: ['pvesh', 'get', `${at(p.node)}/apt/update`, '--output-format', 'json'], timeoutMs: MIN }
		],
		digest: (_p, [, list]) => updatesSummary(list)
	}),
	pve_service: def({
		classification: 'config_mutation',
		description: "restart (or reload, start) one of the node's Proxmox VE services (pveproxy, pvedaemon, pvestatd…); read back active",
		scope: 'host',
		params: ACTION_PARAMS.pve_service,
		steps: (p) => [{ label: `systemctl ${p.op} ${p.service}`, argv: ['systemctl', p.op, p.service], timeoutMs: 5 * MIN }],
		summary: (p) => `${p.service} ${p.op === 'start' ? 'started' : `${p.op}ed`}`,
		readBack: (p) => unitIs(undefined, p.op, p.service)
	}),
	pve_cluster_service: def({
		classification: 'config_mutation',
		disruptive: true,
		description: 'restart (or reload, start) pve-cluster, corosync or pve-ha-*: can cost quorum or fence an HA node; read back active',
		scope: 'host',
		params: ACTION_PARAMS.pve_cluster_service,
		steps: (p) => [{ label: `systemctl ${p.op} ${p.service}`, argv: ['systemctl', p.op, p.service], timeoutMs: 5 * MIN }],
		summary: (p) => `${p.service} ${p.op === 'start' ? 'started' : `${p.op}ed`}`,
		readBack: (p) => unitIs(undefined, p.op, p.service)
	}),
	storage_content: def({
		classification: 'read_only',
		description: "what takes a storage's space: its volumes (guest disks, backups, ISOs, templates) largest first, with whose they are",
		scope: 'host',
		params: ACTION_PARAMS.storage_content,
		steps: (p) => [
			{
				label: `volumes on ${p.storage}`,
				argv: ['pvesh', 'get', `${at(p.node)}/storage/${p.storage}/content`, '--output-format', 'json'],
				timeoutMs: MIN
			}
		],
		digest: (p, [out]) => contentSummary(out, p.storage, p.limit)
	}),
	journal_tail: def({
		classification: 'read_only',
		description: "the last lines of a systemd unit's journal on the host or inside a running container (journalctl -u <unit> -n <lines>)",
		scope: 'host-or-ct',
		params: ACTION_PARAMS.journal_tail,
		steps: (p, { vmid }) => [
			{ label: `journal of ${p.unit}`, argv: inCt(vmid, ['journalctl', '-u', p.unit, '-n', String(p.lines), '--no-pager']), timeoutMs: MIN }
		],
		preconditions: (_p, { vmid }) => (vmid ? running(vmid) : []),
		digest: (p, [out]) => journalDigest(p.unit, out)
	})
};

/** The node's operations, described on demand with the health reads (families.ts). */
export const NODE_ACTIONS: readonly string[] = Object.keys(NODE_OPS);
