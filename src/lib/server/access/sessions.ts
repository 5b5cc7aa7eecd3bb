import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import type { SessionSharing } from '../db/schema';
import { Refusal } from '../refusal';
import { listedSessionIds, sessionAudiences, type Viewer } from '../db/queries/sessions';

export { listedFor, type Viewer } from '../db/queries/sessions';

// Who may do what in a session (issue #43 item 3). A session belongs to its owner
// (chat_sessions.operator_id): they read and write it. Shared with every operator, the others read
// it (`read`) or also write it (`write`: send, answer, rename, approve). Admins read every session
// (the review), read-only; a session without an owner (an alert or schedule whose maker is gone, a
// replay) is the admins' to write. Nobody else learns that it exists: refusals say "no such chat".

export type SessionAccess = 'write' | 'read';
/** The refusal a session someone may not see gets: the same words as one that does not exist. */
export const NOT_YOURS = 'No such chat session (or it is not yours).';
export const READ_ONLY = 'This chat is shared with you read-only: only its owner can do that.';

/** What a viewer may do in a session of this owner and sharing; null: nothing (they do not see it). */
export function accessOf(viewer: Viewer, s: { ownerId: string | null; shared: SessionSharing | null }): SessionAccess | null {
	if (s.ownerId === viewer.id || s.shared === 'write') return 'write';
	if (s.ownerId === null && viewer.role === 'admin') return 'write';
	if (s.shared === 'read' || viewer.role === 'admin') return 'read';
	return null;
}

/** The viewer's access to a live (not deleted) session; null when it does not exist, is deleted or is not theirs. */
export async function sessionAccess(sql: Sql | TransactionSql, sessionId: string, viewer: Viewer): Promise<SessionAccess | null> {
	const [row] = await sessionAudiences(sql, [sessionId]);
	return row && !row.deleted ? accessOf(viewer, row) : null;
}

/** Refuses (NOT_FOUND) unless the viewer may read the session; returns what they may do. */
export async function requireRead(sql: Sql | TransactionSql, sessionId: string, viewer: Viewer): Promise<SessionAccess> {
	const a = await sessionAccess(sql, sessionId, viewer);
	if (!a) throw new Refusal('NOT_FOUND', NOT_YOURS);
	return a;
}

/** Refuses unless the viewer may write the session: NOT_FOUND when they do not see it, FORBIDDEN when read-only. */
export async function requireWrite(sql: Sql | TransactionSql, sessionId: string, viewer: Viewer): Promise<void> {
	if ((await requireRead(sql, sessionId, viewer)) !== 'write') throw new Refusal('FORBIDDEN', READ_ONLY);
}

/** Refuses unless the viewer may act on what a session asked for (an execution's or plan's); none: the fleet's, anyone. */
export async function requireWriteOf(sql: Sql | TransactionSql, sessionId: string | null, viewer: Viewer): Promise<void> {
	if (sessionId === null || viewer.role === 'admin') return;
	await requireWrite(sql, sessionId, viewer);
}

/**
 * The rows (executions, plans) that belong to no session or to one the viewer's lists show: an
 * operator's Ops shows what their own and shared sessions asked for; an admin's, everything.
 */
export async function keepListed<T>(sql: Sql, viewer: Viewer, rows: T[], sessionOf: (r: T) => string | null): Promise<T[]> {
	if (viewer.role === 'admin') return rows;
	const ids = [...new Set(rows.map(sessionOf).filter((x): x is string => x !== null))];
	const listed = await listedSessionIds(sql, viewer, ids);
	return rows.filter((r) => {
		const id = sessionOf(r);
		return id === null || listed.has(id);
	});
}
