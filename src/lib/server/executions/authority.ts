import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import type { ApiTokenAuth } from '../db/queries/api-tokens';
import { requesterTokenOf } from '../db/queries/executions';
import { needsPerson, personReason } from '../proxmox/actions';
import { env } from '../env';

/**
 * What a decision was made with, as the server saw the request (never as the client says):
 * a signed-in browser session (with when it last gave the password) or an API token.
 */
export type Credential = { kind: 'session'; verifiedAt: string | null } | { kind: 'token'; token: Pick<ApiTokenAuth, 'id' | 'name' | 'scope'> };

/** A decision this credential may not make; `stepUp` when giving the password again would allow it. */
export class NotAllowed extends Error {
	constructor(
		message: string,
		readonly stepUp = false
	) {
		super(message);
	}
}

/** The credential of a request: its token when it used one, else its browser session. */
export function credentialOf(r: { apiToken?: ApiTokenAuth | null; sessionVerifiedAt?: string | null }): Credential {
	return r.apiToken ? { kind: 'token', token: r.apiToken } : { kind: 'session', verifiedAt: r.sessionVerifiedAt ?? null };
}

/**
 * What an approval records (and seals) of the credential that made it: `token:<id>` for an API
 * token, `session` for a signed-in browser (the operator is recorded beside it).
 */
export function credentialRef(c: Credential): string {
	return c.kind === 'token' ? `token:${c.token.id}` : 'session';
}

/** Whether a session's password is recent enough for an irreversible approval (NOMOS_STEP_UP_MIN). */
export function recentlyVerified(verifiedAt: string | null, now = Date.now()): boolean {
	return !!verifiedAt && now - Date.parse(verifiedAt) < env().NOMOS_STEP_UP_MIN * 60_000;
}

/**
 * How an approval arrives: a click (chat card, Ops, Approve with edits, a plan's Approve, tRPC
 * or REST with a token), typed words in the chat (`typed`), or a standing always-allow rule
 * (`rule`). A plan's steps are approved by the click on the plan (each step checked as that click).
 */
export type ApprovalWay = 'click' | 'typed' | 'rule';

/** What an approval is of: the action, and the API token whose messages caused the request (when one did). */
export type ApprovalSubject = { action: string; requestedWithToken: string | null };

export type ApprovalVerdict = { ok: true } | { ok: false; reason: string; stepUp: boolean };

/**
 * The one definition of who may approve what; every route asks it (tRPC and REST decisions,
 * edits, plans, typed assent, always-allow rules, API tokens, MCP requests). What needs a person
 * is `needsPerson` (proxmox/actions.ts: destructive or irreversible), and such an action is
 * approved only by a click in a signed-in browser whose password is recent:
 * - a browser session's click approves anything; what needs a person only when the password was
 *   given within NOMOS_STEP_UP_MIN minutes (else: step up);
 * - typing approves nothing that needs a person, whatever the credential;
 * - a rule never approves what needs a person;
 * - an API token approves only with scope `approve`, never what needs a person, and never a
 *   request its own messages caused (an MCP request, or anything the agent asked for in a turn
 *   that token's chat message started: `requestedWithToken`).
 * Denying runs nothing: any credential that may change things may deny.
 */
export function approvalVerdict(e: ApprovalSubject, way: ApprovalWay, c: Credential | null, now = Date.now()): ApprovalVerdict {
	const no = (reason: string, stepUp = false): ApprovalVerdict => ({ ok: false, reason, stepUp });
	const person = needsPerson(e.action);
	if (way === 'rule') return person ? no(`${e.action} needs a person: no rule approves it.`) : { ok: true };
	if (way === 'typed' && person) return no(`${e.action} needs a person: typing never approves it. Click its Approve button on the card or on Ops.`);
	if (!c) return no('No credential.');
	if (c.kind === 'session') {
		if (person && !recentlyVerified(c.verifiedAt, now))
			return no(`Approving ${e.action}: it ${personReason(e.action)}; confirm your password first (asked again after ${env().NOMOS_STEP_UP_MIN} min).`, true);
		return { ok: true };
	}
	const t = c.token;
	if (t.scope !== 'approve')
		return no(`The API token “${t.name}” has scope ${t.scope}: it may deny but not approve. Approve signed in, or use a token with scope approve.`);
	if (person) return no(`${e.action} needs a person: no API token approves it. Approve it signed in, in a browser.`);
	if (e.requestedWithToken === t.id)
		return no(
			`This was requested with the API token “${t.name}” (by its MCP client, or in a turn its message started): a token never approves its own request, nor what its own messages caused.`
		);
	return { ok: true };
}

/** approvalVerdict that throws NotAllowed; the caller's transaction then writes nothing. */
export function assertMayApprove(e: ApprovalSubject, c: Credential, way: Exclude<ApprovalWay, 'rule'> = 'click', now = Date.now()): void {
	const v = approvalVerdict(e, way, c, now);
	if (!v.ok) throw new NotAllowed(v.reason, v.stepUp);
}

/** assertMayApprove for a stored execution (its action and the token it was requested with). */
export async function assertMayApproveExecution(
	sql: Sql | TransactionSql,
	executionId: string,
	c: Credential,
	way: Exclude<ApprovalWay, 'rule'> = 'click'
): Promise<void> {
	const e = await requesterTokenOf(sql, executionId);
	if (e) assertMayApprove(e, c, way);
}
