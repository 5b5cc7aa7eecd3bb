import type { TransactionSql } from 'postgres';
import { enqueueJob } from '../jobs/enqueue';
import type { JobPayload } from '../jobs/payloads';
import { listEnabledWebhookIds } from '../db/queries/webhooks';
import { noticePath, noticeWords, type Notice } from '../../schemas/notifications';
import type { ExecutionRow, PlanRow } from '../../types/executions';
import type { QuestionRow } from '../../types/questions';

export const NOTIFY_TASK = 'notify__webhook';
/**
 * graphile-worker retries a failed delivery with exponential backoff (about e^n seconds after
 * the n-th failure): 8 attempts span roughly half an hour, long enough for an ntfy restart.
 */
export const NOTIFY_MAX_ATTEMPTS = 8;

/** The payload of a `notify__webhook` job: one notice for one webhook (its schema: jobs/payloads.ts). */
export type NotifyPayload = JobPayload<'notify__webhook'>;

/**
 * Queues the notice for every webhook that is on, in the caller's transaction: the one that
 * makes the approval or question wait. So a committed wait is always delivered (retries), and a
 * rolled-back one never is.
 */
export async function queueNotice(tx: TransactionSql, notice: Notice): Promise<void> {
	for (const webhookId of await listEnabledWebhookIds(tx)) {
		await enqueueJob(tx, NOTIFY_TASK, { webhookId, notice } satisfies NotifyPayload, { maxAttempts: NOTIFY_MAX_ATTEMPTS });
	}
}

const now = () => new Date().toISOString();

export function approvalNotice(e: ExecutionRow): Notice {
	return {
		kind: 'approval',
		sessionId: e.requestedBySession,
		subjectId: e.id,
		...noticeWords.approval(e),
		path: noticePath('approval', e.requestedBySession, e.id),
		at: now()
	};
}

export function questionNotice(q: QuestionRow): Notice {
	return { kind: 'question', sessionId: q.sessionId, subjectId: q.id, ...noticeWords.question(q), path: noticePath('question', q.sessionId, q.id), at: now() };
}

/** What a plan answers when no operator asked for it: an alert (its title and hook) or a schedule (its name). */
export type PlanCause = { alert: { title: string; hookName: string } } | { schedule: string };

/** A plan that waits; in a chat an alert or a schedule opened, the notice names it too. */
export function planNotice(p: PlanRow, cause?: PlanCause | null): Notice {
	const words = noticeWords.plan(p);
	const text = !cause
		? words.text
		: 'alert' in cause
			? `The fix proposed for the alert "${cause.alert.title}" from ${cause.alert.hookName}: ${words.text}`
			: `Proposed by the schedule "${cause.schedule}": ${words.text}`;
	return { kind: 'plan', sessionId: p.sessionId, subjectId: p.id, title: words.title, text, path: noticePath('plan', p.sessionId, p.id), at: now() };
}

export function planEndNotice(p: PlanRow): Notice {
	return { kind: 'plan_end', sessionId: p.sessionId, subjectId: p.id, ...noticeWords.planEnd(p), path: noticePath('plan', p.sessionId, p.id), at: now() };
}

export function testNotice(): Notice {
	return { kind: 'test', sessionId: null, subjectId: null, title: 'Nomos test notification', text: 'Webhook delivery works.', path: '/settings', at: now() };
}
