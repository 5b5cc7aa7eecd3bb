import type { MessagePart, MessageRow, NoteData, ToolPart } from '$lib/types/messages';
import { callError, callInput, getToolName, isNotePart, isRunning, isToolPart } from '$lib/messages/parts';

/** Message shapes as the chat renders them (see $lib/types/messages for the stored ones). */
export type ChatPart = MessagePart;
export type ChatMessage = Omit<MessageRow, 'createdAt' | 'updatedAt'> & { createdAt?: string; updatedAt?: string };

/** A tool call as the chat shows it, read from the SDK's tool part. */
export type ToolCallView = {
	toolCallId: string;
	toolName: string;
	input: unknown;
	state: 'running' | 'done' | 'error';
	output?: unknown;
	error?: string;
};

export function callView(p: ToolPart): ToolCallView {
	const error = callError(p);
	return {
		toolCallId: p.toolCallId,
		toolName: getToolName(p),
		input: callInput(p),
		state: isRunning(p) ? 'running' : error !== null ? 'error' : 'done',
		...(p.state === 'output-available' ? { output: p.output } : {}),
		...(error !== null ? { error } : {})
	};
}

/** Consecutive tool calls of a message form one group; text (across steps) runs together; notes stand alone. */
export type Segment =
	{ kind: 'text'; text: string; key: string } | { kind: 'tools'; calls: ToolCallView[]; key: string } | { kind: 'note'; note: NoteData; key: string };

export function segments(parts: ChatPart[]): Segment[] {
	const out: Segment[] = [];
	parts.forEach((p, i) => {
		const last = out[out.length - 1];
		if (isToolPart(p)) {
			if (last?.kind === 'tools') last.calls.push(callView(p));
			else out.push({ kind: 'tools', calls: [callView(p)], key: `t${i}` });
		} else if (p.type === 'text') {
			if (!p.text) return;
			if (last?.kind === 'text') last.text += p.text;
			else out.push({ kind: 'text', text: p.text, key: `x${i}` });
		} else if (isNotePart(p)) out.push({ kind: 'note', note: p.data, key: `n${i}` });
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

export function callTitle(c: ToolCallView): string {
	const label = callLabel(c.input);
	return label ? `${c.toolName} (${label})` : c.toolName;
}
