import type { ApiTokenScope } from '../../schemas/api-tokens';
import { sql } from '../db/index';
import { insertApiToken, revokeApiToken } from '../db/queries/api-tokens';
import { recordAudit } from '../db/queries/audit';
import { emitEvent } from '../db/queries/events';
import { apiTokenStreamKey } from '../realtime/sse';
import { Refusal } from '../refusal';

type Actor = { id: string; username: string };

/** Mints a personal access token for `actor` (the caller has confirmed their password), audited; the token is in the answer once, only its hash is kept. */
export function mintApiToken(actor: Actor, t: { name: string; scope: ApiTokenScope; days: number }) {
	return sql().begin(async (tx) => {
		const r = await insertApiToken(tx, actor.id, t);
		await recordAudit(tx, {
			actor,
			action: 'api_token.created',
			route: 'settings',
			subjectType: 'api_token',
			subjectId: r.listing.id,
			detail: { name: t.name, scope: t.scope, expiresAt: r.listing.expiresAt }
		});
		return r;
	});
}

/** Revokes one of `actor`'s tokens at once, audited: its requests get 401 and its open event streams end. */
export function revokeOwnApiToken(actor: Actor, id: string): Promise<{ ok: true }> {
	return sql().begin(async (tx) => {
		const r = await revokeApiToken(tx, actor.id, id);
		if (!r) throw new Refusal('NOT_FOUND', 'No such token (or it was already revoked).');
		await emitEvent(tx, { sessionId: null, type: 'auth.revoked', payload: { operatorId: actor.id, only: apiTokenStreamKey(id) } });
		await recordAudit(tx, { actor, action: 'api_token.revoked', route: 'settings', subjectType: 'api_token', subjectId: id, detail: { name: r.name } });
		return { ok: true as const };
	});
}
