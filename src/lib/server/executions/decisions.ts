import type { TransactionSql } from 'postgres';
import { recordAudit } from '../db/queries/audit';
import { env } from '../env';
import { addSystemNote } from '../conversation/notes';
import { requestTurn } from '../conversation/turn-queue';
import { openWindow } from '../db/queries/assent-windows';
import { watchOf } from '../db/queries/watches';
import { decidePlan, getPlan, lockPlanForDecision, planRequesterToken } from '../db/queries/plans';
import { Refusal } from '../refusal';
import { decideExecution, enqueueAdvance, type DecideResult } from './lifecycle';
import { isMcpSession, setTaskState } from '../db/queries/sessions';
import { cannotRunWhy, listAssentCandidates } from '../db/queries/executions';
import { latestRequestedExecutionIds } from '../conversation/messages';
import { resolveTypedAssent, type AssentCandidate } from './typed-assent';
import { approveLabel } from '../../execution-labels';
import { assertMayApprove, assertMayApproveExecution, credentialRef, NotAllowed, type Credential } from './authority';
import type { ApprovalRoute } from '../db/queries/approvals';

/** The API token a decision was made with (id and name; never the token). */
export type ApiTokenRef = { id: string; name: string };

/** What the audit entry of a decision made with an API token adds: which token. */
export function tokenDetail(token: ApiTokenRef | null | undefined): { token?: ApiTokenRef } {
	return token ? { token: { id: token.id, name: token.name } } : {};
}

/** The routes an operator's own decision arrives by (rules and plans decide elsewhere). */
export type OperatorRoute = Extract<ApprovalRoute, 'button' | 'ops' | 'chat' | 'rest'>;

/**
 * The audit route of a decision, from how the request arrived: a click in the browser on a chat
 * card (`button`) or on Ops (`ops`), typed in chat (`chat`), or the HTTP API with a token
 * (`rest`). `surface` comes from the server's reading of the request (see trpc/surface.ts).
 */
export function decisionRoute(c: Credential, surface: 'button' | 'ops' | 'chat'): OperatorRoute {
	if (surface === 'chat') return 'chat';
	return c.kind === 'token' ? 'rest' : surface;
}

const tokenOf = (c: Credential) => (c.kind === 'token' ? c.token : null);

/**
 * An operator's decision on one execution, by any route. Approving is first checked against
 * what the credential may approve (authority.ts: throws NotAllowed, nothing is written); it
 * opens (or extends) the session's assent window; who, when, how (and for chat, which message)
 * goes to the audit trail.
 */
export async function operatorDecides(
	tx: TransactionSql,
	executionId: string,
	d: { decision: 'approved' | 'denied'; route: OperatorRoute; operatorId: string; credential: Credential; reason?: string | null; messageId?: string | null }
): Promise<DecideResult> {
	if (d.decision === 'approved') {
		// What can never run is said as such, before any question of who may approve it (a password asked for nothing).
		const why = await cannotRunWhy(tx, executionId);
		if (why !== null) return { ok: false, reason: 'cannot_run', why, status: 'awaiting_approval' };
		await assertMayApproveExecution(tx, executionId, d.credential, d.route === 'chat' ? 'typed' : 'click');
	}
	const r = await decideExecution(tx, executionId, { ...d, credential: credentialRef(d.credential) });
	if (!r.ok) return r;
	const e = r.execution;
	const sessionId = e.requestedBySession;
	// An MCP chat's results re-invoke no agent (continuation.ts): no window to announce there.
	if (d.decision === 'approved' && sessionId && !(await isMcpSession(tx, sessionId)))
		await openWindow(tx, sessionId, d.operatorId, env().NOMOS_ASSENT_WINDOW_MIN);
	await recordAudit(tx, {
		actor: { id: d.operatorId },
		action: `execution.${d.decision}`,
		route: d.route,
		subjectType: 'execution',
		subjectId: executionId,
		sessionId,
		detail: {
			action: e.action,
			target: e.target,
			hash: e.hash,
			command: e.commandPreview,
			reason: d.reason ?? null,
			messageId: d.messageId ?? null,
			...tokenDetail(tokenOf(d.credential))
		}
	});
	return r;
}

/** What an operator reads when they decide a plan nobody decided in time (the words of an expired execution's). */
export const PLAN_EXPIRED = "This plan's approval has expired; ask the agent to propose it again.";

/**
 * Approving a plan approves exactly its steps (by hash), opens the assent window and starts it
 * (its steps run by themselves, executions/plans.ts); denying tells the agent why. A plan's steps run without another
 * approval, so approving it is approving each step (authority.ts: throws NotAllowed). A plan past
 * its `expires_at` (NOMOS_APPROVAL_TTL_H after it was proposed) is decided by nobody: Refusal,
 * before any question of who may approve it, nothing written. Null: already decided or replaced.
 */
export async function operatorDecidesPlan(
	tx: TransactionSql,
	planId: string,
	d: { decision: 'approved' | 'denied'; operatorId: string; credential: Credential; reason?: string | null }
) {
	// The row stays locked to the decision: the sweep's expiry and a second operator wait, then see it decided.
	const state = await lockPlanForDecision(tx, planId);
	if (state === 'expired') throw new Refusal('CONFLICT', PLAN_EXPIRED);
	if (state !== 'open') return null;
	if (d.decision === 'approved') {
		const requestedWithToken = await planRequesterToken(tx, planId);
		for (const step of (await getPlan(tx, planId))?.steps ?? []) assertMayApprove({ action: step.action, requestedWithToken }, d.credential);
	}
	const plan = await decidePlan(tx, planId, d.decision, d.operatorId, env().NOMOS_APPROVAL_TTL_H);
	if (!plan) return null;
	if (d.decision === 'approved') {
		await openWindow(tx, plan.sessionId, d.operatorId, env().NOMOS_ASSENT_WINDOW_MIN);
		await addSystemNote(
			tx,
			plan.sessionId,
			'plan',
			`The operator approved the plan "${plan.title}" (${plan.steps.length} steps). Its steps run by themselves, in order, each once; the first that does not succeed stops the plan. You are told once, when it has ended.`,
			{ planId }
		);
		await setTaskState(tx, plan.sessionId, 'executing');
		await enqueueAdvance(tx, plan.id);
	} else {
		await addSystemNote(tx, plan.sessionId, 'plan', `The operator denied the plan "${plan.title}"${d.reason ? `: ${d.reason}` : ''}. Nothing was run.`, {
			planId
		});
	}
	await recordAudit(tx, {
		actor: { id: d.operatorId },
		action: `plan.${d.decision}`,
		route: decisionRoute(d.credential, 'button'),
		subjectType: 'plan',
		subjectId: planId,
		sessionId: plan.sessionId,
		detail: {
			title: plan.title,
			steps: plan.steps.map((s) => ({ action: s.action, target: s.target, hash: s.hash, command: s.commandPreview })),
			reason: d.reason ?? null,
			...tokenDetail(tokenOf(d.credential))
		}
	});
	// A denial is told now; an approved plan is told when it has ended (executions/plans.ts).
	if (d.decision === 'denied') await requestTurn(tx, { sessionId: plan.sessionId, origin: 'denial' });
	return plan;
}

const describe = (c: AssentCandidate) => `execution ${c.id} (${c.action} on ${c.target})`;

/**
 * An operator message read as typed assent (see resolveTypedAssent). Approves what it clearly
 * names among the executions on the operator's screen, with route `chat` and the message id in
 * the trail, and leaves a system note naming each one; when it is ambiguous or names an
 * execution that needs a person, nothing of that is approved and the note tells the agent what to do.
 * A message sent with an API token approves only what that token may (authority.ts).
 */
export async function approveByTyping(
	tx: TransactionSql,
	m: { sessionId: string; messageId: string; text: string; shownIds: string[]; operatorId: string; credential: Credential }
): Promise<string[]> {
	const candidates = await listAssentCandidates(tx, m.sessionId, m.shownIds, await latestRequestedExecutionIds(tx, m.sessionId));
	const r = resolveTypedAssent(m.text, candidates);
	if (r.kind === 'none') return [];
	const quoted = `"${m.text.trim()}"`;
	const watch = await watchOf(tx, m.sessionId);
	if (watch) {
		// An alert or a schedule opened this chat with no operator there: nothing here is approved by words.
		const opened = watch.kind === 'alert' ? 'an investigation an alert opened' : 'a chat a schedule opened';
		await addSystemNote(
			tx,
			m.sessionId,
			'assent',
			`The operator typed ${quoted}, but typing approves nothing in ${opened}: nothing was approved. The operator can click Approve on the card.`,
			{ executionIds: [] }
		);
		return [];
	}
	if (r.kind === 'ambiguous') {
		await addSystemNote(
			tx,
			m.sessionId,
			'assent',
			`The operator typed ${quoted} while ${r.candidates.length} executions wait for approval (${r.candidates.map(describe).join(', ')}). Typing approves only what it names, so nothing was approved. Ask the operator which one they mean, or they can click Approve on its card.`,
			{ executionIds: [], ambiguous: r.candidates.map((c) => c.id) }
		);
		return [];
	}
	const approved: AssentCandidate[] = [];
	const notAllowed: string[] = [];
	for (const c of r.approve) {
		try {
			// Checked before anything is written for it, so a refusal leaves the transaction clean.
			const d = await operatorDecides(tx, c.id, {
				decision: 'approved',
				route: 'chat',
				operatorId: m.operatorId,
				messageId: m.messageId,
				credential: m.credential
			});
			if (d.ok) approved.push(c);
			else if (d.reason === 'cannot_run') notAllowed.push(`${describe(c)} was not approved: it cannot run now (${d.why}); it cannot be approved by any route.`);
		} catch (e) {
			if (!(e instanceof NotAllowed)) throw e;
			notAllowed.push(`${describe(c)} was not approved: ${e.message}`);
		}
	}
	const said: string[] = [];
	const token = tokenOf(m.credential);
	const via = token ? ` (sent with API token "${token.name}")` : '';
	if (approved.length) said.push(`The operator approved ${approved.map(describe).join(', ')} by typing ${quoted}${via}.`);
	for (const c of r.refused) {
		const why = await cannotRunWhy(tx, c.id);
		said.push(
			why !== null
				? `${describe(c)} was not approved: it cannot run now (${why}); it cannot be approved by any route.`
				: `${describe(c)} cannot be undone and is never approved by typing; it still waits. The operator must click "${approveLabel(c)}" on its card or on the Ops page.`
		);
	}
	said.push(...notAllowed);
	if (said.length) {
		await addSystemNote(tx, m.sessionId, 'assent', said.join(' '), { executionIds: approved.map((a) => a.id), refused: r.refused.map((c) => c.id) });
	}
	return approved.map((a) => a.id);
}
