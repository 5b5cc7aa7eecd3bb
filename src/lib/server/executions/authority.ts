import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import type { ApiTokenAuth } from '../db/queries/api-tokens';
import { requesterTokenOf } from '../db/queries/executions';
import { needsPerson } from '../proxmox/actions';
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

/** Whether a session's password is recent enough for an irreversible approval (NOMOS_STEP_UP_MIN). */
export function recentlyVerified(verifiedAt: string | null, now = Date.now()): boolean {
	return !!verifiedAt && now - Date.parse(verifiedAt) < env().NOMOS_STEP_UP_MIN * 60_000;
}

/**
 * Who may approve what. Approval exists to put a person between an AI's request and the host:
 * - a browser session approves anything; a destructive or irreversible action (needsPerson)
 *   only when the password was given within NOMOS_STEP_UP_MIN minutes (else: step up);
 * - an API token approves only with scope `approve`, never an action that needs a person, and
 *   never a request made with that same token (an MCP client never approves its own request);
 * - denying runs nothing: any credential that may change things may deny.
 * Throws NotAllowed; the caller's transaction then writes nothing.
 */
export function assertMayApprove(e: { action: string; requestedWithToken: string | null }, c: Credential, now = Date.now()): void {
	if (c.kind === 'session') {
		if (needsPerson(e.action) && !recentlyVerified(c.verifiedAt, now)) {
			throw new NotAllowed(`Approving ${e.action} cannot be undone: confirm your password first (asked again after ${env().NOMOS_STEP_UP_MIN} min).`, true);
		}
		return;
	}
	const t = c.token;
	if (t.scope !== 'approve') {
		throw new NotAllowed(`The API token “${t.name}” has scope ${t.scope}: it may deny but not approve. Approve signed in, or use a token with scope approve.`);
	}
	if (needsPerson(e.action)) throw new NotAllowed(`${e.action} needs a person: no API token approves it. Approve it signed in, in a browser.`);
	if (e.requestedWithToken === t.id) throw new NotAllowed(`This execution was requested with the API token “${t.name}”: a token never approves its own request.`);
}

/** assertMayApprove for a stored execution (its action and the token it was requested with). */
export async function assertMayApproveExecution(sql: Sql | TransactionSql, executionId: string, c: Credential): Promise<void> {
	const e = await requesterTokenOf(sql, executionId);
	if (e) assertMayApprove(e, c);
}
