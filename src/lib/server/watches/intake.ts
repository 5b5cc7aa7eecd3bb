import { createHash, randomUUID } from 'node:crypto';
import { sql } from '../db/index';
import { logger } from '../log';
import { MAX_BODY_BYTES, parseDelivery } from './parse';
import { carriesSecret } from './secret';
import { liveHook } from './hook-cache';
import { HOOK_DELIVERIES_PER_MINUTE, writeDelivery } from './delivery-writer';
import { hookSigningSecret, HookSecretUnsealable } from './sealed-secret';

export { HOOK_DELIVERIES_PER_MINUTE, INTAKE_QUEUE, INTAKE_TASK } from './delivery-writer';

export type IntakeAnswer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

/**
 * One delivery to `POST /api/hooks/<id>`. Threat model: the URL may leak, the body is written by
 * whoever can make the monitored thing say something (a container's hostname, a log line), and
 * deliveries may be replayed or flooded. So: an unknown or revoked hook and a wrong secret get the
 * same kind of short answer with nothing of the body in it or in the log; only authenticated
 * deliveries count against the rate limit (a stranger cannot use up the real sender's budget);
 * the body is bounded before parsing; alert text is kept and shown as untrusted data, never as the
 * operator's words, and the session it opens has no typed assent and no http_get.
 *
 * It answers in milliseconds: the checks that refuse a forged or malformed delivery (secret, size,
 * JSON, shape) run here, against the hook as this process last read it (watches/hook-cache.ts: no
 * lookup per delivery); the body is then stored with its job, in one statement committed with the
 * deliveries that arrived alongside (watches/delivery-writer.ts), and the job applies it
 * (watches/apply.ts: groups, incidents, sessions, turns). 202 means stored: the job is retried
 * until it applied it.
 */
export async function receiveDelivery(hookId: string, headers: Headers, body: Buffer): Promise<IntakeAnswer> {
	const hook = /^[0-9a-f-]{36}$/i.test(hookId) ? await liveHook(hookId) : null;
	if (!hook) return { status: 404, body: { message: 'No such hook.' } };
	const signingSecret = () => (hook.signed ? hookSigningSecret(sql(), hook) : Promise.resolve(null));
	let carries: boolean;
	try {
		carries = await carriesSecret({ secretHash: hook.secretHash, signingSecret }, headers, body);
	} catch (e) {
		if (!(e instanceof HookSecretUnsealable)) throw e;
		// Fails closed: the sender is told only that the secret does not match; the admin reads why in the log.
		logger('watches').error({ hook: hook.id }, e.message);
		carries = false;
	}
	if (!carries) {
		logger('watches').warn({ hook: hook.id, bytes: body.length }, 'alert hook: a delivery without the right secret was refused');
		const how = hook.signed ? 'Authorization: Bearer <secret> or X-Nomos-Signature: sha256=<HMAC of the body>' : 'Authorization: Bearer <secret>';
		return { status: 401, body: { message: `The hook secret does not match (send ${how}).` } };
	}
	if (body.length > MAX_BODY_BYTES) return { status: 413, body: { message: `The body is larger than ${MAX_BODY_BYTES} bytes.` } };
	let json: unknown;
	try {
		json = JSON.parse(body.toString('utf8'));
	} catch {
		return { status: 400, body: { message: 'The body is not JSON.' } };
	}
	const parsed = parseDelivery(hook.kind, json);
	if (!parsed.ok) return { status: 400, body: { message: `Not a ${hook.kind} alert: ${parsed.error}` } };

	const d = await writeDelivery({ id: randomUUID(), hookId: hook.id, body: body.toString('utf8'), bodySha: createHash('sha256').update(body).digest('hex') });
	if (!d) {
		return {
			status: 429,
			body: { message: `More than ${HOOK_DELIVERIES_PER_MINUTE} deliveries this minute; try again later.` },
			headers: { 'retry-after': '60' }
		};
	}
	return { status: 202, body: { accepted: parsed.alerts.length, deliveryId: d.id, duplicate: !!d.duplicateOf } };
}
