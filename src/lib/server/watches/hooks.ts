import { randomUUID } from 'node:crypto';
import type { HookView } from '../../schemas/watches';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { emitEvent } from '../db/queries/events';
import { dropHookSignature, insertHook, muteGroup, muteHook, revokeHook, setHookSecret, type AlertHookRow } from '../db/queries/watches';
import { Refusal } from '../refusal';
import { hashHookSecret, newHookSecret } from './secret';
import { sealHookSecret } from './sealed-secret';
import { forgetHooks } from './hook-cache';
import type { TransactionSql } from '../db/index';

// Incoming alert hooks as Settings manages them: every change audited in its own transaction; a
// secret is returned once, when it is made, and stored as its hash (and sealed, for a signed hook).

type Actor = { id: string; username: string };

/** A hook as Settings shows it (never its secret). */
export const hookView = (h: AlertHookRow, openGroups = 0): HookView => ({
	id: h.id,
	name: h.name,
	kind: h.kind,
	signed: h.signed,
	path: `/api/hooks/${h.id}`,
	mutedUntil: h.mutedUntil,
	lastReceivedAt: h.lastReceivedAt,
	openGroups
});

const noSuchHook = () => new Refusal('NOT_FOUND', 'No such hook.');

/**
 * A change of hooks in its own transaction, announced in it (`hooks.changed`: every process's
 * intake forgets the hooks it read, watches/hook-cache.ts) and forgotten here at once after the
 * commit, so the next delivery to this process is checked against what was just committed.
 */
async function changeHooks<T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> {
	const r = await sql().begin(async (tx) => {
		const out = await fn(tx);
		await emitEvent(tx, { type: 'hooks.changed', payload: {} });
		return out;
	});
	forgetHooks();
	return r as T;
}

export function createHook(actor: Actor, input: { name: string; kind: AlertHookRow['kind']; signed?: boolean }): Promise<HookView & { secret: string }> {
	return sql().begin(async (tx) => {
		const secret = newHookSecret();
		const id = randomUUID();
		const h = await insertHook(tx, {
			id,
			name: input.name,
			kind: input.kind,
			signed: input.signed ?? false,
			secretSealed: await sealHookSecret(id, secret),
			secretHash: hashHookSecret(secret),
			createdBy: actor.id
		});
		await recordAudit(tx, {
			actor,
			action: 'hook.created',
			route: 'settings',
			subjectType: 'hook',
			subjectId: h.id,
			detail: { name: h.name, kind: h.kind, signed: h.signed }
		});
		return { ...hookView(h), secret };
	});
}

/** A new secret for the hook (the old one stops working at once). */
export function rotateHook(actor: Actor, id: string): Promise<HookView & { secret: string }> {
	return changeHooks(async (tx) => {
		const secret = newHookSecret();
		const h = await setHookSecret(tx, id, { hash: hashHookSecret(secret), sealed: await sealHookSecret(id, secret) });
		if (!h) throw noSuchHook();
		await recordAudit(tx, { actor, action: 'hook.rotated', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name } });
		return { ...hookView(h), secret };
	});
}

/** The hook stops accepting `X-Nomos-Signature` and forgets its sealed secret; bearer deliveries go on unchanged. */
export function makeHookBearerOnly(actor: Actor, id: string): Promise<HookView> {
	return changeHooks(async (tx) => {
		const h = await dropHookSignature(tx, id);
		if (!h) throw noSuchHook();
		await recordAudit(tx, { actor, action: 'hook.bearer_only', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name } });
		return hookView(h);
	});
}

export function removeHook(actor: Actor, id: string): Promise<{ ok: true }> {
	return changeHooks(async (tx) => {
		const h = await revokeHook(tx, id);
		if (!h) throw noSuchHook();
		await recordAudit(tx, { actor, action: 'hook.revoked', route: 'settings', subjectType: 'hook', subjectId: h.id, detail: { name: h.name } });
		return { ok: true as const };
	});
}

/** Mutes the hook for `minutes` (0 unmutes). */
export function setHookMuted(actor: Actor, id: string, minutes: number): Promise<HookView> {
	return changeHooks(async (tx) => {
		const h = await muteHook(tx, id, minutes);
		if (!h) throw noSuchHook();
		await recordAudit(tx, {
			actor,
			action: minutes ? 'hook.muted' : 'hook.unmuted',
			route: 'settings',
			subjectType: 'hook',
			subjectId: h.id,
			detail: { name: h.name, minutes }
		});
		return hookView(h);
	});
}

/** Mutes the alert group behind an investigation (from its chat) for `minutes` (0 unmutes): later firings only count. */
export function setAlertGroupMuted(actor: Actor, sessionId: string, minutes: number): Promise<{ ok: true; mutedUntil: string | null }> {
	return sql().begin(async (tx) => {
		const g = await muteGroup(tx, sessionId, minutes);
		if (!g) throw new Refusal('NOT_FOUND', 'No alert opened this chat.');
		await recordAudit(tx, {
			actor,
			action: minutes ? 'alert.muted' : 'alert.unmuted',
			route: 'chat',
			subjectType: 'alert_group',
			subjectId: g.id,
			sessionId,
			detail: { title: g.title, minutes }
		});
		await emitEvent(tx, { sessionId, type: 'session.updated', payload: { alertMuted: minutes > 0 } });
		return { ok: true as const, mutedUntil: g.mutedUntil };
	});
}
