// The params of the node operations (issue #45 item 2, the node half): a package-list refresh,
// a PVE service's restart, a unit's journal tail. Browser-safe zod, spread into ACTION_PARAMS
// (action-params.ts) as every action's are; proxmox/actions/node-ops.ts pairs each with its argv.
import { z } from 'zod';
import { nodeName, storage, unit, vmid } from './param-fields';

/**
 * The Proxmox VE services a node runs, as `/nodes/<n>/services` names them (pve-manager
 * PVE/API2/Services.pm $service_name_list, PVE 8 and 9), less sshd and syslog (not Proxmox's) and
 * the cluster stack (CLUSTER_SERVICES): the units pve_service restarts. proxmox-firewall only on
 * nodes that have it.
 */
export const PVE_SERVICES = [
	'pveproxy',
	'pvedaemon',
	'pvestatd',
	'pvescheduler',
	'pve-firewall',
	'pvefw-logger',
	'proxmox-firewall',
	'spiceproxy',
	'chrony',
	'cron',
	'postfix',
	'ksmtuned',
	'systemd-timesyncd'
] as const;

/**
 * The cluster stack: restarting one can cost the node its quorum or, with HA, make it fence
 * itself (a hard reset of every guest on it). pve_cluster_service restarts them, and only a
 * person approves it (no rule, no typed "yes", no token). pve-ha-* only on nodes that have them.
 */
export const CLUSTER_SERVICES = ['pve-cluster', 'corosync', 'pve-ha-crm', 'pve-ha-lrm'] as const;

const serviceOp = z.enum(['restart', 'reload', 'start']).default('restart');

export const NODE_OPS_PARAMS = {
	node_apt_refresh: z.object({ node: nodeName.optional().describe('a cluster member (default: the target host)') }).strict(),
	pve_service: z.object({ service: z.enum(PVE_SERVICES).describe('a Proxmox VE service of the node'), op: serviceOp }).strict(),
	pve_cluster_service: z.object({ service: z.enum(CLUSTER_SERVICES).describe("a service of the node's cluster stack"), op: serviceOp }).strict(),
	journal_tail: z
		.object({
			vmid: vmid.optional(),
			unit,
			lines: z.number().int().min(5).max(200).default(50).describe('the last N lines')
		})
		.strict(),
	storage_content: z
		.object({
			storage,
			limit: z.number().int().min(1).max(50).default(15),
			node: nodeName.optional().describe('a cluster member (default: the target host)')
		})
		.strict()
};
