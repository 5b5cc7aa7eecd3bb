import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { changeSession, lockLiveSession, sessionAudiences, sessionBusyWith, type SessionChange } from '../db/queries/sessions';
import { configuredModels } from '../agent/provider';
import { Refusal } from '../refusal';
import { requireWrite, type Viewer } from '../access/sessions';
import type { SessionSharing } from '../db/schema';

// What an operator does to a session as a whole: rename, pin, archive, choose its model, delete.
// Each change is one transaction that locks the row, writes, and announces it (session.updated),
// so every open tab follows; a deleted session is gone for all of them.

type Actor = Viewer & { username?: string };

/** Locks the live session and checks the actor may write it (access/sessions.ts) before `f` changes it. */
async function withLiveSession(sessionId: string, actor: Viewer, f: (tx: TransactionSql, title: string) => Promise<void>): Promise<void> {
	await sql().begin(async (tx) => {
		const row = await lockLiveSession(tx, sessionId);
		if (!row) throw new Refusal('NOT_FOUND', 'That chat session does not exist.');
		await requireWrite(tx, sessionId, actor);
		await f(tx, row.title);
	});
}

/** The operator's title; from now on the agent never retitles it. */
export function renameSession(sessionId: string, actor: Viewer, title: string): Promise<void> {
	return withLiveSession(sessionId, actor, (tx) => changeSession(tx, sessionId, { title, titledBy: 'operator' }));
}

export function pinSession(sessionId: string, actor: Viewer, pinned: boolean): Promise<void> {
	return withLiveSession(sessionId, actor, (tx) => changeSession(tx, sessionId, { pinned }));
}

export function archiveSession(sessionId: string, actor: Viewer, archived: boolean): Promise<void> {
	return withLiveSession(sessionId, actor, (tx) => changeSession(tx, sessionId, { archived }));
}

/**
 * Shares a session with every operator (read-only or read-write) or stops sharing it: its owner's
 * choice only (an admin's for a session without an owner). Audited as `session.shared`.
 */
export function shareSession(sessionId: string, actor: Actor, shared: SessionSharing | null): Promise<void> {
	return withLiveSession(sessionId, actor, async (tx) => {
		const [row] = await sessionAudiences(tx, [sessionId]);
		const owns = row.ownerId === actor.id || (row.ownerId === null && actor.role === 'admin');
		if (!owns) throw new Refusal('FORBIDDEN', 'Only the owner of a chat shares it.');
		await changeSession(tx, sessionId, { shared });
		await recordAudit(tx, { actor, action: 'session.shared', route: 'chat', subjectType: 'session', subjectId: sessionId, sessionId, detail: { shared } });
	});
}

/** The model the session's next turns use: one of the configured ones, or null for the default. */
export async function chooseSessionModel(sessionId: string, actor: Viewer, model: string | null): Promise<void> {
	const models = configuredModels();
	if (model !== null && !models.includes(model)) throw new Refusal('BAD_REQUEST', `"${model}" is not a configured model (${models.join(', ') || 'none'}).`);
	const change: SessionChange = { model: model === models[0] ? null : model };
	await withLiveSession(sessionId, actor, (tx) => changeSession(tx, sessionId, change));
}

/**
 * Hides a session from operators for good: its messages, executions and audit trail stay (the
 * admin review still lists it). Refused while anything in it is still under way (a reply, an
 * approval, a running execution or plan, an open question): deleting it would hide what the
 * operator must still decide or watch. Audited as `session.deleted`.
 */
export function deleteSession(sessionId: string, actor: Actor): Promise<void> {
	return withLiveSession(sessionId, actor, async (tx, title) => {
		const busy = await sessionBusyWith(tx, sessionId);
		if (busy.length) throw new Refusal('CONFLICT', `This chat cannot be deleted yet: ${busy.join(', ')}.`);
		await changeSession(tx, sessionId, { deletedBy: actor.id });
		await recordAudit(tx, { actor, action: 'session.deleted', route: 'chat', subjectType: 'session', subjectId: sessionId, sessionId, detail: { title } });
	});
}
