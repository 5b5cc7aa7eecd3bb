import { callView } from '../../src/lib/chat-types';
import { isNotePart, isToolPart } from '../../src/lib/messages/parts';
import type { MessagePart } from '../../src/lib/types/messages';

export type PartView =
	| { type: 'text'; text: string }
	| { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown; state: 'running' | 'done' | 'error'; output?: unknown; error?: string }
	| { type: 'note'; kind: string; text: string; data?: Record<string, unknown> };

/**
 * A stored message's parts as the operator reads them, for assertions: step boundaries left out,
 * consecutive text joined (as the chat renders it), tool parts as the chat's call view, notes flat.
 */
export function view(parts: MessagePart[]): PartView[] {
	const out: PartView[] = [];
	for (const p of parts) {
		const last = out[out.length - 1];
		if (p.type === 'text') {
			if (last?.type === 'text') last.text += p.text;
			else out.push({ type: 'text', text: p.text });
		} else if (isToolPart(p)) out.push({ type: 'tool-call', ...callView(p) });
		else if (isNotePart(p)) out.push({ type: 'note', ...p.data });
	}
	return out;
}
