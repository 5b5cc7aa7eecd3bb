// The operator's side of the chaos bench: signs in once and calls the tRPC procedures the UI calls,
// each time through a random live web process (as a browser would reconnect to whichever backend
// a load balancer hands it after one died).
import type { Random } from './random';

export type CallResult<T> =
	| { kind: 'ok'; data: T }
	/** The server answered with an error (a refusal, a conflict). */
	| { kind: 'refused'; status: number; code: string; message: string; stepUp: boolean }
	/** No answer: the process died or was not listening. Whether the call took effect is unknown. */
	| { kind: 'unreachable'; error: string };

/** Signs in through the login form (as the browser posts it) and returns the session cookie. */
export async function signIn(base: string, username: string, password: string): Promise<string> {
	const res = await fetch(`${base}/login`, {
		method: 'POST',
		headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', origin: base },
		body: new URLSearchParams({ username, password }).toString(),
		redirect: 'manual',
		signal: AbortSignal.timeout(30_000)
	});
	const cookie = res.headers.getSetCookie().find((c) => c.startsWith('nomos_session='));
	if (res.status !== 303 || !cookie) throw new Error(`sign-in at ${base} failed: HTTP ${res.status} ${await res.text()}`);
	return cookie.split(';')[0];
}

export class Operator {
	/** Calls that found no process to answer them (each one made the operator try again elsewhere). */
	unreachable = 0;

	constructor(
		private readonly cookie: string,
		private readonly bases: () => string[],
		private readonly random: Random,
		private readonly password: string
	) {}

	/** Gives the password again (the step-up dialog an approval that cannot be undone asks for after NOMOS_STEP_UP_MIN). */
	confirmPassword(): Promise<CallResult<{ ok: true }>> {
		return this.mutate('operators.confirmPassword', { password: this.password });
	}

	/** One tRPC mutation (POST /trpc/<procedure>, the input as the body) through a random live web process. */
	async mutate<T>(procedure: string, input: unknown): Promise<CallResult<T>> {
		const live = this.bases();
		if (!live.length) {
			this.unreachable++;
			return { kind: 'unreachable', error: 'no web process is up' };
		}
		const base = this.random.pick(live);
		try {
			const res = await fetch(`${base}/trpc/${procedure}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', cookie: this.cookie, origin: base },
				body: JSON.stringify(input),
				signal: AbortSignal.timeout(30_000)
			});
			const body = (await res.json().catch(() => null)) as {
				result?: { data: T };
				error?: { message: string; data?: { code?: string; stepUp?: boolean } };
			} | null;
			if (res.ok && body?.result) return { kind: 'ok', data: body.result.data };
			// A process still starting or stopping answers 5xx without a tRPC body: as good as gone.
			if (!body?.error) {
				this.unreachable++;
				return { kind: 'unreachable', error: `HTTP ${res.status} from ${base}` };
			}
			return {
				kind: 'refused',
				status: res.status,
				code: body.error.data?.code ?? 'UNKNOWN',
				message: body.error.message,
				stepUp: body.error.data?.stepUp === true
			};
		} catch (e) {
			this.unreachable++;
			return { kind: 'unreachable', error: `${base}: ${(e as Error).message}` };
		}
	}
}
