import { sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertMessage, touchStreaming, updateMessage } from '../db/queries/messages';
import type { MessageOrigin, MessagePart, MessageStatus } from '../db/schema';
import { boundedForStorage, boundedText } from './tools/context';

type ToolCallPart = Extract<MessagePart, { type: 'tool-call' }>;

/** At most this many writes per second per message while streaming; the final write is exact. */
const FLUSH_MS = 50;
const HEARTBEAT_MS = 15_000;

/**
 * The assistant message of one turn: created as a `streaming` placeholder at once, then
 * rewritten in place (throttled) as text and tool calls arrive, each write with its
 * `message.updated` event, so a reload or a replay shows everything so far.
 */
export class MessageWriter {
	readonly parts: MessagePart[] = [];
	#timer: NodeJS.Timeout | undefined;
	#chain: Promise<void> = Promise.resolve();
	#status: MessageStatus = 'streaming';
	#heartbeat: NodeJS.Timeout;

	private constructor(
		readonly id: string,
		readonly sessionId: string
	) {
		// Proof of life for the sweeper: a streaming message nobody touches for a minute was orphaned by a dead worker.
		this.#heartbeat = setInterval(() => void touchStreaming(sql(), id).catch(() => undefined), HEARTBEAT_MS);
		this.#heartbeat.unref();
	}

	static async start(sessionId: string, origin: MessageOrigin): Promise<MessageWriter> {
		const id = await sql().begin(async (tx) => {
			const row = await insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'streaming', origin });
			await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: row.id } });
			return row.id;
		});
		return new MessageWriter(id, sessionId);
	}

	get hasContent(): boolean {
		return this.parts.some((p) => (p.type === 'text' && p.text.trim() !== '') || p.type === 'tool-call');
	}

	appendText(text: string): void {
		const last = this.parts[this.parts.length - 1];
		if (last?.type === 'text') last.text += text;
		else this.parts.push({ type: 'text', text });
		this.#schedule();
	}

	addNote(kind: string, text: string, data?: Record<string, unknown>): void {
		this.parts.push({ type: 'note', kind, text, ...(data ? { data } : {}) });
		this.flush();
	}

	/** A tool call appears as soon as the model starts it; its input follows. */
	startToolCall(toolCallId: string, toolName: string): void {
		if (this.#call(toolCallId)) return;
		this.parts.push({ type: 'tool-call', toolCallId, toolName, input: undefined, state: 'running' });
		this.flush();
	}

	setToolInput(toolCallId: string, toolName: string, rawInput: unknown): void {
		const input = boundedForStorage(rawInput);
		const call = this.#call(toolCallId);
		if (call) call.input = input;
		else this.parts.push({ type: 'tool-call', toolCallId, toolName, input, state: 'running' });
		this.flush();
	}

	finishToolCall(toolCallId: string, output: unknown): void {
		const call = this.#call(toolCallId);
		if (!call) return;
		call.output = boundedForStorage(output, 64 * 1024);
		const err = output && typeof output === 'object' && 'error' in output ? String((output).error) : null;
		call.state = err ? 'error' : 'done';
		if (err) call.error = err;
		this.flush();
	}

	failToolCall(toolCallId: string, toolName: string, rawError: string, rawInput?: unknown): void {
		const input = boundedForStorage(rawInput);
		const error = boundedText(rawError);
		let call = this.#call(toolCallId);
		if (!call) {
			call = { type: 'tool-call', toolCallId, toolName, input, state: 'error' };
			this.parts.push(call);
		}
		call.state = 'error';
		call.error = error;
		if (call.input === undefined || input !== undefined) call.input = input;
		this.flush();
	}

	/** Drops everything written by a failed attempt (before a retry). */
	reset(keep: (p: MessagePart) => boolean): void {
		const kept = this.parts.filter(keep);
		this.parts.length = 0;
		this.parts.push(...kept);
		this.flush();
	}

	/** Marks tool calls still running as interrupted (cancel, crash of the stream). */
	interruptRunning(reason: string): void {
		for (const p of this.parts)
			if (p.type === 'tool-call' && p.state === 'running') {
				p.state = 'error';
				p.error = reason;
			}
	}

	flush(): void {
		clearTimeout(this.#timer);
		this.#timer = undefined;
		const parts = structuredClone(this.parts);
		const status = this.#status;
		this.#chain = this.#chain.then(() => this.#write(parts, status)).catch((e) => console.error(`[nomos] message write failed: ${(e as Error).message}`));
	}

	async finish(status: MessageStatus, error: string | null = null): Promise<void> {
		clearInterval(this.#heartbeat);
		this.#status = status;
		clearTimeout(this.#timer);
		this.#timer = undefined;
		const parts = structuredClone(this.parts);
		await this.#chain;
		await this.#write(parts, status, error);
	}

	#schedule(): void {
		this.#timer ??= setTimeout(() => this.flush(), FLUSH_MS);
	}

	#call(id: string): ToolCallPart | undefined {
		return this.parts.find((p): p is ToolCallPart => p.type === 'tool-call' && p.toolCallId === id);
	}

	async #write(parts: MessagePart[], status: MessageStatus, error?: string | null): Promise<void> {
		await sql().begin(async (tx) => {
			await updateMessage(tx, this.id, { parts, status, ...(error !== undefined ? { error } : {}) });
			await emitEvent(tx, { sessionId: this.sessionId, type: 'message.updated', payload: { messageId: this.id } });
		});
	}
}
