// The params of the node-health reads (storage, backups, backup jobs, failed tasks, updates, ZFS,
// disks, services): browser-safe zod, spread into ACTION_PARAMS (action-params.ts) as every
// action's are; proxmox/health-reads.ts pairs each with its argv and its parser.
import { z } from 'zod';
import { nodeName, storage, vmid } from './param-fields';

/**
 * A Proxmox task id as PVE::Tools::upid_decode reads it —
 * `UPID:<node>:<pid 8 hex>:<pstart 8-9 hex>:<starttime 8 hex>:<type>:<id>:<user>:` — stricter in
 * what its free fields hold (no `/`, which would leave the API path, and no shell or control
 * characters): `UPID:pve1:0002A1B3:01C2D3E4:675A1B2C:vzdump:101:root@pam:`.
 */
export const UPID_RE =
	/^UPID:([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?):[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8}:[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9_.@-]{0,64}:[A-Za-z0-9_.@!-]{1,128}:$/;
export const upid = z.string().max(300).regex(UPID_RE, 'a Proxmox task id (UPID:<node>:…:), as a failed-tasks read lists it').describe('a task id (UPID)');

/** The node whose API path is read: the target host's own by default (`localhost`), or another cluster member by name. */
const node = nodeName.optional().describe('a cluster member (default: the target host)');

export const HEALTH_PARAMS = {
	storage_status: z.object({ node }).strict(),
	backup_list: z.object({ storage, vmid: vmid.optional(), node }).strict(),
	backup_jobs: z.object({}).strict(),
	tasks_failed: z.object({ limit: z.number().int().min(1).max(50).default(10), node }).strict(),
	// The task's node is read by its path: a task another member ran is read with node = the member its UPID names.
	task_log: z
		.object({ upid, lines: z.number().int().min(5).max(200).default(40), node })
		.strict()
		.refine((p) => p.node === undefined || UPID_RE.exec(p.upid)?.[1] === p.node, {
			message: 'node must be the member the UPID names (or left out for the target host)',
			path: ['node']
		}),
	node_updates: z.object({ node }).strict(),
	zfs_status: z.object({}).strict(),
	disks_smart: z.object({ node }).strict(),
	pve_services: z.object({ node }).strict()
};
