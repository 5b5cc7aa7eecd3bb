import type { MessagePart, MessageRow } from '$lib/types/messages';

/** Message shapes as the chat renders them (see $lib/types/messages for the stored ones). */
export type ToolCallPart = Extract<MessagePart, { type: 'tool-call' }>;
export type ChatPart = MessagePart;
export type ChatMessage = Omit<MessageRow, 'createdAt' | 'updatedAt'> & { createdAt?: string; updatedAt?: string };

/** Consecutive tool calls of a message form one group; text and notes stand alone. */
export type Segment =
	| { kind: 'text'; text: string; key: string }
	| { kind: 'tools'; calls: ToolCallPart[]; key: string }
	| { kind: 'note'; note: Extract<ChatPart, { type: 'note' }>; key: string };

export function segments(parts: ChatPart[]): Segment[] {
	const out: Segment[] = [];
	parts.forEach((p, i) => {
		const last = out[out.length - 1];
		if (p.type === 'tool-call') {
			if (last?.kind === 'tools') last.calls.push(p);
			else out.push({ kind: 'tools', calls: [p], key: `t${i}` });
		} else if (p.type === 'text') {
			if (p.text) out.push({ kind: 'text', text: p.text, key: `x${i}` });
		} else out.push({ kind: 'note', note: p, key: `n${i}` });
	});
	return out;
}

const LABEL_KEYS = ['name', 'hostname', 'vmid', 'host', 'target', 'query', 'url', 'id', 'unit', 'kind', 'action'];

/** A short label from a tool call's arguments, e.g. `caddy` for get_lxc_state({name:'caddy'}). */
export function callLabel(input: unknown): string {
	if (!input || typeof input !== 'object') return '';
	const rec = input as Record<string, unknown>;
	for (const k of LABEL_KEYS) {
		const v = rec[k];
		if (typeof v === 'string' || typeof v === 'number') {
			const s = String(v);
			return s.length > 32 ? s.slice(0, 31) + '…' : s;
		}
	}
	return '';
}

export function callTitle(c: ToolCallPart): string {
	const label = callLabel(c.input);
	return label ? `${c.toolName} (${label})` : c.toolName;
}
