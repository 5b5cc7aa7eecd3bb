import { sql as appSql, type Sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { env } from '../env';
import { markSessionVerified, passwordHashOf } from '../db/queries/operators';
import { sleep, throttleBefore, throttleFailure, throttleKeys, throttleSuccess } from './login-throttle';
import { PasswordBusyError, verifyPassword } from './password';

export type PasswordRefusal = { ok: false; code: 'BAD_REQUEST' | 'TOO_MANY_REQUESTS'; message: string };
export type PasswordCheck = { ok: true } | PasswordRefusal;

async function checkOwnPassword(sql: Sql, operatorId: string, password: string): Promise<boolean> {
	const hash = await passwordHashOf(sql, operatorId);
	return !!hash && (await verifyPassword(hash, password));
}

/**
 * A signed-in operator gives their password again (step-up before an irreversible approval, or
 * to mint an API token). Throttled like the sign-in form (login-throttle.ts), so a stolen
 * session cookie is no faster a way to guess the password.
 */
export async function confirmOwnPassword(sql: Sql, op: { id: string; username: string }, password: string, address: string): Promise<PasswordCheck> {
	const keys = throttleKeys(op.username, address);
	const before = await throttleBefore(sql, keys);
	if (before.blockedFor > 0) return { ok: false, code: 'TOO_MANY_REQUESTS', message: `Too many wrong passwords. Try again in ${before.blockedFor} s.` };
	if (before.delayMs > 0) await sleep(before.delayMs);
	let right: boolean;
	try {
		right = await checkOwnPassword(sql, op.id, password);
	} catch (e) {
		if (e instanceof PasswordBusyError)
			return { ok: false, code: 'TOO_MANY_REQUESTS', message: 'Nomos is busy checking other passwords. Try again in a moment.' };
		throw e;
	}
	if (!right) {
		const wait = await throttleFailure(sql, keys, env().NOMOS_LOGIN_BACKOFF_MAX_S);
		return {
			ok: false,
			code: wait > 0 ? 'TOO_MANY_REQUESTS' : 'BAD_REQUEST',
			message: wait > 0 ? `Wrong password. Try again in ${wait} s.` : 'Wrong password.'
		};
	}
	await throttleSuccess(sql, keys);
	return { ok: true };
}

/** Marks the session (by its cookie token) as having given the password now (after confirmOwnPassword), audited. */
export async function markSteppedUp(op: { id: string; username: string }, sessionToken: string, route: string): Promise<void> {
	await appSql().begin(async (tx) => {
		await markSessionVerified(tx, sessionToken);
		await recordAudit(tx, { actor: op, action: 'operator.step_up', route, subjectType: 'operator', subjectId: op.username, detail: {} });
	});
}
