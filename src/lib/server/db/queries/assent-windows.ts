import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { AssentWindow } from '../../../types/executions';
import type { assentWindows } from '../schema';
import type { Expect, SameColumns } from '../same-type';
import { emitEvent } from './events';

export type { AssentWindow };

// AssentWindow (src/lib/types, what the chat gets) copies the table's columns: held to them.
type _AssentWindowColumns = Expect<SameColumns<AssentWindow, typeof assentWindows.$inferSelect>>;

const columns = (sql: Sql | TransactionSql) => sql`id, session_id as "sessionId", opened_at as "openedAt", expires_at as "expiresAt", continuations`;

/** The session's open assent window, if any. */
export async function activeWindow(sql: Sql | TransactionSql, sessionId: string): Promise<AssentWindow | null> {
	const [row] = await sql<AssentWindow[]>`
		select ${columns(sql)} from assent_windows
		where session_id = ${sessionId} and revoked_at is null and expires_at > now()
		order by expires_at desc limit 1`;
	return row ?? null;
}

/**
 * Opens the session's assent window, or extends the open one, after an approval by any route.
 * While it is open, finished executions re-invoke the agent automatically.
 */
export async function openWindow(tx: TransactionSql, sessionId: string, operatorId: string | null, minutes: number): Promise<void> {
	const extended = await tx`
		update assent_windows set expires_at = now() + make_interval(secs => ${minutes * 60})
		where session_id = ${sessionId} and revoked_at is null and expires_at > now() returning id`;
	if (!extended.length) {
		await tx`insert into assent_windows (session_id, opened_by, expires_at)
			values (${sessionId}, ${operatorId}, now() + make_interval(secs => ${minutes * 60}))`;
	}
	await emitEvent(tx, { sessionId, type: 'assent.updated', payload: { open: true, by: operatorId } });
}

export async function revokeWindow(tx: TransactionSql, sessionId: string, operatorId: string): Promise<boolean> {
	const rows =
		await tx`update assent_windows set revoked_at = now() where session_id = ${sessionId} and revoked_at is null and expires_at > now() returning id`;
	if (rows.length) await emitEvent(tx, { sessionId, type: 'assent.updated', payload: { open: false, by: operatorId } });
	return rows.length > 0;
}

/**
 * Ends the session's open assent window with a plan that has just ended, unless something else
 * of the session still runs (an approved or running execution outside the plan, another running
 * plan): "continues by itself" no longer holds once the plan is over. It ends by expiry, not
 * revocation, so the plan's report still reaches the agent (continuation.ts: the plan's approval
 * covers it unless the operator revoked the window). True when a window was ended.
 */
export async function endWindowWithPlan(tx: TransactionSql, sessionId: string, planId: string): Promise<boolean> {
	const rows = await tx`
		update assent_windows set expires_at = now()
		where session_id = ${sessionId} and revoked_at is null and expires_at > now()
			and not exists (select 1 from executions e where e.requested_by_session = ${sessionId} and e.status in ('approved', 'running')
				and e.plan_id is distinct from ${planId}::uuid)
			and not exists (select 1 from plans p where p.session_id = ${sessionId} and p.status = 'approved' and p.id <> ${planId}::uuid)
		returning id`;
	if (rows.length) await emitEvent(tx, { sessionId, type: 'assent.updated', payload: { open: false, by: null } });
	return rows.length > 0;
}

/** Counts one automatic continuation against the window. */
export async function countContinuation(tx: TransactionSql, windowId: string): Promise<void> {
	await tx`update assent_windows set continuations = continuations + 1 where id = ${windowId}`;
}

/** Whether the operator revoked the session's assent window after `since` (ISO 8601). */
export async function revokedSince(sql: Sql | TransactionSql, sessionId: string, since: string): Promise<boolean> {
	const rows = await sql`select 1 from assent_windows where session_id = ${sessionId} and revoked_at > ${since}::timestamptz limit 1`;
	return rows.length > 0;
}
