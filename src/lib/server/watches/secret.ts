import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new hook secret: 32 random bytes, URL-safe. */
export function newHookSecret(): string {
	return `nomos_hook_${randomBytes(32).toString('base64url')}`;
}

/**
 * What is stored of a hook's secret for `Authorization: Bearer`: hex SHA-256. The secret is 32
 * random bytes, so a plain hash is as strong as a salted slow one here and costs no argon2 queue.
 */
export function hashHookSecret(secret: string): string {
	return createHash('sha256').update(secret).digest('hex');
}

/**
 * What a delivery is checked against: the hash always; for a signed hook, the secret itself,
 * opened from its seal only when a delivery carries a signature (watches/sealed-secret.ts).
 */
export type HookSecret = { secretHash: string; signingSecret: () => Promise<string | null> };

/**
 * Whether a delivery carries the hook's secret: `Authorization: Bearer <secret>` (what Proxmox's
 * and Uptime Kuma's header fields can send; compared by SHA-256 with the stored hash), or, for a
 * hook that keeps its secret (`signed`), `X-Nomos-Signature: sha256=<hex HMAC of the raw body>`
 * (what a script can compute, and what never puts the secret on the wire). Both compared in
 * constant time; a missing or malformed header is simply not a match. A sealed secret that does
 * not open throws (HookSecretUnsealable): the delivery is refused.
 */
export async function carriesSecret(hook: HookSecret, headers: Headers, body: Buffer): Promise<boolean> {
	const auth = headers.get('authorization');
	if (auth && /^bearer /i.test(auth)) {
		const presented = createHash('sha256').update(auth.slice(7).trim()).digest();
		if (same(presented, Buffer.from(hook.secretHash, 'hex'))) return true;
	}
	const sig = headers.get('x-nomos-signature');
	if (!sig || !/^sha256=[0-9a-f]{64}$/i.test(sig.trim())) return false;
	const secret = await hook.signingSecret();
	if (secret === null) return false;
	const want = createHmac('sha256', secret).update(body).digest();
	return same(Buffer.from(sig.trim().slice(7), 'hex'), want);
}

/** The HMAC header value for a body (what senders compute; used by the tests and documented). */
export function signatureOf(secret: string, body: string | Buffer): string {
	return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function same(a: Buffer, b: Buffer): boolean {
	// Lengths differ: compare against itself so the time does not depend on where they differ.
	if (a.length !== b.length) {
		timingSafeEqual(b, b);
		return false;
	}
	return timingSafeEqual(a, b);
}
