import type { Hub } from '../realtime/hub';

/**
 * Turns running in this process, by session, so a `turn.cancel` event (from any process) can
 * abort the one running here, and a stopping process can hand its turns over. Kept on
 * globalThis so `vite dev` reloads keep one registry.
 */
type Running = { ctrl: AbortController; ended: Promise<void>; end: () => void };
const g = globalThis as unknown as { __nomosActiveTurns?: Map<string, Running> };
const active = (g.__nomosActiveTurns ??= new Map());

/** The abort reason of a turn whose process is stopping: its reply is handed over, not ended. */
export const HAND_OVER = 'nomos:hand-over';

/** Registers a running turn so a `turn.cancel` event can abort it; returns its signal and a release. */
export function trackTurn(sessionId: string): { signal: AbortSignal; release: () => void } {
	const ctrl = new AbortController();
	let end!: () => void;
	const ended = new Promise<void>((resolve) => (end = resolve));
	const entry: Running = { ctrl, ended, end };
	active.set(sessionId, entry);
	return {
		signal: ctrl.signal,
		release: () => {
			entry.end();
			if (active.get(sessionId) === entry) active.delete(sessionId);
		}
	};
}

export function isTurnRunningHere(sessionId: string): boolean {
	return active.has(sessionId);
}

/**
 * For a stopping process (SIGTERM, an upgrade): every turn running here stops writing and hands
 * its reply over (run-turn.ts queues the job that resumes it), so nothing waits for a model and
 * nothing is lost. Resolves when they all have.
 */
export async function handOverTurns(): Promise<void> {
	const running = [...active.values()];
	for (const r of running) r.ctrl.abort(HAND_OVER);
	let timer: NodeJS.Timeout | undefined;
	// A turn stuck outside the model call (a slow query) must not hold the stop up for long.
	await Promise.race([Promise.all(running.map((r) => r.ended)), new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
	clearTimeout(timer);
}

/** Wires cancellation: every process aborts its own running turn when asked. */
export function installTurnCancellation(hub: Hub): () => void {
	return hub.onEvent((e) => {
		if (e.type === 'turn.cancel' && e.sessionId) active.get(e.sessionId)?.ctrl.abort();
	});
}
