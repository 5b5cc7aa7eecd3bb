import type { TransactionSql } from 'postgres';
import { emitEvent } from '../db/queries/events';
import { insertMessage } from '../db/queries/messages';
import { notePart } from '../../messages/parts';

/**
 * Appends a system note message (shown distinct from operator messages; replayed to the model: as
 * `model` when given, else as its text).
 */
export async function addSystemNote(
	tx: TransactionSql,
	sessionId: string,
	kind: string,
	text: string,
	data?: Record<string, unknown>,
	model?: string
): Promise<void> {
	const m = await insertMessage(tx, { sessionId, role: 'system', parts: [notePart(kind, text, data, model)], status: 'complete', origin: 'continuation' });
	await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: m.id } });
}
