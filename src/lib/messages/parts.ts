import { getToolName, isToolUIPart } from 'ai';
import type { MessagePart, NoteData, NotePart, ToolPart } from '../types/messages';

export { getToolName };

export const isToolPart = (p: MessagePart): p is ToolPart => isToolUIPart(p);
export const isNotePart = (p: MessagePart): p is NotePart => p.type === 'data-note';
export const noteOf = (p: NotePart): NoteData => p.data;

/** A tool call still waiting for its input or its result. */
export const isRunning = (p: ToolPart) => p.state === 'input-streaming' || p.state === 'input-available';

/** The error of a finished call: the SDK's `output-error`, or a tool result that reports `{ error }`. */
export function callError(p: ToolPart): string | null {
	if (p.state === 'output-error') return p.errorText ?? 'failed';
	if (p.state === 'output-available' && p.output && typeof p.output === 'object' && 'error' in p.output) {
		const e = (p.output).error;
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
export const notePart = (kind: string, text: string, data?: Record<string, unknown>): NotePart => ({
	type: 'data-note',
	data: { kind, text, ...(data ? { data } : {}) }
});
