import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { AuditEntry, AuditFilter } from '../../../schemas/audit';
import type { auditLog } from '../schema';
import type { Expect, Same } from '../same-type';

export type { AuditEntry, AuditFilter };

// AuditEntry (src/lib/schemas, what the audit page gets) is the table's row: held to it.
type _AuditEntryColumns = Expect<Same<AuditEntry, typeof auditLog.$inferSelect>>;

export type AuditInput = {
	actor: { id: string; username?: string } | null;
	action: string;
	route: string;
	subjectType?: string | null;
	subjectId?: string | null;
	sessionId?: string | null;
	detail?: Record<string, unknown>;
};

/**
 * Appends one entry to the audit trail inside the caller's transaction, so the change and its
 * record commit together (or neither does). The actor's username is copied so the entry still
 * reads right after the account is renamed or disabled.
 */
export async function recordAudit(tx: TransactionSql | Sql, a: AuditInput): Promise<void> {
	const actorId = a.actor?.id ?? null;
	await tx`
		insert into audit_log (actor_id, actor_name, action, route, subject_type, subject_id, session_id, detail)
		values (${actorId},
			coalesce(${a.actor?.username ?? null}::text, (select username from operators where id = ${actorId}::uuid)),
			${a.action}, ${a.route}, ${a.subjectType ?? null}, ${a.subjectId ?? null}, ${a.sessionId ?? null},
			${JSON.stringify(a.detail ?? {})}::text::jsonb)`;
}

/** Audit entries newest first, filtered; `limit` rows at most. Timestamps as ISO text. */
export async function listAudit(sql: Sql, f: AuditFilter, limit = 500): Promise<AuditEntry[]> {
	const like = f.q ? `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
	return sql<AuditEntry[]>`
		select id::int as id, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
			actor_id as "actorId", actor_name as "actorName", action, route,
			subject_type as "subjectType", subject_id as "subjectId", session_id as "sessionId", detail
		from audit_log
		where true
			${f.action ? sql`and (action = ${f.action} or action like ${f.action + '.%'})` : sql``}
			${f.actor ? sql`and actor_name = ${f.actor}` : sql``}
			${f.route === 'rule' ? sql`and route like 'rule:%'` : f.route ? sql`and route = ${f.route}` : sql``}
			${f.from ? sql`and at >= ${f.from}::date` : sql``}
			${f.to ? sql`and at < ${f.to}::date + 1` : sql``}
			${like ? sql`and (detail::text ilike ${like} or subject_id ilike ${like})` : sql``}
		order by id desc
		limit ${limit}`;
}
