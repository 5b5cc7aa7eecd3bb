import type { Precondition, StepContext } from '../../proxmox/actions';
import { readAgentAddress } from '../../proxmox/guest-agent';
import { migrationProblems, readMigrationFacts } from '../../proxmox/migrate';
import { guestName } from '../host-reads';
import { rootfsStorage, snapshotCapable, storageType, vmDiskStorage, type Guest } from '../safeguards';
import type { HostReader } from './host-reader';
import { backupStale, isBackupPrecondition } from '../../proxmox/backup-facts';

const GIB: Record<string, number> = { K: 1 / 1024 ** 2, M: 1 / 1024, G: 1, T: 1024 };

/**
 * What must hold right before running, re-read on the host: the world may have changed since
 * approval. A reading precondition leaves what it found in `found` for the steps (StepContext).
 * Returns why not (null: it holds); `waitable` when a later read may find it holds (an agent's
 * address not there yet).
 */
export async function checkPrecondition(reader: HostReader, p: Precondition, found: StepContext): Promise<{ why: string; waitable?: true } | null> {
	const why = await stale(reader, p, found);
	return why === null ? null : typeof why === 'string' ? { why } : why;
}

/** checkPrecondition's reads: a string is a refusal time will not change. Only the host's own "does not exist" makes a guest absent. */
async function stale(reader: HostReader, p: Precondition, found: StepContext): Promise<string | { why: string; waitable: true } | null> {
	if (isBackupPrecondition(p)) return backupStale((argv) => reader.read(argv), p, found);
	if (p.kind === 'vm-agent-address') {
		const a = await readAgentAddress((argv) => reader.read(argv), p.vmid);
		if ('refuse' in a) return a.lasting ? a.refuse : { why: a.refuse, waitable: true };
		found.address = a.address;
		return null;
	}
	if (p.kind === 'migrate-target') {
		const problems = migrationProblems(await readMigrationFacts((argv) => reader.read(argv), p), p);
		return problems.length ? `the migration pre-check failed: ${problems.join('; ')}` : null;
	}
	if (p.kind === 'vm-absent') {
		// VMs and CTs share one id space: either one holding the id makes the create fail.
		if ((await reader.guest('vm', p.vmid, 'status')).state === 'present') return `VM ${p.vmid} already exists now (it did not when this was approved)`;
		if ((await reader.guest('ct', p.vmid, 'status')).state === 'present') return `CT ${p.vmid} already has id ${p.vmid}`;
		return null;
	}
	if (p.kind === 'vm-exists' || p.kind === 'vm-status') {
		const g = await reader.guest('vm', p.vmid, 'status');
		if (g.state === 'absent') return `VM ${p.vmid} does not exist (anymore)`;
		if (p.kind === 'vm-status' && g.status !== p.status) return `VM ${p.vmid} is ${g.status ?? 'in an unknown state'}, expected ${p.status}`;
		return null;
	}
	// Checked before approval (before-approval.ts); at run time a gated node's nomos-gate decides, by
	// the container's config as it is then, and a full-shell key runs what was approved.
	if (p.kind === 'ct-contained') return null;
	if (p.kind === 'ct-disk-grows' || p.kind === 'vm-disk-grows') {
		const [what, kind, action] = p.kind === 'ct-disk-grows' ? (['CT', 'ct', 'pct_resize'] as const) : (['VM', 'vm', 'vm_resize'] as const);
		const g = await reader.guest(kind, p.vmid, 'config');
		if (g.state === 'absent') return `${what} ${p.vmid} does not exist (anymore)`;
		const line = g.stdout.split('\n').find((l) => l.startsWith(`${p.disk}: `));
		if (!line) return `${what} ${p.vmid} has no ${p.disk}`;
		if (p.size.startsWith('+')) return null;
		const m = /(?:^|,)size=(\d+(?:\.\d+)?)([KMGT])/.exec(line.slice(p.disk.length + 2));
		if (!m) return `the size of ${what} ${p.vmid} ${p.disk} cannot be read from its config`;
		const current = Number(m[1]) * GIB[m[2]];
		const wanted = Number(p.size.slice(0, -1));
		if (wanted <= current) return `${what} ${p.vmid} ${p.disk} is ${m[1]}${m[2]} now; ${p.size} would not grow it (${action} only grows, a disk cannot shrink)`;
		return null;
	}
	const g = await reader.guest('ct', p.vmid, 'status');
	if (p.kind === 'ct-absent') return g.state === 'present' ? `CT ${p.vmid} already exists now (it did not when this was approved)` : null;
	if (g.state === 'absent') return `CT ${p.vmid} does not exist (anymore)`;
	if (p.kind === 'ct-status' && g.status !== p.status) return `CT ${p.vmid} is ${g.status ?? 'in an unknown state'}, expected ${p.status}`;
	return null;
}

/** Whether a CT's rootfs (a VM's boot disk) lives on storage that can be snapshotted (read from `pct|qm config` and `pvesm status`). */
export async function canSnapshot(reader: HostReader, g: Guest): Promise<boolean> {
	const cfg = await reader.guest(g.kind, g.vmid, 'config');
	const storage = cfg.state === 'absent' ? null : g.kind === 'ct' ? rootfsStorage(cfg.stdout) : vmDiskStorage(cfg.stdout);
	if (!storage) return false;
	const st = await reader.read(['pvesm', 'status', '--storage', storage]);
	return st.exitCode === 0 && snapshotCapable(storageType(st.stdout, storage));
}

/** What a run is about, as "could not check …" names it: the guest its first check reads, else its guest, else its host. */
export function subjectOf(pre: Precondition[], guest: Guest | undefined, hostName: string): string {
	const p = pre.find((x) => x.kind !== 'migrate-target') ?? pre[0];
	if (p && isBackupPrecondition(p)) return `the backups on ${(p as { storage: string }).storage}`;
	if (p) return guestName(p.kind.startsWith('ct-') || (p.kind === 'migrate-target' && p.guest === 'ct') ? 'ct' : 'vm', p.vmid);
	return guest ? guestName(guest.kind, guest.vmid) : hostName;
}
