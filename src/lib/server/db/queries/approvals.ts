import { seal, verifySeal } from '../seal';
import type { Sql, TransactionSql } from '../index';

/**
 * How a decision arrived, as the server saw it: a browser click on a chat card (`button`) or on
 * Ops (`ops`), typed in chat (`chat`), a plan's approval (`plan`), the HTTP API with a token
 * (`rest`), or `rule:<id>`: approved at request time by an always-allow rule (see executions/allow-rules.ts).
 */
export type ApprovalRoute = 'button' | 'ops' | 'chat' | 'plan' | 'rest' | `rule:${string}`;

/**
 * Records who decided an execution, how, and for which hash (append-only; see 0003_trust.sql),
 * sealed in the same statement with the key kept outside the database (db/seal.ts): the runner
 * runs nothing whose approval's seal does not verify.
 */
export async function insertApproval(
	tx: TransactionSql,
	a: {
		executionId: string;
		hash: string;
		decision: 'approved' | 'denied';
		route: ApprovalRoute;
		reason?: string | null;
		decidedBy: string | null;
		/** Which credential decided (executions/authority.ts credentialRef): sealed with the rest. */
		credential: string;
		messageId?: string | null;
	}
): Promise<void> {
	const decidedAt = Date.now();
	const mac = await seal({
		executionId: a.executionId,
		hash: a.hash,
		decision: a.decision,
		route: a.route,
		decidedBy: a.decidedBy,
		credential: a.credential,
		decidedAt
	});
	await tx`insert into approvals (execution_id, hash, decision, route, reason, decided_by, credential, message_id, decided_at, mac)
		values (${a.executionId}, ${a.hash}, ${a.decision}, ${a.route}, ${a.reason ?? null}, ${a.decidedBy}, ${a.credential}, ${a.messageId ?? null},
			${new Date(decidedAt).toISOString()}::timestamptz, ${mac})`;
}

/** An execution's approval as stored, with its seal; null when nothing approved it. */
export interface StoredApproval {
	hash: string;
	route: string;
	decidedBy: string | null;
	credential: string | null;
	decidedAt: number;
	mac: string | null;
}

export async function storedApproval(sql: Sql | TransactionSql, executionId: string): Promise<StoredApproval | null> {
	const [a] = await sql<{ hash: string; route: string; decidedBy: string | null; credential: string | null; decidedAt: string; mac: string | null }[]>`
		select hash, route, decided_by::text as "decidedBy", credential, floor(extract(epoch from decided_at) * 1000)::bigint::text as "decidedAt", mac
		from approvals where execution_id = ${executionId} and decision = 'approved'`;
	return a ? { ...a, decidedAt: Number(a.decidedAt) } : null;
}

/** True when the execution's approval names `hash` and its seal verifies (current or previous key). */
export async function approvalVerifies(a: StoredApproval, executionId: string): Promise<boolean> {
	return verifySeal(
		{ executionId, hash: a.hash, decision: 'approved', route: a.route, decidedBy: a.decidedBy, credential: a.credential, decidedAt: a.decidedAt },
		a.mac
	);
}
