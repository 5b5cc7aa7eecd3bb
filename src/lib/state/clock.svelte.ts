/**
 * A ticking clock for countdowns (no data is fetched here: updates arrive over SSE). It only
 * ticks while some component reads it; while it does not tick, `now` is read fresh, and the first
 * user restarts it from the current time (a countdown's first frame is never a stale second).
 */
class Clock {
	#now = $state(Date.now());
	#users = 0;
	#timer: ReturnType<typeof setInterval> | undefined;

	get now(): number {
		const ticked = this.#now;
		return this.#users > 0 ? ticked : Date.now();
	}

	use(): () => void {
		if (this.#users++ === 0) {
			this.#now = Date.now();
			this.#timer = setInterval(() => (this.#now = Date.now()), 1000);
		}
		return () => {
			if (--this.#users === 0) clearInterval(this.#timer);
		};
	}
}

export const clock = new Clock();
