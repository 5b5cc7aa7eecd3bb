import type { Sql } from '../index';

export type EventInput = {
	sessionId?: string | null;
	type: string;
	payload?: Record<string, unknown>;
};

/**
 * Appends to the event log inside the caller's transaction (pass the transaction's `sql`), so
 * the change and its event commit together; the insert trigger NOTIFYs at commit.
 */
export async function emitEvent(tx: Sql | postgresTx, e: EventInput): Promise<number> {
	const [row] = await tx<{ id: string }[]>`
		insert into events (session_id, type, payload)
		values (${e.sessionId ?? null}, ${e.type}, ${JSON.stringify(e.payload ?? {})}::text::jsonb)
		returning id`;
	return Number(row.id);
}

type postgresTx = import('postgres').TransactionSql;
