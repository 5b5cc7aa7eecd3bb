import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { addSystemNote } from '../conversation/notes';
import { env } from '../env';
import { runningPlanStep } from '../db/queries/plans';
import { prepareExecution, type PrepareError } from './prepare';
import { decideExecution } from './lifecycle';
import { matchingRule } from './allow-rules';
import { describeRule } from '../../schemas/allow-rules';
import { getExecution, insertExecution, liveFollowUpOf, lockForFollowUp, setRequester, type ExecutionRow } from '../db/queries/executions';
import { runExecution } from './runner';
import { getHostByName } from '../db/queries/hosts';
import { hasTwoKeys, keyTarget, type KeyRole } from '../proxmox/key-role';
import { lease } from '../ssh/pool';
import { approvalNotice, queueNotice } from '../notify/notices';
import type { RequestCause } from '../../types/executions';
import { checkBeforeApproval } from './before-approval';

/** Opens (or keeps) the host's pooled connections a mutation will use: the read key's, and its mutation key's when it has one. */
async function warmHost(name: string): Promise<void> {
	const host = await getHostByName(sql(), name).catch(() => null);
	if (!host?.hostKeyFingerprint) return;
	const roles: KeyRole[] = hasTwoKeys(host) ? ['read', 'mutate'] : ['read'];
	for (const role of roles)
		await lease(keyTarget(host, role)).then(
			(l) => l.release(),
			() => undefined
		);
}

export const followUpRefusal = (what: 'retry' | 'rollback', status: string) =>
	`A ${what} of this execution was already asked for (it is ${status.replace('_', ' ')}).`;

/**
 * Who asked, when not the agent (an MCP client, an operator's Retry or Roll back): audited in the
 * request's own transaction as `action` (default `execution.requested`), with `detail` added;
 * `note` names them in a note in the session (kind = route). `tokenId`: the API token the request
 * came with, which then may never approve it (executions/authority.ts).
 */
export type Requester = {
	operator: { id: string; username: string };
	route: string;
	action?: string;
	detail?: Record<string, unknown>;
	note?: string;
	tokenId?: string | null;
};

/**
 * `cannot_run`: recorded, but the host said before approval that it cannot run as asked
 * (execution.beforeApproval says why): nothing asks the operator to approve it, and nothing can.
 */
export type RequestOutcome =
	{ execution: ExecutionRow; via: 'read_only' | 'approval' | 'cannot_run' } | { execution: ExecutionRow; via: 'rule'; ruleId: string; rule: string };

/**
 * Records a requested execution for a session. Read-only actions run right away (their result
 * comes back to the caller); a mutation that is a step of the session's running plan is refused
 * (the plan runs it); a mutation is first checked on its host (before-approval.ts): one the host
 * says cannot run is recorded as such and never approved; one an always-allow rule in force
 * matches is approved by that rule (in the same transaction, the rule share-locked, so a
 * revocation is either before it or after it); anything else waits for the operator. Invalid
 * requests write nothing. `cause`: who caused it (the turn's credential and the outside text it
 * read, executions/cause.ts), kept with it.
 */
export async function requestExecution(
	sessionId: string | null,
	input: unknown,
	opts: { retryOf?: string; requester?: Requester; callKey?: string; cause?: RequestCause | null } = {}
): Promise<RequestOutcome | PrepareError> {
	const prepared = await prepareExecution(input);
	if ('error' in prepared) return prepared;
	const ttlHours = env().NOMOS_APPROVAL_TTL_H;
	const audit = async (tx: TransactionSql, e: ExecutionRow) => {
		if (!opts.requester) return;
		const q = opts.requester;
		await recordAudit(tx, {
			actor: q.operator,
			action: q.action ?? 'execution.requested',
			route: q.route,
			subjectType: 'execution',
			subjectId: e.id,
			sessionId,
			detail: {
				action: prepared.action,
				target: prepared.target,
				hash: prepared.hash,
				command: prepared.commandPreview,
				params: prepared.params,
				reason: prepared.reason,
				...q.detail
			}
		});
		if (q.note && sessionId && e.classification !== 'read_only') {
			await addSystemNote(
				tx,
				sessionId,
				q.route,
				`${q.note} requested execution ${e.id}: ${e.action} on ${e.target}${e.reason ? ` (${e.reason})` : ''}; its card is on Ops`,
				{ executionId: e.id }
			);
		}
	};

	if (prepared.classification === 'read_only') {
		const e = await sql().begin(async (tx) => {
			const row = await insertExecution(tx, prepared, { sessionId: null, status: 'approved', ttlHours, cause: opts.cause });
			await audit(tx, row);
			return row;
		});
		await setRequester(sql(), e.id, sessionId);
		await runExecution(e.id);
		return { execution: (await getExecution(sql(), e.id))!, via: 'read_only' };
	}

	// A step of a plan that is running is run by the plan (executions/plans.ts), never asked for again.
	if (sessionId && !opts.retryOf && !opts.requester) {
		const inPlan = await runningPlanStep(sql(), sessionId, prepared.hash);
		if (inPlan) {
			const { plan, step } = inPlan;
			return {
				error: `this step runs as part of the approved plan "${plan.title}" (step ${step.index + 1} of ${plan.steps.length}); it was not requested again`,
				hint: 'do not request the steps of an approved plan: they run by themselves, and you are re-invoked once when the plan ends'
			};
		}
	}
	// While the operator reads the card, this process opens (or keeps) its connection to the host,
	// so the approved command can start on it. Only a connection: nothing runs.
	if (prepared.hostName) void warmHost(prepared.hostName);
	// Read before anything is written (the reads may take NOMOS_BEFORE_APPROVAL_S; no transaction waits on them).
	const beforeApproval = await checkBeforeApproval(prepared);
	return sql().begin(async (tx) => {
		// A retry or rollback of execution X: one at a time, even for two clicks at the same moment.
		if (opts.retryOf) {
			if (!(await lockForFollowUp(tx, opts.retryOf))) return { error: 'No such execution.' };
			const live = await liveFollowUpOf(tx, opts.retryOf, prepared.action);
			if (live) return { error: followUpRefusal(prepared.action === 'pct_rollback' || prepared.action === 'vm_rollback' ? 'rollback' : 'retry', live.status) };
		}
		// The token whose messages caused it (its MCP client's, a Retry sent with it, a turn its chat started) never approves it.
		const tokenId = opts.requester?.tokenId ?? opts.cause?.tokenId ?? null;
		const e = await insertExecution(tx, prepared, {
			sessionId,
			status: 'awaiting_approval',
			ttlHours,
			retryOf: opts.retryOf,
			callKey: opts.callKey,
			tokenId,
			cause: opts.cause,
			beforeApproval
		});
		await audit(tx, e);
		// Shown for what it is, and for the operator to deny or edit; no notice asks anyone to approve it.
		if (beforeApproval?.outcome === 'cannot_run') return { execution: e, via: 'cannot_run' as const };
		const rule = await matchingRule(tx, prepared);
		if (rule) {
			const words = describeRule(rule);
			const route = `rule:${rule.id}` as const;
			const d = await decideExecution(tx, e.id, { decision: 'approved', route, operatorId: null, credential: route, reason: words });
			if (!d.ok) throw new Error(`approving ${e.id} by rule ${rule.id}: ${d.reason}`);
			await recordAudit(tx, {
				actor: rule.createdBy ? { id: rule.createdBy } : null,
				action: 'execution.approved',
				route,
				subjectType: 'execution',
				subjectId: e.id,
				sessionId,
				detail: {
					action: prepared.action,
					target: prepared.target,
					hash: prepared.hash,
					command: prepared.commandPreview,
					params: prepared.params,
					ruleId: rule.id,
					rule: words
				}
			});
			return { execution: d.execution, via: 'rule' as const, ruleId: rule.id, rule: words };
		}
		await queueNotice(tx, approvalNotice(e));
		return { execution: e, via: 'approval' as const };
	});
}
