import { ACTIONS, type Step } from '../proxmox/actions';
import type { Classification } from '../db/schema';
import type { ExecutionStep } from '../../types/executions';

// Snapshot before, health check after: the steps the runner adds around a container mutation.
// Every argv comes from the catalogue's own templates (pct_snapshot, pct_delsnapshot,
// pct_status, ct_service_active); nothing here is written by the model.

/** Storage types whose container volumes `pct snapshot` can snapshot. */
const SNAPSHOT_STORAGE_TYPES = new Set(['lvmthin', 'zfspool', 'rbd', 'btrfs']);

/**
 * Actions that get no snapshot: they create, or are about snapshots, or remove the CT (and its
 * snapshots), or unlock it (a locked CT cannot be snapshotted: the unlock would never run).
 */
const NO_SNAPSHOT = new Set<string>(['pct_create', 'pct_snapshot', 'pct_rollback', 'pct_delsnapshot', 'pct_destroy', 'vzdump', 'pct_unlock']);

export const NOMOS_SNAPSHOT_PREFIX = 'nomos-';

/** The snapshot an execution takes: derived from its id only (never from model text). */
export function nomosSnapshotName(executionId: string): string {
	return NOMOS_SNAPSHOT_PREFIX + executionId.replace(/[^0-9a-f]/gi, '').slice(0, 12).toLowerCase();
}

/** Whether this execution should snapshot its (existing) container first, storage permitting. */
export function wantsSnapshot(action: string, classification: Classification, vmid: string | undefined): vmid is string {
	return Boolean(vmid) && classification !== 'read_only' && !NO_SNAPSHOT.has(action);
}

/** The storage holding a CT's rootfs, from `pct config` (`rootfs: local-lvm:vm-101-disk-0,size=8G`). */
export function rootfsStorage(pctConfig: string): string | null {
	return /^rootfs:\s*([A-Za-z][A-Za-z0-9_.-]*):/m.exec(pctConfig)?.[1] ?? null;
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

export function snapshotStep(executionId: string, action: string, vmid: string): Step {
	const name = nomosSnapshotName(executionId);
	const [s] = ACTIONS.pct_snapshot.steps({ name, description: `taken by Nomos before ${action} (execution ${executionId})` }, { vmid });
	return { ...s, label: `snapshot before (${name})` };
}

/** Deletes the oldest Nomos snapshots so that `keep` remain (the new one included). */
export function pruneSteps(existing: string[], keep: number, vmid: string): Step[] {
	return existing.slice(0, Math.max(0, existing.length - keep)).map((name) => {
		const [s] = ACTIONS.pct_delsnapshot.steps({ name }, { vmid });
		return { ...s, label: `prune old snapshot ${name}` };
	});
}

/** The health checks that fit an action that succeeded: CT running, unit active. */
export function healthSteps(action: string, params: Record<string, unknown>, vmid: string | undefined): Step[] {
	const running = (v: string): Step => {
		const [s] = ACTIONS.pct_status.steps({}, { vmid: v });
		return { ...s, label: 'health: CT running', verify: { field: 'status', expect: 'running', failure: `CT ${v} is not running` } };
	};
	if ((action === 'restart' || action === 'pct_start') && vmid) return [running(vmid)];
	if (action === 'pct_create' && params.start === true && /^[0-9]+$/.test(String(params.vmid))) return [running(String(params.vmid))];
	if (action === 'systemctl' && vmid && ['start', 'restart', 'reload'].includes(String(params.op))) {
		const unit = String(params.unit);
		const [s] = ACTIONS.ct_service_active.steps({ unit }, { vmid });
		return [{ ...s, label: `health: ${unit} active`, verify: { expect: 'active', failure: `${unit} is not active in CT ${vmid}` } }];
	}
	return [];
}

/** The Nomos snapshot a finished execution took (its own, by id), or null. */
export function takenSnapshot(executionId: string, steps: Pick<ExecutionStep, 'kind' | 'exitCode'>[]): string | null {
	return steps.some((s) => s.kind === 'snapshot' && s.exitCode === 0) ? nomosSnapshotName(executionId) : null;
}
