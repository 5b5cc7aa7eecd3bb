import type { AssistantModelMessage, ModelMessage, ToolModelMessage } from 'ai';
import type { MessageRow } from '../db/queries/messages';
import type { MessagePart } from '../db/schema';

type ToolCallPart = Extract<MessagePart, { type: 'tool-call' }>;

/** How a stored system note is shown to the model (some local servers reject mid-conversation system messages). */
export function noteForModel(text: string): ModelMessage {
	return { role: 'user', content: `[system note — not from the operator] ${text}` };
}

function resultOutput(p: ToolCallPart): ToolModelMessage['content'][number] {
	const output =
		p.output !== undefined
			? { type: 'json' as const, value: p.output as never }
			: { type: 'error-text' as const, value: p.error ?? (p.state === 'running' ? 'interrupted before it finished' : 'failed') };
	return { type: 'tool-result', toolCallId: p.toolCallId, toolName: p.toolName, output };
}

/**
 * Replays one stored assistant message as model messages: each run of text + tool calls becomes
 * an assistant message followed by a tool message with those calls' results, as it was live.
 */
function assistantMessages(parts: MessagePart[]): ModelMessage[] {
	const out: ModelMessage[] = [];
	let content: AssistantModelMessage['content'] & unknown[] = [];
	let calls: ToolCallPart[] = [];
	const flush = () => {
		if (content.length) out.push({ role: 'assistant', content });
		if (calls.length) out.push({ role: 'tool', content: calls.map(resultOutput) });
		content = [];
		calls = [];
	};
	for (const p of parts) {
		if (p.type === 'text') {
			if (calls.length) flush();
			if (p.text) content.push({ type: 'text', text: p.text });
		} else if (p.type === 'tool-call') {
			content.push({ type: 'tool-call', toolCallId: p.toolCallId, toolName: p.toolName, input: p.input ?? {} });
			calls.push(p);
		}
	}
	flush();
	return out;
}

function textOf(parts: MessagePart[]): string {
	return parts
		.filter((p) => p.type === 'text')
		.map((p) => (p as { text: string }).text)
		.join('');
}

/** The stored transcript as the model sees it. */
export function toModelMessages(rows: MessageRow[]): ModelMessage[] {
	const out: ModelMessage[] = [];
	for (const m of rows) {
		if (m.role === 'user') {
			const text = textOf(m.parts);
			if (text) out.push({ role: 'user', content: text });
		} else if (m.role === 'system') {
			for (const p of m.parts) if (p.type === 'note') out.push(noteForModel(p.text));
		} else {
			out.push(...assistantMessages(m.parts));
		}
	}
	return out;
}
