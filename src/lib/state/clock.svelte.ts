/**
 * A ticking clock for countdowns (no data is fetched here: updates arrive over SSE). It only
 * ticks while some component reads it.
 */
class Clock {
	now = $state(Date.now());
	#users = 0;
	#timer: ReturnType<typeof setInterval> | undefined;

	use(): () => void {
		if (this.#users++ === 0) this.#timer = setInterval(() => (this.now = Date.now()), 1000);
		return () => {
			if (--this.#users === 0) clearInterval(this.#timer);
		};
	}
}

export const clock = new Clock();
