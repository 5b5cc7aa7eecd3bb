import type { MessageDelta, MessageRow } from '../types/messages';

/** A message as a client holds it (a row, maybe without its timestamps). */
export type HeldMessage = Pick<MessageRow, 'id' | 'parts' | 'rev' | 'status' | 'error'>;

/**
 * What a client does with one `message.delta` for the message it holds: skip a delta it already
 * has (`rev` not newer), fold the next one, and report a gap for anything else (a delta for a
 * message it lacks or one that skips a rev), after which it must reload the message. Both the
 * browser (state/chat.svelte.ts) and the tests' SSE clients use this.
 */
export async function applyDelta<M extends HeldMessage>(held: M | undefined, d: MessageDelta): Promise<M | 'skip' | 'gap'> {
	if (held && d.rev <= held.rev) return 'skip';
	if (!held || d.rev !== held.rev + 1) return 'gap';
	// Loaded when the first delta arrives: a page without a live turn never loads the SDK.
	const { foldChunks } = await import('./fold');
	const parts = await foldChunks(held.parts, d.chunks).catch(() => null);
	if (!parts) return 'gap';
	return { ...held, parts, rev: d.rev, ...(d.status ? { status: d.status, error: d.error ?? null } : {}) };
}

/** A snapshot (`message.updated`, a reload) replaces what a client holds unless it holds a newer rev. */
export function newerSnapshot<M extends HeldMessage>(held: M | undefined, snapshot: M): boolean {
	return !held || snapshot.rev >= held.rev;
}
