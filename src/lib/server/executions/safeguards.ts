import { ACTIONS, AGENT_WAIT_SCRIPT, type Step } from '../proxmox/actions';
import type { Classification } from '../db/schema';
import type { ExecutionStep } from '../../types/executions';

// Snapshot before, health check after: the steps the runner adds around a container or VM
// mutation. Every argv comes from the catalogue's own templates (pct_/vm_snapshot,
// pct_/vm_delsnapshot, pct_status, qm_status, ct_service_active, AGENT_WAIT_SCRIPT); nothing
// here is written by the model.

/** Storage types whose guest volumes `pct snapshot` / `qm snapshot` can snapshot. */
const SNAPSHOT_STORAGE_TYPES = new Set(['lvmthin', 'zfspool', 'rbd', 'btrfs']);

/**
 * Actions that get no snapshot: they create, or are about snapshots, or remove the guest (and its
 * snapshots), or unlock it (a locked guest cannot be snapshotted: the unlock would never run), or
 * move it (a snapshot on local storage can stop a migration: lvmthin snapshots do not move).
 */
const NO_SNAPSHOT = new Set<string>([
	'pct_create',
	'pct_snapshot',
	'pct_rollback',
	'pct_delsnapshot',
	'pct_destroy',
	'vzdump',
	'pct_unlock',
	'pct_migrate',
	'vm_create',
	'vm_clone',
	'vm_template',
	'vm_snapshot',
	'vm_rollback',
	'vm_delsnapshot',
	'vm_destroy',
	'vm_unlock',
	'qm_migrate'
]);

/** A guest the runner snapshots and checks: a container (named by the target) or a VM (named by params.vmid on a host target). */
export type Guest = { kind: 'ct' | 'vm'; vmid: string };

/** Whether an action is about one VM named by params.vmid (qm_*, vm_*). */
export const isVmAction = (action: string) => action.startsWith('qm_') || action.startsWith('vm_');

/** The existing guest an execution changes: the target's CT, or the VM in params.vmid; undefined for host-level actions. */
export function guestOf(action: string, ctVmid: string | undefined, params: Record<string, unknown>): Guest | undefined {
	if (ctVmid) return { kind: 'ct', vmid: ctVmid };
	const v = params.vmid;
	if (isVmAction(action) && (typeof v === 'string' || typeof v === 'number') && /^[0-9]+$/.test(String(v))) return { kind: 'vm', vmid: String(v) };
	return undefined;
}

export const NOMOS_SNAPSHOT_PREFIX = 'nomos-';

/** The snapshot an execution takes: derived from its id only (never from model text). */
export function nomosSnapshotName(executionId: string): string {
	return (
		NOMOS_SNAPSHOT_PREFIX +
		executionId
			.replace(/[^0-9a-f]/gi, '')
			.slice(0, 12)
			.toLowerCase()
	);
}

/** Whether this execution should snapshot its (existing) guest first, storage permitting. */
export function wantsSnapshot(action: string, classification: Classification, guest: Guest | undefined): guest is Guest {
	return Boolean(guest) && classification !== 'read_only' && !NO_SNAPSHOT.has(action);
}

/** The storage holding a CT's rootfs, from `pct config` (`rootfs: local-lvm:vm-101-disk-0,size=8G`). */
export function rootfsStorage(pctConfig: string): string | null {
	return /^rootfs:\s*([A-Za-z][A-Za-z0-9_.-]*):/m.exec(pctConfig)?.[1] ?? null;
}

/** The storage holding a VM's boot disk, from `qm config` (the first scsi/virtio/sata/ide disk that is not a CD-ROM or cloud-init drive). */
export function vmDiskStorage(qmConfig: string): string | null {
	for (const m of qmConfig.matchAll(/^(?:scsi|virtio|sata|ide)\d+:\s*([A-Za-z][A-Za-z0-9_.-]*):(\S*)$/gm)) {
		if (!/(^|,)media=cdrom(,|$)/.test(m[2]) && !/cloudinit/.test(m[2])) return m[1];
	}
	return null;
}

/** A storage's type from `pvesm status` (columns: Name Type Status …). */
export function storageType(pvesmStatus: string, storage: string): string | null {
	for (const line of pvesmStatus.split('\n')) {
		const [name, type] = line.trim().split(/\s+/);
		if (name === storage) return type ?? null;
	}
	return null;
}

export const snapshotCapable = (type: string | null) => type !== null && SNAPSHOT_STORAGE_TYPES.has(type);

/** Nomos's own snapshots in `pct listsnapshot` (oldest first); others are never listed here. */
export function nomosSnapshots(listing: string): string[] {
	const names: string[] = [];
	for (const m of listing.matchAll(/`->\s+(\S+)/g)) if (m[1].startsWith(NOMOS_SNAPSHOT_PREFIX) && /^nomos-[0-9a-f]{1,32}$/.test(m[1])) names.push(m[1]);
	return names;
}

export function snapshotStep(executionId: string, action: string, g: Guest): Step {
	const name = nomosSnapshotName(executionId);
	const description = `taken by Nomos before ${action} (execution ${executionId})`;
	const [s] =
		g.kind === 'ct' ? ACTIONS.pct_snapshot.steps({ name, description }, { vmid: g.vmid }) : ACTIONS.vm_snapshot.steps({ vmid: g.vmid, name, description }, {});
	return { ...s, label: `snapshot before (${name})` };
}

/** `pct|qm listsnapshot <vmid>`: read to prune. */
export const listSnapshotsArgv = (g: Guest) => [g.kind === 'ct' ? 'pct' : 'qm', 'listsnapshot', g.vmid];

/** Deletes the oldest Nomos snapshots so that `keep` remain (the new one included). */
export function pruneSteps(existing: string[], keep: number, g: Guest): Step[] {
	return existing.slice(0, Math.max(0, existing.length - keep)).map((name) => {
		const [s] = g.kind === 'ct' ? ACTIONS.pct_delsnapshot.steps({ name }, { vmid: g.vmid }) : ACTIONS.vm_delsnapshot.steps({ vmid: g.vmid, name }, {});
		return { ...s, label: `prune old snapshot ${name}` };
	});
}

/** The rollback action for a guest's Nomos snapshot, and its params. */
export function rollbackRequest(g: Guest, name: string): { action: 'pct_rollback' | 'vm_rollback'; params: Record<string, unknown> } {
	return g.kind === 'ct' ? { action: 'pct_rollback', params: { name } } : { action: 'vm_rollback', params: { vmid: g.vmid, name } };
}

/** Actions after which a VM must run and its agent (when it has one) answer. */
const VM_STARTS = new Set(['qm_start', 'vm_reboot']);

/** The health checks that fit an action that succeeded: CT running, unit active; VM running and its agent answering. */
export function healthSteps(action: string, params: Record<string, unknown>, vmid: string | undefined): Step[] {
	const running = (v: string): Step => {
		const [s] = ACTIONS.pct_status.steps({}, { vmid: v });
		return { ...s, label: 'health: CT running', verify: { field: 'status', expect: 'running', failure: `CT ${v} is not running` } };
	};
	const vmHealthy = (v: string): Step[] => {
		const [s] = ACTIONS.qm_status.steps({ vmid: v }, {});
		return [
			{ ...s, label: 'health: VM running', verify: { field: 'status', expect: 'running', failure: `VM ${v} is not running` } },
			{ label: 'health: guest agent answers', argv: ['sh', '-c', AGENT_WAIT_SCRIPT, 'nomos-agent', v], timeoutMs: 3 * 60_000 }
		];
	};
	if ((action === 'restart' || action === 'pct_start') && vmid) return [running(vmid)];
	if (action === 'pct_create' && params.start === true && /^[0-9]+$/.test(String(params.vmid))) return [running(String(params.vmid))];
	if (VM_STARTS.has(action) && /^[0-9]+$/.test(String(params.vmid))) return vmHealthy(String(params.vmid));
	if (action === 'vm_create' && params.start === true && /^[0-9]+$/.test(String(params.vmid))) return vmHealthy(String(params.vmid));
	if (action === 'systemctl' && vmid && ['start', 'restart', 'reload'].includes(String(params.op))) {
		const unit = String(params.unit);
		const [s] = ACTIONS.ct_service_active.steps({ unit }, { vmid });
		return [{ ...s, label: `health: ${unit} active`, verify: { expect: 'active', failure: `${unit} is not active in CT ${vmid}` } }];
	}
	return [];
}

/**
 * The HTTP check after a VM (re)start when the request named one (`healthHttp`): vm_http_check's
 * params, run after healthSteps (the agent answers by then), so the address is the one it reports.
 */
export function healthHttpCheck(action: string, params: Record<string, unknown>): { vmid: string; port: unknown; path: unknown } | null {
	const h = params.healthHttp as { port?: unknown; path?: unknown } | undefined;
	if (!h || typeof h !== 'object' || !/^[0-9]+$/.test(String(params.vmid))) return null;
	const starts = VM_STARTS.has(action) || (action === 'vm_create' && params.start === true);
	return starts ? { vmid: String(params.vmid), port: h.port, path: h.path } : null;
}

/** The Nomos snapshot a finished execution took (its own, by id), or null. */
export function takenSnapshot(executionId: string, steps: Pick<ExecutionStep, 'kind' | 'exitCode'>[]): string | null {
	return steps.some((s) => s.kind === 'snapshot' && s.exitCode === 0) ? nomosSnapshotName(executionId) : null;
}
