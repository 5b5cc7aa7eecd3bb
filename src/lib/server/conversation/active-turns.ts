import type { Hub } from '../realtime/hub';

/**
 * Turns running in this process, by session, so a `turn.cancel` event (from any process) can
 * abort the one running here. Kept on globalThis so `vite dev` reloads keep one registry.
 */
const g = globalThis as unknown as { __nomosActiveTurns?: Map<string, AbortController> };
const active = (g.__nomosActiveTurns ??= new Map());

/** Registers a running turn so a `turn.cancel` event can abort it; returns its signal and a release. */
export function trackTurn(sessionId: string): { signal: AbortSignal; release: () => void } {
	const ctrl = new AbortController();
	active.set(sessionId, ctrl);
	return { signal: ctrl.signal, release: () => active.get(sessionId) === ctrl && active.delete(sessionId) };
}

export function isTurnRunningHere(sessionId: string): boolean {
	return active.has(sessionId);
}

/** Wires cancellation: every process aborts its own running turn when asked. */
export function installTurnCancellation(hub: Hub): () => void {
	return hub.onEvent((e) => {
		if (e.type === 'turn.cancel' && e.sessionId) active.get(e.sessionId)?.abort();
	});
}
