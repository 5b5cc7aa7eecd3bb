import { sql } from '../db/index';
import { getExecution, liveFollowUpOf } from '../db/queries/executions';
import { followUpRefusal, requestExecution, type RequestOutcome, type Requester } from './request';
import { guestOf, rollbackRequest, takenSnapshot } from './safeguards';
import type { PrepareError } from './prepare';

export type RollbackRefusal = { refused: string };

/**
 * Requests a `pct_rollback` (`vm_rollback`) of a failed (or unhealthy, or interrupted) execution's container (VM) to
 * the snapshot Nomos took right before it. The snapshot name and the target come from the stored
 * execution, never from the caller; the rollback is an ordinary destructive request that waits
 * for its own approval (the same hash and approval rules as any other).
 */
export async function requestRollback(executionId: string, requester?: Requester): Promise<RequestOutcome | PrepareError | RollbackRefusal> {
	const e = await getExecution(sql(), executionId);
	if (!e) return { refused: 'No such execution.' };
	if (e.status !== 'failed' && e.status !== 'interrupted')
		return { refused: `Only a failed or interrupted execution can be rolled back (this one is ${e.status}).` };
	const name = takenSnapshot(e.id, e.steps);
	if (!name) return { refused: 'Nomos took no snapshot before this execution.' };
	// One rollback at a time (a double click, a second tab): another one may follow only if this
	// one failed or expired. Checked here for a quick answer, and again under a lock inside the request.
	const guest = guestOf(e.action, /^lxc:[^/]+\/([0-9]+)$/.exec(e.target)?.[1], e.params);
	if (!guest) return { refused: 'This execution names no container or VM to roll back.' };
	const { action, params } = rollbackRequest(guest, name);
	const live = await liveFollowUpOf(sql(), e.id, action);
	if (live) return { refused: followUpRefusal('rollback', live.status) };
	return requestExecution(
		e.requestedBySession,
		{ target: e.target, action, params, reason: `roll back to ${name}, taken before ${e.action} (execution ${e.id}) failed` },
		{ retryOf: e.id, requester: requester && { ...requester, detail: { rollbackOf: e.id, ...requester.detail } } }
	);
}
