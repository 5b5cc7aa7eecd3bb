import { hash, verify } from '@node-rs/argon2';

/** argon2 runs at most this many at once per process (each takes ~19 MiB and a core for ~50 ms). */
const MAX_RUNNING = 2;
/** Callers beyond this many waiting are refused at once instead of queueing without bound. */
const MAX_WAITING = 32;

let running = 0;
const waiting: Array<() => void> = [];

/** Thrown when too many password checks are already queued: answer "busy, retry" instead. */
export class PasswordBusyError extends Error {
	constructor() {
		super('too many sign-in attempts are being checked right now');
	}
}

async function limited<T>(work: () => Promise<T>): Promise<T> {
	if (running >= MAX_RUNNING) {
		if (waiting.length >= MAX_WAITING) throw new PasswordBusyError();
		await new Promise<void>((resolve) => waiting.push(resolve));
	} else running++;
	try {
		return await work();
	} finally {
		const next = waiting.shift();
		if (next) next();
		else running--;
	}
}

/** argon2id with the library's defaults (19 MiB, 2 passes). */
export function hashPassword(password: string): Promise<string> {
	return limited(() => hash(password));
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
	return limited(async () => {
		try {
			return await verify(passwordHash, password);
		} catch {
			return false;
		}
	});
}

/** How many password checks run or wait now (for tests and the bench). */
export function passwordWork(): { running: number; waiting: number } {
	return { running, waiting: waiting.length };
}
