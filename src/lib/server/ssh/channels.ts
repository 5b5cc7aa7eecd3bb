import type { Client } from 'ssh2';

// The channel slots of pooled connections, apart from the pool: client.ts takes a slot for each
// command and pool.ts gives each connection it opens its slots, so neither imports the other.

/** Channel slots per pooled connection (see `channel`). */
const slots = new WeakMap<Client, Semaphore>();

/** Lets at most `n` commands run at once on `client` (the pool calls this for each connection it opens). */
export function limitChannels(client: Client, n: number): void {
	slots.set(client, new Semaphore(n));
}

/** Waits for a free channel on a pooled connection; returns its release (a no-op for connections outside the pool). */
export async function channel(client: Client): Promise<() => void> {
	const s = slots.get(client);
	return s ? s.acquire() : () => undefined;
}

class Semaphore {
	#free: number;
	#waiting: Array<() => void> = [];
	constructor(n: number) {
		this.#free = n;
	}
	async acquire(): Promise<() => void> {
		if (this.#free > 0) this.#free--;
		else await new Promise<void>((r) => this.#waiting.push(r));
		let done = false;
		return () => {
			if (done) return;
			done = true;
			const next = this.#waiting.shift();
			if (next) next();
			else this.#free++;
		};
	}
}
