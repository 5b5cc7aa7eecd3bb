import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { AllowRule, ParamConstraint } from '../../../schemas/allow-rules';
import type { allowRules } from '../schema';
import type { Expect, SameColumns } from '../same-type';

export type { AllowRule };

// AllowRule (src/lib/schemas, what Settings gets) copies the table's columns: held to them (the
// copy types the constraints; the table's jsonb says only unknown[]).
type _AllowRuleColumns = Expect<SameColumns<Omit<AllowRule, 'constraints'>, typeof allowRules.$inferSelect>>;

/** A rule as the matcher needs it. */
export type ActiveRule = Pick<AllowRule, 'id' | 'action' | 'pattern' | 'constraints' | 'createdBy'>;

const columns = (sql: Sql | TransactionSql) => sql`
	r.id, r.action, r.pattern, r.constraints, r.note, r.created_by as "createdBy",
	(select username from operators o where o.id = r.created_by) as "createdByName",
	r.created_at as "createdAt", r.updated_at as "updatedAt", r.expires_at as "expiresAt", r.revoked_at as "revokedAt",
	(select username from operators o where o.id = r.revoked_by) as "revokedByName",
	(select count(*)::int from approvals a where a.route = 'rule:' || r.id::text) as uses`;

/** Every rule, active ones first, newest first. */
export async function listAllowRules(sql: Sql | TransactionSql): Promise<AllowRule[]> {
	return sql<AllowRule[]>`select ${columns(sql)} from allow_rules r
		order by (r.revoked_at is null and (r.expires_at is null or r.expires_at > now())) desc, r.created_at desc`;
}

export async function getAllowRule(sql: Sql | TransactionSql, id: string): Promise<AllowRule | null> {
	const [r] = await sql<AllowRule[]>`select ${columns(sql)} from allow_rules r where r.id = ${id}`;
	return r ?? null;
}

/** Rules in force now (not revoked, not expired), for the agent's instructions. */
export async function listActiveAllowRules(sql: Sql | TransactionSql): Promise<ActiveRule[]> {
	return sql<ActiveRule[]>`select id, action, pattern, constraints, created_by as "createdBy" from allow_rules
		where revoked_at is null and (expires_at is null or expires_at > now()) order by action, pattern`;
}

/**
 * The rules in force for one action, share-locked until the caller's transaction ends: a
 * revocation or edit (an UPDATE of the row) waits for an approval made under the rule, and a
 * lock taken after a revocation committed re-reads the row and no longer sees it.
 */
export async function lockActiveRulesFor(tx: TransactionSql, action: string): Promise<ActiveRule[]> {
	return tx<ActiveRule[]>`select id, action, pattern, constraints, created_by as "createdBy" from allow_rules
		where action = ${action} and revoked_at is null and (expires_at is null or expires_at > now())
		order by created_at for share`;
}

type RuleValues = { action: string; pattern: string; constraints: ParamConstraint[]; note: string; expiresInHours: number | null };

export async function insertAllowRule(tx: TransactionSql, r: RuleValues, by: string): Promise<string> {
	const [row] = await tx<{ id: string }[]>`insert into allow_rules (action, pattern, constraints, note, created_by, expires_at)
		values (${r.action}, ${r.pattern}, ${JSON.stringify(r.constraints)}::text::jsonb, ${r.note}, ${by},
			case when ${r.expiresInHours}::int is null then null else now() + make_interval(hours => ${r.expiresInHours}::int) end)
		returning id`;
	return row.id;
}

/** Changes a rule that is still in force; false when it is unknown or already revoked. */
export async function updateAllowRule(tx: TransactionSql, id: string, r: RuleValues): Promise<boolean> {
	const rows = await tx`update allow_rules set action = ${r.action}, pattern = ${r.pattern},
			constraints = ${JSON.stringify(r.constraints)}::text::jsonb, note = ${r.note}, updated_at = now(),
			expires_at = case when ${r.expiresInHours}::int is null then null else now() + make_interval(hours => ${r.expiresInHours}::int) end
		where id = ${id} and revoked_at is null returning id`;
	return rows.length === 1;
}

/** Revokes a rule; false when it is unknown or already revoked. */
export async function revokeAllowRule(tx: TransactionSql, id: string, by: string): Promise<boolean> {
	const rows = await tx`update allow_rules set revoked_at = now(), revoked_by = ${by} where id = ${id} and revoked_at is null returning id`;
	return rows.length === 1;
}

/** The hostname the inventory knows for a CT (`strong/101`), or null. */
export async function ctHostname(tx: TransactionSql | Sql, host: string, vmid: string): Promise<string | null> {
	const [r] = await tx<{ name: string }[]>`select name from entities where kind = 'lxc' and external_id = ${`${host}/${vmid}`} limit 1`;
	return r?.name ?? null;
}
