import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { emitEvent } from '../db/queries/events';

export type AssentWindow = { id: string; sessionId: string; openedAt: string; expiresAt: string; continuations: number };

const columns = (sql: Sql | TransactionSql) =>
	sql`id, session_id as "sessionId", opened_at as "openedAt", expires_at as "expiresAt", continuations`;

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
	const rows = await tx`update assent_windows set revoked_at = now() where session_id = ${sessionId} and revoked_at is null and expires_at > now() returning id`;
	if (rows.length) await emitEvent(tx, { sessionId, type: 'assent.updated', payload: { open: false, by: operatorId } });
	return rows.length > 0;
}

const ASSENT = /^(yes|yep|yeah|y|ok|okay|sure|approved?|go( ahead)?|do it|run it|proceed|lgtm|sounds good|go for it|ship it|confirm(ed)?|please do)\b[\s,!.]*((yes|please|go ahead|run (it|them)|do it|approve(d)?|proceed|thanks?|thank you|go for it)[\s,!.]*)*$/i;
const NEGATION = /\b(no|not|don'?t|do not|never|stop|wait|hold|cancel|but|except|instead|change|only|first|later|unless|why|what|how)\b/i;

/**
 * True only for a message that clearly assents and says nothing else ("go ahead", "yes, run it",
 * "approve"). Anything with a question, a condition or a change ("yes but 2 GB") is not assent.
 */
export function isClearAssent(text: string): boolean {
	const t = text.trim();
	if (!t || t.length > 60 || t.includes('?')) return false;
	if (NEGATION.test(t)) return false;
	return ASSENT.test(t);
}
