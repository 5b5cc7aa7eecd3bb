import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Sql, TransactionSql } from '../db/index';
import { listKeptHookSecrets, storeSealedHookSecret, type KeptHookSecret } from '../db/queries/watches';
import { sealKeys } from '../db/seal';

/*
 * A signed hook's secret at rest (#43 item 6): an HMAC of the body needs the secret itself, so it
 * is kept, but only under AES-256-GCM with a key derived (HKDF, its own label) from the seal key
 * kept outside the database (db/seal.ts), and bound to the hook's id (associated data): someone
 * with only the database or a backup reads nothing, and a value moved to another hook or altered
 * does not open. It is opened only to check an `X-Nomos-Signature` (watches/intake.ts).
 */

const VERSION = 'v1';
const INFO = 'nomos-hook-secret-v1';

/** A sealed secret that does not open: altered in the database, moved from another hook, or sealed with a key no longer configured. */
export class HookSecretUnsealable extends Error {
	constructor(hookId: string) {
		super(
			`The signing secret of alert hook ${hookId} does not open with the seal key (altered in the database, or sealed with a key ` +
				'no longer configured): signed deliveries are refused until an admin rotates its secret in Settings.'
		);
	}
}

const derive = (sealKey: Buffer) => Buffer.from(hkdfSync('sha256', sealKey, Buffer.alloc(0), INFO, 32));

function encrypt(key: Buffer, hookId: string, secret: string): string {
	const iv = randomBytes(12);
	const c = createCipheriv('aes-256-gcm', derive(key), iv);
	c.setAAD(Buffer.from(hookId));
	const ct = Buffer.concat([c.update(secret, 'utf8'), c.final()]);
	return [VERSION, iv, ct, c.getAuthTag()].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

function decrypt(key: Buffer, hookId: string, sealed: string): string | null {
	const parts = sealed.split('.');
	if (parts.length !== 4 || parts[0] !== VERSION) return null;
	const [iv, ct, tag] = parts.slice(1).map((p) => Buffer.from(p, 'base64url'));
	if (iv.length !== 12 || tag.length !== 16) return null;
	try {
		const d = createDecipheriv('aes-256-gcm', derive(key), iv);
		d.setAAD(Buffer.from(hookId));
		d.setAuthTag(tag);
		return Buffer.concat([d.update(ct), d.final()]).toString('utf8');
	} catch {
		return null;
	}
}

/** The hook's secret sealed with the current key. */
export async function sealHookSecret(hookId: string, secret: string): Promise<string> {
	return encrypt((await sealKeys()).current, hookId, secret);
}

/**
 * Opens a sealed secret with the current key, or the previous one during a rotation (`stale`:
 * it should be sealed again with the current key). Throws HookSecretUnsealable when neither opens it.
 */
export async function openHookSecret(hookId: string, sealed: string): Promise<{ secret: string; stale: boolean }> {
	const { current, previous } = await sealKeys();
	const now = decrypt(current, hookId, sealed);
	if (now !== null) return { secret: now, stale: false };
	const old = previous ? decrypt(previous, hookId, sealed) : null;
	if (old !== null) return { secret: old, stale: true };
	throw new HookSecretUnsealable(hookId);
}

/**
 * A signed hook's secret for checking a signature: opened from `secret_sealed` (sealed again
 * with the current key when the previous one opened it), or, for a hook from before 0033 that
 * boot has not reached yet, taken from `secret` and sealed now. Null for a bearer-only hook.
 */
export async function hookSigningSecret(sql: Sql | TransactionSql, hook: KeptHookSecret): Promise<string | null> {
	if (hook.secretSealed !== null) {
		const { secret, stale } = await openHookSecret(hook.id, hook.secretSealed);
		if (stale) await storeSealedHookSecret(sql, hook.id, await sealHookSecret(hook.id, secret), { secretSealed: hook.secretSealed });
		return secret;
	}
	if (hook.secret === null) return null;
	await storeSealedHookSecret(sql, hook.id, await sealHookSecret(hook.id, hook.secret), { secret: hook.secret });
	return hook.secret;
}

/**
 * Seals every hook secret still stored plain (hooks from before 0033) and empties its plain
 * column; seals again with the current key what only the previous key opens. Idempotent (each
 * row changes only if it still holds what was read); boot runs it. A sealed value that opens
 * with neither key is left as it is (signed deliveries to it are refused) and reported.
 */
export async function sealPlainHookSecrets(sql: Sql): Promise<{ sealed: number; resealed: number; unsealable: string[] }> {
	const rows = await listKeptHookSecrets(sql);
	const out = { sealed: 0, resealed: 0, unsealable: [] as string[] };
	for (const r of rows) {
		if (r.secret !== null) {
			if (await storeSealedHookSecret(sql, r.id, await sealHookSecret(r.id, r.secret), { secret: r.secret })) out.sealed++;
			continue;
		}
		try {
			const { secret, stale } = await openHookSecret(r.id, r.secretSealed!);
			if (!stale) continue;
			if (await storeSealedHookSecret(sql, r.id, await sealHookSecret(r.id, secret), { secretSealed: r.secretSealed! })) out.resealed++;
		} catch (e) {
			if (!(e instanceof HookSecretUnsealable)) throw e;
			out.unsealable.push(r.id);
		}
	}
	return out;
}
