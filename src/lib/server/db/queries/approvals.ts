import type { Sql, TransactionSql } from '../index';

/**
 * How a decision arrived, as the server saw it: a browser click on a chat card (`button`) or on
 * Ops (`ops`), typed in chat (`chat`), a plan's approval (`plan`), the HTTP API with a token
 * (`rest`), or `rule:<id>`: approved at request time by an always-allow rule (see executions/allow-rules.ts).
 */
export type ApprovalRoute = 'button' | 'ops' | 'chat' | 'plan' | 'rest' | `rule:${string}`;

/** Records who decided an execution, how, and for which hash (append-only; see 0003_trust.sql). */
export async function insertApproval(
	tx: TransactionSql,
	a: { executionId: string; hash: string; decision: 'approved' | 'denied'; route: ApprovalRoute; reason?: string | null; decidedBy: string | null; messageId?: string | null }
): Promise<void> {
	await tx`insert into approvals (execution_id, hash, decision, route, reason, decided_by, message_id)
		values (${a.executionId}, ${a.hash}, ${a.decision}, ${a.route}, ${a.reason ?? null}, ${a.decidedBy}, ${a.messageId ?? null})`;
}

/** The hash the execution's approval names, or null when nothing approved it. */
export async function approvedHash(sql: Sql | TransactionSql, executionId: string): Promise<string | null> {
	const [a] = await sql<{ hash: string }[]>`select hash from approvals where execution_id = ${executionId} and decision = 'approved'`;
	return a?.hash ?? null;
}
