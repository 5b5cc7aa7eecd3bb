import type { MessageOrigin, MessagePart } from '../types/messages';
import { isNotePart } from './parts';

const BY_ORIGIN: Record<MessageOrigin, string | null> = {
	chat: null,
	answer: 'resumed after your answer',
	approval: 'resumed after the plan was approved',
	denial: 'resumed after the plan was denied',
	continuation: 'continued after an execution finished',
	plan: 'continued after the approved plan ended',
	resume: 'resumed',
	alert: 'investigating an alert',
	schedule: 'running a schedule'
};

/**
 * The small label above an assistant reply that no operator message asked for: what queued its
 * turn (the server's `origin`), and whether Nomos restarted while writing it (its `resumed` note).
 */
export function originLabel(origin: MessageOrigin, parts: MessagePart[]): string | null {
	const restarted = parts.some((p) => isNotePart(p) && p.data.kind === 'resumed');
	const by = BY_ORIGIN[origin] ?? null;
	if (!restarted) return by;
	return by ? `${by} · resumed after a restart` : 'resumed after a restart';
}
