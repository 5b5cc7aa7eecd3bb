import type { MessagePart, NoteData, NotePart, ToolPart } from '../types/messages';

// The SDK's own predicates (isToolUIPart, getToolName) are one line each; written here so the
// browser's first load does not pull the SDK in (only folding a live delta does, see ChatState).

/** A `tool-<name>` part (or the SDK's `dynamic-tool`). */
export const isToolPart = (p: MessagePart): p is ToolPart => p.type.startsWith('tool-') || p.type === 'dynamic-tool';

/** The tool a tool part calls: `tool-get_lxc_state` → `get_lxc_state`. */
export const getToolName = (p: ToolPart): string => (p.type === 'dynamic-tool' ? p.toolName : p.type.split('-').slice(1).join('-'));
export const isNotePart = (p: MessagePart): p is NotePart => p.type === 'data-note';
export const noteOf = (p: NotePart): NoteData => p.data;

/** A tool call still waiting for its input or its result. */
export const isRunning = (p: ToolPart) => p.state === 'input-streaming' || p.state === 'input-available';

/** The error of a finished call: the SDK's `output-error`, or a tool result that reports `{ error }`. */
export function callError(p: ToolPart): string | null {
	if (p.state === 'output-error') return p.errorText ?? 'failed';
	if (p.state === 'output-available' && p.output && typeof p.output === 'object' && 'error' in p.output) {
		const e = p.output.error;
		return typeof e === 'string' ? e : JSON.stringify(e);
	}
	return null;
}

/** The input a call was made with (an invalid call keeps it as `rawInput`). */
export function callInput(p: ToolPart): unknown {
	return p.input ?? ('rawInput' in p ? p.rawInput : undefined);
}

/** The text of a message's text parts, joined. */
export function textOf(parts: MessagePart[]): string {
	return parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** A note part as written into a message. */
export const notePart = (kind: string, text: string, data?: Record<string, unknown>, model?: string): NotePart => ({
	type: 'data-note',
	data: { kind, text, ...(data ? { data } : {}), ...(model ? { model } : {}) }
});
