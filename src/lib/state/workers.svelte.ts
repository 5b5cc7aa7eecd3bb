import { getContext, setContext } from 'svelte';
import type { LiveEvents } from './live-events.svelte';
import { refresher } from './refresher';
import { trpc } from '$lib/trpc';

const KEY = Symbol('worker-presence');

/** Whether any worker process is alive, kept current by `workers.changed` events. */
export class WorkerPresence {
	#alive = $state(0);

	constructor(initial: number) {
		this.#alive = initial;
	}

	get alive(): number {
		return this.#alive;
	}

	get none(): boolean {
		return this.#alive === 0;
	}

	/** Follows the fleet stream; returns the unsubscribe function. */
	follow(events: LiveEvents): () => void {
		return events.on(
			'workers.changed',
			refresher(
				() => trpc().system.workers.query(),
				(r) => (this.#alive = r.alive)
			)
		);
	}
}

export function setWorkerPresence(p: WorkerPresence): WorkerPresence {
	return setContext(KEY, p);
}

export function workerPresence(): WorkerPresence {
	return getContext<WorkerPresence>(KEY);
}
