import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { RETRYABLE_TASKS, dismissGaveUpJobs, emitJobsChanged, retryGaveUpJobs } from '../db/queries/jobs';
import { Refusal } from '../refusal';

// Background jobs that gave up, as an admin clears them from Ops: dismissed or run again, audited
// and announced in the same transaction (only when there were any).

type Actor = { id: string; username: string };

/** Dismisses the task's gave-up jobs up to `upToId`; returns how many. */
export function dismissGaveUp(actor: Actor, task: string, upToId: string): Promise<{ count: number }> {
	return sql().begin(async (tx) => {
		const count = await dismissGaveUpJobs(tx, task, upToId);
		if (count) {
			await recordAudit(tx, { actor, action: 'jobs.dismissed', route: 'ops', subjectType: 'task', subjectId: task, detail: { count } });
			await emitJobsChanged(tx, { change: 'dismissed', tasks: [task] });
		}
		return { count };
	});
}

/** Runs the task's gave-up jobs up to `upToId` again (only tasks whose rerun cannot repeat an effect); returns how many. */
export async function retryGaveUp(actor: Actor, task: string, upToId: string): Promise<{ count: number }> {
	if (!RETRYABLE_TASKS.includes(task)) throw new Refusal('BAD_REQUEST', `${task} is not run again by hand: it could repeat an effect. Dismiss it instead.`);
	return sql().begin(async (tx) => {
		const count = await retryGaveUpJobs(tx, task, upToId);
		if (count) {
			await recordAudit(tx, { actor, action: 'jobs.retried', route: 'ops', subjectType: 'task', subjectId: task, detail: { count } });
			await emitJobsChanged(tx, { change: 'retried', tasks: [task] });
		}
		return { count };
	});
}
