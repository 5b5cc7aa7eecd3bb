import type { TransactionSql } from 'postgres';
import { recordAudit } from '../db/queries/audit';
import { getHostByName } from '../db/queries/hosts';
import {
	ctHostname,
	getAllowRule,
	insertAllowRule,
	listActiveAllowRules,
	lockActiveRulesFor,
	revokeAllowRule,
	updateAllowRule,
	type ActiveRule
} from '../db/queries/allow-rules';
import { ACTIONS, isActionName, personReason } from '../proxmox/actions';
import { approvalVerdict } from './authority';
import { describeParams } from '../proxmox/params-schema';
import { describeRule, globMatches, parsePattern, ruleFields, type ParamConstraint, type RuleFields } from '../../schemas/allow-rules';
import type { ParamSchema } from '../../schemas/param-form';
import { sql as appSql, type Sql } from '../db/index';
import { Refusal } from '../refusal';
import type { PreparedExecution } from './prepare';

// Always-allow rules: admins create them (tRPC admin procedures only: the agent has no tool for
// this), a request that one matches is approved in the transaction that records it.

export type RuleError = { error: string; code: 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT' };
type Operator = { id: string; username: string };

function fieldSchema(action: string, field: string): ParamSchema | undefined {
	if (!isActionName(action)) return undefined;
	const s = describeParams(action).properties?.[field];
	if (!s) return undefined;
	// `.default()`/`.optional()` may wrap the type in anyOf; a constraint needs one plain type.
	return s.anyOf?.length === 1 ? s.anyOf[0] : s;
}

/** Checks a rule against the catalogue: a known, non-destructive mutation; a pattern that fits its scope on a known host; constraints on real fields of fitting types. */
async function checkRule(tx: TransactionSql, raw: RuleFields): Promise<RuleError | ReturnType<typeof ruleFields.parse>> {
	const parsed = ruleFields.safeParse(raw);
	if (!parsed.success) return { error: parsed.error.issues.map((i) => `${i.path.join('.') || 'rule'}: ${i.message}`).join('; '), code: 'BAD_REQUEST' };
	const r = parsed.data;
	if (!isActionName(r.action)) return { error: `unknown action '${r.action}'`, code: 'BAD_REQUEST' };
	const def = ACTIONS[r.action];
	if (def.classification === 'destructive')
		return { error: `${r.action} is destructive: no rule can allow it; each one needs an operator's click`, code: 'BAD_REQUEST' };
	if (!approvalVerdict({ action: r.action, requestedWithToken: null }, 'rule', null).ok)
		return { error: `${r.action} ${personReason(r.action)}: no rule can allow it; each one needs an operator's click`, code: 'BAD_REQUEST' };
	if (def.classification === 'read_only') return { error: `${r.action} is read-only and runs without approval already`, code: 'BAD_REQUEST' };
	const t = parsePattern(r.pattern)!;
	if (t.kind === 'host' && def.scope === 'ct') return { error: `${r.action} runs on a container: use an lxc:<host>/… pattern`, code: 'BAD_REQUEST' };
	if (t.kind !== 'host' && def.scope === 'host') return { error: `${r.action} runs on a host: use host:<host>`, code: 'BAD_REQUEST' };
	if (!(await getHostByName(tx, t.host))) return { error: `unknown host '${t.host}'`, code: 'BAD_REQUEST' };
	const seen = new Set<string>();
	for (const c of r.constraints) {
		const key = `${c.field}:${c.op}`;
		if (seen.has(key)) return { error: `${c.field}: two ${c.op} constraints`, code: 'BAD_REQUEST' };
		seen.add(key);
		const s = c.field === 'vmid' ? undefined : fieldSchema(r.action, c.field);
		if (!s) return { error: `${c.field} is not a param of ${r.action} a rule can constrain`, code: 'BAD_REQUEST' };
		const numeric = s.type === 'integer' || s.type === 'number';
		if (c.op !== 'eq' && !numeric) return { error: `${c.field}: only numbers take ≤ or ≥`, code: 'BAD_REQUEST' };
		if (numeric && typeof c.value !== 'number') return { error: `${c.field}: a number`, code: 'BAD_REQUEST' };
		if (s.type === 'boolean' && typeof c.value !== 'boolean') return { error: `${c.field}: true or false`, code: 'BAD_REQUEST' };
		if (s.type === 'string' && typeof c.value !== 'string') return { error: `${c.field}: text`, code: 'BAD_REQUEST' };
		if (s.enum && !s.enum.includes(c.value)) return { error: `${c.field}: one of ${s.enum.join(', ')}`, code: 'BAD_REQUEST' };
		if (!numeric && s.type !== 'boolean' && s.type !== 'string') return { error: `${c.field} cannot be constrained by a rule`, code: 'BAD_REQUEST' };
	}
	return r;
}

/** Creates a rule (admins only: the caller is an admin procedure) and audits it. */
export async function createRule(tx: TransactionSql, input: RuleFields, by: Operator): Promise<{ id: string } | RuleError> {
	const r = await checkRule(tx, input);
	if ('error' in r) return r;
	const id = await insertAllowRule(tx, r, by.id);
	await recordAudit(tx, { actor: by, action: 'rule.created', route: 'settings', subjectType: 'rule', subjectId: id, detail: { ...r, words: describeRule(r) } });
	return { id };
}

/** Replaces a rule's terms (it keeps its id, so its past approvals still name it). */
export async function editRule(tx: TransactionSql, id: string, input: RuleFields, by: Operator): Promise<{ id: string } | RuleError> {
	const before = await getAllowRule(tx, id);
	if (!before) return { error: 'No such rule.', code: 'NOT_FOUND' };
	const r = await checkRule(tx, input);
	if ('error' in r) return r;
	if (!(await updateAllowRule(tx, id, r))) return { error: 'This rule was revoked; create a new one.', code: 'CONFLICT' };
	await recordAudit(tx, {
		actor: by,
		action: 'rule.edited',
		route: 'settings',
		subjectType: 'rule',
		subjectId: id,
		detail: { before: describeRule(before), after: describeRule(r), rule: r }
	});
	return { id };
}

export async function revokeRule(tx: TransactionSql, id: string, by: Operator): Promise<{ id: string } | RuleError> {
	const before = await getAllowRule(tx, id);
	if (!before) return { error: 'No such rule.', code: 'NOT_FOUND' };
	if (!(await revokeAllowRule(tx, id, by.id))) return { error: 'This rule is already revoked.', code: 'CONFLICT' };
	await recordAudit(tx, { actor: by, action: 'rule.revoked', route: 'settings', subjectType: 'rule', subjectId: id, detail: { words: describeRule(before) } });
	return { id };
}

/** Whether a constraint holds for the final (zod-parsed, defaults applied) params; a missing field never satisfies one. */
export function constraintHolds(c: ParamConstraint, params: Record<string, unknown>): boolean {
	const v = Object.hasOwn(params, c.field) ? params[c.field] : undefined;
	if (c.op === 'eq') return v === c.value;
	if (typeof v !== 'number' || typeof c.value !== 'number' || !Number.isFinite(v)) return false;
	return c.op === 'lte' ? v <= c.value : v >= c.value;
}

async function targetMatches(tx: TransactionSql, pattern: string, p: PreparedExecution): Promise<boolean> {
	const t = parsePattern(pattern);
	if (!t || t.host !== p.hostName) return false;
	if (t.kind === 'host') return p.target === `host:${t.host}` && !p.vmid;
	if (!p.vmid || p.target !== `lxc:${t.host}/${p.vmid}`) return false;
	if (t.kind === 'ct') return t.vmid === p.vmid;
	if (t.kind === 'all-cts') return true;
	const name = await ctHostname(tx, t.host, p.vmid);
	return !!name && globMatches(t.glob, name);
}

/** A RuleError thrown as a Refusal, so the rule's transaction keeps nothing. */
function orRefuse<T>(r: T | RuleError): T {
	if (r && typeof r === 'object' && 'error' in r && 'code' in r) throw new Refusal(r.code, r.error);
	return r;
}

/** createRule in its own transaction (what an admin's form does). */
export const addRule = (input: RuleFields, by: Operator) => appSql().begin(async (tx) => orRefuse(await createRule(tx, input, by)));
/** editRule in its own transaction. */
export const changeRule = (id: string, input: RuleFields, by: Operator) => appSql().begin(async (tx) => orRefuse(await editRule(tx, id, input, by)));
/** revokeRule in its own transaction. */
export const withdrawRule = (id: string, by: Operator) => appSql().begin(async (tx) => orRefuse(await revokeRule(tx, id, by)));

/**
 * The first rule in force that allows this prepared request, share-locked in the caller's
 * transaction (see lockActiveRulesFor), or null. Read-only requests and those that need a person
 * (destructive, irreversible) never match.
 */
export async function matchingRule(tx: TransactionSql, p: PreparedExecution): Promise<ActiveRule | null> {
	if (p.classification !== 'config_mutation' || ACTIONS[p.action].classification !== 'config_mutation') return null;
	if (!approvalVerdict({ action: p.action, requestedWithToken: null }, 'rule', null).ok) return null;
	for (const r of await lockActiveRulesFor(tx, p.action)) {
		if (r.action !== p.action) continue;
		if (!(await targetMatches(tx, r.pattern, p))) continue;
		if (r.constraints.every((c) => constraintHolds(c, p.params))) return r;
	}
	return null;
}

/** The rules in force, in plain words, for the agent's instructions (empty when none). */
export async function rulesForAgent(sql: Sql): Promise<string> {
	const rules = await listActiveAllowRules(sql);
	if (!rules.length) return '';
	return [
		'',
		'## Always-allow rules in force',
		'An admin set these rules; a request_execution they match is approved at once and runs without waiting (its result says "approved by rule"). Everything else still waits for the operator. You cannot create or change rules; only an admin can, in Settings.',
		...rules.map((r) => `- ${describeRule(r)}`)
	].join('\n');
}
