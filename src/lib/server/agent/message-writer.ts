import { sql } from '../db/index';
import { emitEvent } from '../db/queries/events';
import { insertMessage, touchStreaming, writeFinalMessage, type MessageRow } from '../db/queries/messages';
import type { TransactionSql } from 'postgres';
import { currentProcess } from '../jobs/current-process';
import type { MessageChunk, MessageDelta, MessageOrigin, MessagePart, MessageStatus, UsageData } from '../../types/messages';
import { USAGE_PART_ID } from '../../messages/usage';
import { foldChunks, TEXT_ID } from '../../messages/fold';
import { getToolName, isRunning, isToolPart } from '../../messages/parts';
import { boundedForStorage, boundedText } from './tools/context';
import { logger } from '../log';

const log = logger('agent');

/**
 * The empty streaming assistant message a turn writes into, owned by this process (its runner),
 * announced; in the caller's transaction, so it commits with the claim of the turn's work.
 */
export async function insertTurnMessage(tx: TransactionSql, sessionId: string, origin: MessageOrigin, id?: string): Promise<MessageRow> {
	const row = await insertMessage(tx, { id, sessionId, role: 'assistant', parts: [], status: 'streaming', origin, runner: currentProcess() });
	await emitEvent(tx, { sessionId, type: 'message.updated', payload: { messageId: row.id } });
	return row;
}

/** Chunks are sent at most this often while text streams; anything else is sent at once. */
const FLUSH_MS = 100;
const HEARTBEAT_MS = 15_000;

/**
 * The assistant message of one turn, in the AI SDK's message model. Created as an empty
 * `streaming` row at once; then every change is a UI message chunk, and what changed since the
 * last flush goes out as one `message.delta` event (`rev` counts them). The row itself is
 * written once more, exactly, when the turn ends (with the last delta, in one transaction); a
 * reader of a streaming message folds its deltas onto the row (see queries/messages.ts). The
 * parts are never tracked by hand: they are the SDK's fold of the chunks (messages/fold.ts), the
 * same fold every browser runs, so what a browser shows is what is stored.
 */
export class MessageWriter {
	#parts: MessagePart[] = [];
	#rev: number;
	#pending: MessageChunk[] = [];
	#textOpen = false;
	#stepOpen = false;
	#timer: NodeJS.Timeout | undefined;
	#chain: Promise<void> = Promise.resolve();
	#heartbeat: NodeJS.Timeout;

	private constructor(
		readonly id: string,
		readonly sessionId: string,
		rev: number
	) {
		this.#rev = rev;
		// Proof of life for the sweeper: a streaming message nobody touches for a minute was orphaned by a dead worker.
		this.#heartbeat = setInterval(() => void touchStreaming(sql(), id).catch(() => undefined), HEARTBEAT_MS);
		this.#heartbeat.unref();
	}

	static async start(sessionId: string, origin: MessageOrigin): Promise<MessageWriter> {
		const row = await sql().begin((tx) => insertTurnMessage(tx, sessionId, origin));
		return new MessageWriter(row.id, sessionId, row.rev);
	}

	/**
	 * Goes on writing a streaming reply this process owns (made by insertTurnMessage in the
	 * transaction that claimed its work, or handed over after a crash), as far as it had gone.
	 */
	static attach(row: Pick<MessageRow, 'id' | 'sessionId' | 'rev' | 'parts'>): MessageWriter {
		const w = new MessageWriter(row.id, row.sessionId, row.rev);
		w.#parts = row.parts;
		return w;
	}

	/** The parts as folded so far (after every pending chunk). */
	async parts(): Promise<MessagePart[]> {
		this.flush();
		await this.#chain;
		return this.#parts;
	}

	async hasContent(): Promise<boolean> {
		return (await this.parts()).some((p) => (p.type === 'text' && p.text.trim() !== '') || isToolPart(p));
	}

	appendText(text: string): void {
		if (!text) return;
		if (!this.#textOpen) {
			// The first words of a text go out at once (the operator is waiting for them); what
			// follows is coalesced.
			this.#push({ type: 'text-start', id: TEXT_ID });
			this.#push({ type: 'text-delta', id: TEXT_ID, delta: text });
			this.#textOpen = true;
			this.flush();
			return;
		}
		const last = this.#pending[this.#pending.length - 1];
		// Consecutive text arrives as one delta per flush, not one per model token.
		if (last?.type === 'text-delta') last.delta += text;
		else this.#pending.push({ type: 'text-delta', id: TEXT_ID, delta: text });
		this.#timer ??= setTimeout(() => this.flush(), FLUSH_MS);
	}

	addNote(kind: string, text: string, data?: Record<string, unknown>): void {
		this.#push({ type: 'data-note', data: { kind, text, ...(data ? { data } : {}) } });
		this.flush();
	}

	/** The turn's usage so far: one `data-usage` part, replaced in place each time (same id). */
	setUsage(data: UsageData): void {
		this.#push({ type: 'data-usage', id: USAGE_PART_ID, data });
		this.flush();
	}

	startStep(): void {
		this.#stepOpen = true;
		this.#push({ type: 'start-step' });
	}

	finishStep(): void {
		this.#stepOpen = false;
		this.#push({ type: 'finish-step' });
		this.flush();
	}

	/**
	 * Takes back the words of a step the model did not finish (a cut or failed stream), in the
	 * browser and in the stored reply alike, so that the retried call replaces them instead of
	 * following them. Its tool calls stay (they ran, or are marked interrupted).
	 */
	async retractOpenStep(): Promise<void> {
		if (!this.#stepOpen) return;
		this.#stepOpen = false;
		const parts = await this.parts();
		const from = parts.map((p) => p.type).lastIndexOf('step-start');
		if (from < 0 || !parts.slice(from).some((p) => p.type === 'text' || p.type === 'reasoning')) return;
		this.#push({ type: 'data-retract', data: { from }, transient: true });
		this.flush();
	}

	/** A tool call appears as soon as the model starts it; its input follows. */
	startToolCall(toolCallId: string, toolName: string): void {
		this.#push({ type: 'tool-input-start', toolCallId, toolName });
		this.flush();
	}

	setToolInput(toolCallId: string, toolName: string, rawInput: unknown): void {
		this.#push({ type: 'tool-input-available', toolCallId, toolName, input: boundedForStorage(rawInput) });
		this.flush();
	}

	finishToolCall(toolCallId: string, output: unknown): void {
		this.#push({ type: 'tool-output-available', toolCallId, output: boundedForStorage(output, 64 * 1024) });
		this.flush();
	}

	/** A call the model made with arguments that do not fit the tool (kept as `rawInput`). */
	rejectToolCall(toolCallId: string, toolName: string, rawError: string, rawInput?: unknown): void {
		this.#push({ type: 'tool-input-error', toolCallId, toolName, input: boundedForStorage(rawInput), errorText: boundedText(rawError) });
		this.flush();
	}

	/** A call whose tool failed while running. */
	failToolCall(toolCallId: string, rawError: string): void {
		this.#push({ type: 'tool-output-error', toolCallId, errorText: boundedText(rawError) });
		this.flush();
	}

	/**
	 * A resumed reply's calls that were running when its process stopped: each gets what its tool
	 * had already stored for it (a request it parked: see tools/parked.ts), else fails as
	 * interrupted, so the model sees every call with its result and never asks twice.
	 */
	async settleInterrupted(parked: (toolName: string, toolCallId: string) => Promise<unknown>): Promise<void> {
		for (const p of await this.parts()) {
			if (!isToolPart(p) || !isRunning(p)) continue;
			const output = await parked(getToolName(p), p.toolCallId).catch(() => null);
			if (output) this.#push({ type: 'tool-output-available', toolCallId: p.toolCallId, output: boundedForStorage(output, 64 * 1024) });
			else this.#push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: 'interrupted before it finished: Nomos restarted' });
		}
		this.flush();
	}

	/** Marks tool calls still running as failed with `reason` (cancel, crash of the stream). */
	async interruptRunning(reason: string): Promise<void> {
		for (const p of await this.parts())
			if (isToolPart(p) && isRunning(p)) this.#push({ type: 'tool-output-error', toolCallId: p.toolCallId, errorText: reason });
		this.flush();
	}

	/** Sends what is pending as one delta. */
	flush(): void {
		clearTimeout(this.#timer);
		this.#timer = undefined;
		if (this.#pending.length === 0) return;
		const chunks = this.#pending;
		this.#pending = [];
		this.#chain = this.#chain.then(() => this.#commit(chunks)).catch((e) => log.error({ err: e }, `message write failed: ${(e as Error).message}`));
	}

	/** Stops writing without ending the reply (it is handed over): what is pending goes out first. */
	async detach(): Promise<void> {
		clearInterval(this.#heartbeat);
		this.flush();
		await this.#chain;
	}

	/** The last delta (closing the text, with the final status) and the exact row, in one transaction. */
	async finish(status: MessageStatus, error: string | null = null): Promise<void> {
		clearInterval(this.#heartbeat);
		clearTimeout(this.#timer);
		this.#timer = undefined;
		this.#closeText();
		const chunks = this.#pending;
		this.#pending = [];
		await this.#chain;
		await this.#commit(chunks, { status, error });
	}

	#push(chunk: MessageChunk): void {
		this.#closeText();
		this.#pending.push(chunk);
	}

	#closeText(): void {
		if (!this.#textOpen) return;
		this.#pending.push({ type: 'text-end', id: TEXT_ID });
		this.#textOpen = false;
	}

	async #commit(chunks: MessageChunk[], end?: { status: MessageStatus; error: string | null }): Promise<void> {
		const parts = chunks.length ? await foldChunks(this.#parts, chunks) : this.#parts;
		const delta: MessageDelta = { messageId: this.id, rev: this.#rev + 1, chunks, ...(end ? { status: end.status, error: end.error } : {}) };
		await sql().begin(async (tx) => {
			if (end) await writeFinalMessage(tx, this.id, { parts, status: end.status, error: end.error, rev: delta.rev, sent: true });
			await emitEvent(tx, { sessionId: this.sessionId, type: 'message.delta', payload: delta });
		});
		this.#parts = parts;
		this.#rev = delta.rev;
	}
}
