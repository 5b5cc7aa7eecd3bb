import { env } from '../../env';
import { execArgv } from '../../ssh/client';
import { listSnapshotsArgv, nomosSnapshotName, nomosSnapshots, pruneSteps, snapshotStep } from '../safeguards';
import { Failure } from './outcomes';
import type { Target } from './pre-check';
import type { Run } from './run';

/**
 * Phase 3: the snapshot before, when wanted and the storage can take one: the guest as it was,
 * named for this execution only (a retry is a new execution, a new name; this one never runs
 * twice). A snapshot that fails ends the run before any step: nothing was changed. Then the
 * oldest of Nomos's snapshots beyond NOMOS_SNAPSHOT_KEEP are pruned (a failed prune is soft).
 */
export async function snapshot(run: Run, t: Target): Promise<void> {
	const { e } = run;
	if (!t.guest || !(await t.snapshotPossible)) return;
	try {
		await t.io.runStep(snapshotStep(e.id, e.action, t.guest), 'snapshot');
	} catch (err) {
		if (err instanceof Failure) throw new Failure(`not run: the snapshot before failed, nothing was changed (${err.message})`);
		throw err;
	}
	run.snapshot = nomosSnapshotName(e.id);
	const listing = await execArgv(run.client, listSnapshotsArgv(t.guest), { timeoutMs: 30_000, signal: run.cancel.signal, group: true });
	if (listing.exitCode === 0)
		for (const p of pruneSteps(nomosSnapshots(listing.stdout), env().NOMOS_SNAPSHOT_KEEP, t.guest)) await t.io.runStep(p, 'prune', true);
}
