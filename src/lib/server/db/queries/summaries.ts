import type { Sql } from '../index';
import type { historySummaries } from '../schema';

/** A stored fold of a session's older history (schema.ts `history_summaries`). */
export type HistorySummaryRow = typeof historySummaries.$inferSelect;

export type NewHistorySummary = Omit<HistorySummaryRow, 'id' | 'createdAt'>;

const columns = (sql: Sql) =>
	sql`id, session_id as "sessionId", through_message_id as "throughMessageId", through_seq::float8 as "throughSeq", messages, text, tokens,
	folded_tokens as "foldedTokens", input_tokens as "inputTokens", output_tokens as "outputTokens", model, created_at as "createdAt"`;

/** The summary a turn uses: the session's one that covers the most (each fold extends the one before). */
export async function latestHistorySummary(sql: Sql, sessionId: string): Promise<HistorySummaryRow | null> {
	const [row] = await sql<HistorySummaryRow[]>`
		select ${columns(sql)} from history_summaries where session_id = ${sessionId} order by through_seq desc limit 1`;
	return row ?? null;
}

/** Every summary of the session, oldest fold first (the review shows them). */
export async function listHistorySummaries(sql: Sql, sessionId: string): Promise<HistorySummaryRow[]> {
	return sql<HistorySummaryRow[]>`select ${columns(sql)} from history_summaries where session_id = ${sessionId} order by through_seq`;
}

/**
 * Stores a finished summary in one statement (a summary is never half-written). A fold point
 * already summarised (another process got there first) keeps the first one: null then.
 */
export async function insertHistorySummary(sql: Sql, s: NewHistorySummary): Promise<HistorySummaryRow | null> {
	const [row] = await sql<HistorySummaryRow[]>`
		insert into history_summaries (session_id, through_message_id, through_seq, messages, text, tokens, folded_tokens, input_tokens, output_tokens, model)
		values (${s.sessionId}, ${s.throughMessageId}, ${s.throughSeq}, ${s.messages}, ${s.text}, ${s.tokens}, ${s.foldedTokens}, ${s.inputTokens}, ${s.outputTokens}, ${s.model})
		on conflict (session_id, through_seq) do nothing
		returning ${columns(sql)}`;
	return row ?? null;
}
