// Chat messages as stored and as sent to the browser: the AI SDK's UIMessage parts.
import type { DataUIPart, DynamicToolUIPart, ToolUIPart, UIMessage, UIMessageChunk, UITools } from 'ai';

export const messageRoles = ['user', 'assistant', 'system'] as const;
export const messageStatuses = ['queued', 'streaming', 'complete', 'error', 'cancelled'] as const;
/**
 * What queued the turn that wrote a message: an operator's message (`chat`), an answered question
 * (`answer`), a plan approved or denied (`approval`, `denial`), a finished execution
 * (`continuation`); `resume` is what answers and plan decisions were before they were told apart;
 * `alert` and `schedule` turns were started by an alert hook or a schedule, with no operator there.
 */
export const messageOrigins = ['chat', 'answer', 'approval', 'denial', 'continuation', 'plan', 'resume', 'alert', 'schedule'] as const;
export type MessageStatus = (typeof messageStatuses)[number];
export type MessageOrigin = (typeof messageOrigins)[number];

/** What a Nomos note says (a retry, an error, a cut context, a system note of its own). */
/**
 * A system note. `model`, when set, is what the model reads for it in the history instead of
 * `text` (an alert's or a schedule's brief: kept where it was first sent, so every later request
 * starts with the same tokens and a model server's prefix cache holds).
 */
export type NoteData = { kind: string; text: string; data?: Record<string, unknown>; model?: string };
/** One model call's tokens (`input` includes `cached`, as OpenAI's `prompt_tokens` does). */
export type StepUsage = { model: string; input: number; output: number; cached: number };
/**
 * What a turn's model calls used, as one `data-usage` part (id `usage`) of its assistant message,
 * replaced after every step: each step (retries included) and the sums.
 */
export type UsageData = { steps: StepUsage[]; input: number; output: number; cached: number };
/**
 * Drops the words of a model call that failed mid-step, from part `from` on (its text and
 * reasoning, and its `step-start` when nothing else of the step is left): the retried call
 * replaces them. Only ever a transient chunk, folded by `foldChunks`, never a part.
 */
export type RetractData = { from: number };
/** An operator's "Pursue this" on a hypothesis card: the set (its present_hypotheses call id) and the hypothesis. */
export type PursueData = { setId: string; hypothesisId: string };
/** Nomos's own data parts: `data-note`, `data-usage`, `data-pursue` (and the transient `data-retract` chunk). */
export type NomosDataTypes = { note: NoteData; usage: UsageData; retract: RetractData; pursue: PursueData };

/**
 * The agent's tools by name, each `{ input, output }` as the SDK's `InferUITools` has it. Empty
 * here: server/agent/tools/index.ts fills it in by declaration merging, from the tool registry
 * itself, so this browser-side file imports nothing from the server (as GraphileWorker.Tasks).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface NomosToolRegistry {}
/** The tools of a message's parts (any tool, where the registry is not part of the program). */
export type NomosUITools = [keyof NomosToolRegistry] extends [never] ? UITools : NomosToolRegistry;

/** A message in the AI SDK's model: text, `tool-<name>` parts with their states, `data-note`, `step-start`. */
export type NomosUIMessage = UIMessage<unknown, NomosDataTypes, NomosUITools>;
/** One ordered part of a message, as stored and as rendered. */
export type MessagePart = NomosUIMessage['parts'][number];
/** One change to a streaming message, as the SDK's UI message stream carries it. */
export type MessageChunk = UIMessageChunk<unknown, NomosDataTypes>;
export type ToolPart = ToolUIPart<NomosUITools> | DynamicToolUIPart;
export type NotePart = Extract<DataUIPart<NomosDataTypes>, { type: 'data-note' }>;
export type UsagePart = Extract<DataUIPart<NomosDataTypes>, { type: 'data-usage' }>;

export type MessageRow = {
	id: string;
	sessionId: string;
	seq: number;
	role: (typeof messageRoles)[number];
	parts: MessagePart[];
	status: MessageStatus;
	origin: MessageOrigin;
	error: string | null;
	/** The last delta folded into `parts` (see messages/fold.ts). */
	rev: number;
	/** ISO 8601 text (see db/index.ts). */
	createdAt: string;
	updatedAt: string;
};

/**
 * The payload of a `message.delta` event: the chunks that took the message from `rev - 1` to
 * `rev`; on the last delta of a turn also its final status (and error).
 */
export type MessageDelta = {
	messageId: string;
	rev: number;
	chunks: MessageChunk[];
	status?: MessageStatus;
	error?: string | null;
};
