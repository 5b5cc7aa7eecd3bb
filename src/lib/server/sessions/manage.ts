import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { changeSession, lockLiveSession, sessionBusyWith, type SessionChange } from '../db/queries/sessions';
import { configuredModels } from '../agent/provider';
import { Refusal } from '../refusal';

// What an operator does to a session as a whole: rename, pin, archive, choose its model, delete.
// Each change is one transaction that locks the row, writes, and announces it (session.updated),
// so every open tab follows; a deleted session is gone for all of them.

type Actor = { id: string; username?: string };

async function withLiveSession(sessionId: string, f: (tx: TransactionSql, title: string) => Promise<void>): Promise<void> {
	await sql().begin(async (tx) => {
		const row = await lockLiveSession(tx, sessionId);
		if (!row) throw new Refusal('NOT_FOUND', 'That chat session does not exist.');
		await f(tx, row.title);
	});
}

/** The operator's title; from now on the agent never retitles it. */
export function renameSession(sessionId: string, title: string): Promise<void> {
	return withLiveSession(sessionId, (tx) => changeSession(tx, sessionId, { title, titledBy: 'operator' }));
}

export function pinSession(sessionId: string, pinned: boolean): Promise<void> {
	return withLiveSession(sessionId, (tx) => changeSession(tx, sessionId, { pinned }));
}

export function archiveSession(sessionId: string, archived: boolean): Promise<void> {
	return withLiveSession(sessionId, (tx) => changeSession(tx, sessionId, { archived }));
}

/** The model the session's next turns use: one of the configured ones, or null for the default. */
export async function chooseSessionModel(sessionId: string, model: string | null): Promise<void> {
	const models = configuredModels();
	if (model !== null && !models.includes(model)) throw new Refusal('BAD_REQUEST', `"${model}" is not a configured model (${models.join(', ') || 'none'}).`);
	const change: SessionChange = { model: model === models[0] ? null : model };
	await withLiveSession(sessionId, (tx) => changeSession(tx, sessionId, change));
}

/**
 * Hides a session from operators for good: its messages, executions and audit trail stay (the
 * admin review still lists it). Refused while anything in it is still under way (a reply, an
 * approval, a running execution or plan, an open question): deleting it would hide what the
 * operator must still decide or watch. Audited as `session.deleted`.
 */
export function deleteSession(sessionId: string, actor: Actor): Promise<void> {
	return withLiveSession(sessionId, async (tx, title) => {
		const busy = await sessionBusyWith(tx, sessionId);
		if (busy.length) throw new Refusal('CONFLICT', `This chat cannot be deleted yet: ${busy.join(', ')}.`);
		await changeSession(tx, sessionId, { deletedBy: actor.id });
		await recordAudit(tx, { actor, action: 'session.deleted', route: 'chat', subjectType: 'session', subjectId: sessionId, sessionId, detail: { title } });
	});
}
