/**
 * Re-reads some state when a live event says it changed: one read at a time, and an event that
 * arrives during a read triggers one more read, so the result is never older than the last event.
 */
export function refresher<T>(load: () => Promise<T>, apply: (value: T) => void): () => void {
	let running = false;
	let again = false;
	return () => {
		if (running) {
			again = true;
			return;
		}
		running = true;
		void (async () => {
			try {
				do {
					again = false;
					apply(await load());
				} while (again);
			} catch {
				/* the next event reads again */
			} finally {
				running = false;
			}
		})();
	};
}
