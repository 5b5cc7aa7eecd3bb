import { stepCountIs, streamText, type LanguageModelUsage, type ModelMessage, type StopCondition, type ToolSet } from 'ai';
import { sql } from '../db/index';
import { listMessages } from '../conversation/messages';
import { getSession, setTaskState } from '../db/queries/sessions';
import { sentPartsOf } from '../db/queries/messages';
import { clusterKnown } from '../db/queries/placement';
import type { MessageOrigin, MessageStatus } from '../db/schema';
import { isNotePart } from '../../messages/parts';
import { addStep, formatTokens, totalTokens } from '../../messages/usage';
import { canonicalJson } from '../../messages/fold';
import type { StepUsage, UsageData } from '../../types/messages';
import { env } from '../env';
import { assistantMessages, fitHistory, noteForModel } from './history';
import { foldedHistory } from './summary';
import { MessageWriter } from './message-writer';
import { classifyModelError, describeModelError } from './model-errors';
import { getModel, modelIdFor, MODEL_SETUP_HELP } from './provider';
import { NO_STREAM_HEADER } from './compat-fetch';
import { promptParts } from './prompt-tokens';
import { contextWindow, estimateTokens, historyBudgetChars, historyBudgetTokens, serverKind, toolsChars, truncationWarning } from './context-budget';
import { turnInstructions } from './soul';
import { buildTools, parkedForOperator } from './tools/index';
import { parkedOutputs } from './tools/parked';
import type { ToolContext } from './tools/context';
import { afterTurnState } from '../conversation/task-state';
import { watchOf } from '../db/queries/watches';
import { outsideReadsOf, turnCause, withReads } from '../executions/cause';
import { HAND_OVER } from '../conversation/active-turns';
import { abandonReply, handOverAndResume } from '../conversation/hand-over';

export interface TurnOptions {
	sessionId: string;
	origin: MessageOrigin;
	/**
	 * Injected after the replayed history for this turn only (not stored as operator words). Briefs
	 * are not sent this way any more (they are the model text of their note, kept in the history, so
	 * the prefix holds); a job queued by an earlier version may still carry one.
	 */
	notes?: string[];
	signal?: AbortSignal;
	/** See ToolContext.inventoryReady. */
	inventoryReady?: Promise<unknown>;
	/**
	 * A streaming reply this process already owns, to write into instead of a new one: made in
	 * the transaction that claimed the turn's work (insertTurnMessage), or handed over after its
	 * process stopped (`resumed`: its interrupted calls are settled first, see tools/parked.ts).
	 */
	messageId?: string;
	resumed?: boolean;
	/** A replay's turn: the tools answer from the original session and run nothing (tools/replay.ts). */
	replay?: ToolContext['replay'];
}

export interface TurnResult {
	messageId: string;
	status: MessageStatus;
}

/** No stream part for this long means the model server stalled. */
const IDLE_MS = 120_000;

type Attempt = {
	produced: boolean;
	error?: unknown;
	aborted: boolean;
	promptTokens?: number;
	/** The first request of the attempt as sent, in o200k tokens (null when the SDK did not say). */
	sentTokens?: number;
	overBudget: boolean;
	/** The call the model repeated REPEAT_LIMIT times with the same arguments, when it did. */
	repeated?: string;
};

/** The same tool call with the same arguments this many times in one turn ends it: the model is going round in circles. */
export const REPEAT_LIMIT = 3;

/** What the turn's model calls used so far (every attempt), and the turn's token budget (null: none). */
type Spend = {
	usage: UsageData | null;
	budget: number | null;
	steps: number;
	budgetName: string;
	/** Valid tool calls made so far in the turn (every attempt), by name and canonical arguments. */
	calls: Map<string, number>;
};

/**
 * The one turn runner: chat, question resumes and execution continuations all come here.
 * Replays the stored history, streams the model's text and tool calls into one assistant
 * message (created at once, updated as it goes). A rate limit, server error, dropped or stalled
 * stream or empty reply is retried (up to MAX_ATTEMPTS, honouring Retry-After, Stop still
 * works), continuing the same message; every note names its cause; never a blank message.
 */
export async function runTurn(opts: TurnOptions): Promise<TurnResult> {
	const signal = opts.signal ?? new AbortController().signal;
	// Independent of each other, so side by side: the operator is waiting for the first words.
	const [, stored, window, system] = await Promise.all([
		sql().begin((tx) => setTaskState(tx, opts.sessionId, 'executing')),
		listMessages(sql(), opts.sessionId),
		// The history must fit the model's context next to the instructions and tool definitions,
		// which are never cut (local servers silently drop the front of an overlong prompt).
		contextWindow(),
		turnInstructions()
	]);
	const own = opts.messageId ? stored.find((m) => m.id === opts.messageId && m.status === 'streaming') : undefined;
	if (opts.messageId && !own) throw new Error(`runTurn: message ${opts.messageId} is not a streaming reply of session ${opts.sessionId}`);
	const writer = own ? MessageWriter.attach(own) : await MessageWriter.start(opts.sessionId, opts.origin);
	try {
		return await converse(opts, signal, writer, stored, window, system);
	} catch (e) {
		// Not a model fault (those are handled inside): the reply is handed over to be resumed,
		// or, after RESUME_LIMIT resumes, closed saying why; never left streaming.
		await writer.detach().catch(() => undefined);
		await sql().begin((tx) => abandonReply(tx, writer.id, (e as Error).message ?? String(e)));
		throw e;
	}
}

async function converse(
	opts: TurnOptions,
	signal: AbortSignal,
	writer: MessageWriter,
	stored: Awaited<ReturnType<typeof listMessages>>,
	window: Awaited<ReturnType<typeof contextWindow>>,
	system: string
): Promise<TurnResult> {
	if (opts.resumed) await writer.settleInterrupted(parkedOutputs(writer.id));
	// The session's chosen model (the default when none, or when it is no longer configured).
	const modelId = modelIdFor((await getSession(sql(), opts.sessionId))?.model) ?? 'unknown';
	const model = getModel(modelId);
	if (!model) {
		writer.appendText(MODEL_SETUP_HELP);
		return finish(writer, 'error', 'no model configured');
	}

	// An alert's investigation or a schedule's run has no operator watching: a tighter budget (and no http_get, tools/index.ts).
	const watch = await watchOf(sql(), opts.sessionId);
	const cluster = await clusterKnown(sql());
	const ctx: ToolContext = {
		sessionId: opts.sessionId,
		messageId: writer.id,
		signal,
		turn: { httpGets: 0, read: [] },
		cause: withReads(await turnCause(sql(), opts.sessionId, writer.id, watch), outsideReadsOf(stored)),
		inventoryReady: opts.inventoryReady,
		contextTokens: window.tokens,
		watch,
		cluster,
		replay: opts.replay,
		replyParts: () => writer.parts()
	};
	const tools = buildTools(ctx);
	const fixedChars = system.length + toolsChars(tools);
	const e = env();
	const spend: Spend = watch
		? {
				usage: null,
				budget: Math.min(e.NOMOS_TURN_TOKEN_BUDGET ?? Infinity, e.NOMOS_WATCH_TOKEN_BUDGET),
				steps: Math.min(e.NOMOS_MAX_STEPS, e.NOMOS_WATCH_MAX_STEPS),
				budgetName: 'NOMOS_WATCH_TOKEN_BUDGET',
				calls: new Map()
			}
		: { usage: null, budget: e.NOMOS_TURN_TOKEN_BUDGET ?? null, steps: e.NOMOS_MAX_STEPS, budgetName: 'NOMOS_TURN_TOKEN_BUDGET', calls: new Map() };
	// Operator messages still queued are answered by their own turn, next. Older turns may be
	// folded into the stored summary first (one request, once per fold point; see summary.ts).
	const history = stored.filter((m) => m.id !== writer.id && m.status !== 'queued');
	// Earlier replies as their model was sent them (key order and all), so this request starts with the last one.
	const sentParts = await sentPartsOf(
		sql(),
		history.filter((m) => m.role === 'assistant').map((m) => m.id)
	);
	const folded = await foldedHistory({
		sql: sql(),
		sessionId: opts.sessionId,
		rows: history.map((m) => ({ ...m, parts: sentParts.get(m.id) ?? m.parts })),
		budget: historyBudgetTokens(window.tokens, fixedChars, e.NOMOS_HISTORY_TOKENS),
		model,
		modelId,
		signal
	});
	if (folded.request) {
		// The summary request is a model call of this turn: its tokens count (cost, the turn's budget).
		spend.usage = addStep(spend.usage, { model: modelId, input: tokens(folded.request.inputTokens), output: tokens(folded.request.outputTokens), cached: 0 });
		writer.setUsage(spend.usage);
	}
	// The last resort when even that is too long: cut the oldest of the rest, never the summary.
	const [head, rest] = folded.summary ? [folded.messages.slice(0, 1), folded.messages.slice(1)] : [[], folded.messages];
	const budget = historyBudgetChars(window.tokens, fixedChars + JSON.stringify(head).length, e.NOMOS_HISTORY_BUDGET_CHARS);
	const messages: ModelMessage[] = [...head, ...fitHistory(rest, budget), ...(opts.notes ?? []).map(noteForModel)];
	let emptyReplies = 0;
	let unstreamed = false;
	let contextNoted = stored.some((m) => m.parts.some((p) => isNotePart(p) && p.data.kind === 'context'));
	for (let attempt = 1; ; attempt++) {
		// A retry continues the same reply: its finished steps and tool calls stay, and the model
		// is shown them as its own; the words of a step cut short were taken back (retractOpenStep).
		const ownParts = await writer.parts();
		const sofar = await assistantMessages(ownParts);
		const sent = [...messages, ...sofar];
		const r = await attemptStream(writer, model, modelId, system, sent, tools, signal, spend, unstreamed ? { [NO_STREAM_HEADER]: '1' } : undefined);
		if (r.aborted) return stopped(writer, signal);
		if (r.overBudget) {
			// Stopped between steps: every call of the last step has its result, nothing is half-written.
			writer.addNote('budget', budgetNote(spend));
			return finish(writer, 'complete', null);
		}
		if (r.repeated) {
			// Stopped between steps, like the budget: every call has its result.
			writer.addNote(
				'repeat',
				`Stopped: the model called ${r.repeated} with the same arguments ${REPEAT_LIMIT} times in this turn, so it is going round in circles. Send a message to go on (a larger model may do better).`,
				{ tool: r.repeated, times: REPEAT_LIMIT }
			);
			return finish(writer, 'complete', null);
		}
		// Said once per session: the same cut under every reply tells nothing new.
		const sentTokens = r.sentTokens ?? estimateTokens(JSON.stringify(sent).length + fixedChars);
		if (!contextNoted && truncationWarning(sentTokens, r.promptTokens, window.tokens)) {
			// The server's kind is asked only now (the note says how to raise the limit there).
			const cut = truncationWarning(sentTokens, r.promptTokens, window.tokens, await serverKind())!;
			writer.addNote('context', cut.text, cut.data);
			contextNoted = true;
		}
		if (!r.error && r.produced) return finish(writer, 'complete', null);
		if (!r.error) {
			emptyReplies++;
			// Some servers (older Ollama builds) drop streamed tool calls: ask without streaming.
			unstreamed = true;
		}
		const fault = classifyModelError(r.error);
		await writer.interruptRunning(fault.cause);
		if (spend.budget !== null && totalTokens(spend.usage) > spend.budget) {
			// A retry is another model call: over the budget, the turn ends here instead.
			writer.addNote('budget', budgetNote(spend));
			return finish(writer, 'error', 'over the turn token budget');
		}
		if (!fault.retry || attempt >= MAX_ATTEMPTS) {
			const why = r.error ? describeModelError(r.error) : 'an empty reply';
			if (await writer.hasContent()) {
				writer.addNote('error', `The turn stopped early: ${why}.`);
			} else {
				const times = emptyReplies === attempt ? `${attempt === 2 ? 'twice' : `${attempt} times`} (an empty reply)` : `(${why})`;
				writer.appendText(`The model returned nothing ${times}, so this turn has no answer. Check the model server, then send your message again.`);
			}
			return finish(writer, 'error', why);
		}
		await writer.retractOpenStep();
		const seconds = Math.ceil(fault.waitMs / 1000);
		const until = new Date(Date.now() + fault.waitMs).toISOString();
		const how = !r.error ? ' without streaming' : '';
		writer.addNote(
			'retry',
			`${capitalise(fault.cause)}; retrying${how}${fault.waitMs >= 1000 ? ` in ${seconds} s` : ''} (attempt ${attempt + 1} of ${MAX_ATTEMPTS})…`,
			{ until, cause: fault.cause }
		);
		if (!(await sleep(fault.waitMs, signal))) return stopped(writer, signal);
	}
}

/** The note a turn stopped by its token budget ends with; the agent reads it next turn (history.ts). */
function budgetNote(spend: Spend): string {
	return `Stopped: this turn used ${formatTokens(totalTokens(spend.usage))} tokens, over the ${formatTokens(spend.budget ?? 0)} budget (${spend.budgetName}). Send a message to go on.`;
}

/** A token count as a server reports it, made safe to store and sum: a whole number from 0 to 10^12. */
const tokens = (v: number | undefined) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.round(v), 1e12) : 0);

/** One model call's usage as the SDK reports it (null when the server reported none). */
function stepUsage(u: LanguageModelUsage | undefined, model: string): StepUsage | null {
	if (!u || (u.inputTokens === undefined && u.outputTokens === undefined)) return null;
	const input = tokens(u.inputTokens);
	return { model, input, output: tokens(u.outputTokens), cached: Math.min(tokens(u.inputTokenDetails?.cacheReadTokens ?? u.cachedInputTokens), input) };
}

/** Attempts per turn: the first and two retries. */
const MAX_ATTEMPTS = 3;

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Waits, unless the operator stops the turn first; false when stopped. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
	if (signal.aborted) return Promise.resolve(false);
	return new Promise((resolve) => {
		const timer = setTimeout(() => {
			signal.removeEventListener('abort', onAbort);
			resolve(true);
		}, ms);
		const onAbort = () => {
			clearTimeout(timer);
			resolve(false);
		};
		signal.addEventListener('abort', onAbort, { once: true });
	});
}

async function stopped(writer: MessageWriter, signal: AbortSignal): Promise<TurnResult> {
	if (signal.reason === HAND_OVER) {
		// This process is stopping: the reply stays open and another turn goes on writing it.
		await writer.detach();
		await sql().begin((tx) => handOverAndResume(tx, { ids: [writer.id] }));
		return { messageId: writer.id, status: 'streaming' };
	}
	await writer.interruptRunning('stopped by the operator');
	writer.addNote('cancelled', 'Stopped by the operator.');
	return finish(writer, 'cancelled', null);
}

async function finish(writer: MessageWriter, status: MessageStatus, error: string | null): Promise<TurnResult> {
	await writer.finish(status, error);
	await sql().begin(async (tx) => setTaskState(tx, writer.sessionId, await afterTurnState(tx, writer.sessionId, status)));
	return { messageId: writer.id, status };
}

async function attemptStream(
	writer: MessageWriter,
	model: NonNullable<ReturnType<typeof getModel>>,
	modelId: string,
	system: string,
	messages: ModelMessage[],
	tools: ToolSet,
	signal: AbortSignal,
	spend: Spend,
	headers?: Record<string, string>
): Promise<Attempt> {
	const idle = new AbortController();
	const config = env();
	// Before the first byte the model may still be loading (15–60 s on a cold start): the chat
	// says so and the call waits up to the load timeout, instead of giving up and asking again
	// (which would queue behind the same load). After it, silence is a stall.
	const stall = (ms: number) => setTimeout(() => idle.abort(new DOMException('model stalled', 'TimeoutError')), ms);
	let idleTimer = stall(Math.max(IDLE_MS, config.NOMOS_MODEL_LOAD_TIMEOUT_SECONDS * 1000));
	let loadingTimer: NodeJS.Timeout | undefined = setTimeout(() => {
		const seconds = Math.round(config.NOMOS_MODEL_LOADING_SECONDS);
		writer.addNote('loading', `The model is loading (no answer for ${seconds} s); waiting for it rather than asking again…`, {
			since: new Date().toISOString()
		});
	}, config.NOMOS_MODEL_LOADING_SECONDS * 1000);
	const bump = (type: string) => {
		// 'start' and 'start-step' come from the SDK before the server has sent anything.
		if (type === 'start' || type === 'start-step') return;
		clearTimeout(loadingTimer);
		loadingTimer = undefined;
		clearTimeout(idleTimer);
		idleTimer = stall(IDLE_MS);
	};
	let error: unknown;
	let aborted = false;
	let promptTokens: number | undefined;
	let sentTokens: number | undefined;
	let overBudget = false;
	const ends: StopCondition<ToolSet>[] = [stepCountIs(spend.steps), parkedForOperator];
	// Judged from the SDK's own steps (not from the parts read below, which may lag behind).
	const before = totalTokens(spend.usage);
	let repeated: string | undefined;
	const stopWhen: StopCondition<ToolSet> = async ({ steps }) => {
		if (repeated) return true;
		for (const end of ends) if (await end({ steps })) return true;
		if (spend.budget === null) return false;
		const used = before + steps.reduce((n, st) => n + tokens(st.usage.inputTokens) + tokens(st.usage.outputTokens), 0);
		overBudget = used > spend.budget;
		return overBudget;
	};
	try {
		const result = streamText({
			model,
			headers,
			system,
			messages,
			tools,
			maxRetries: 0,
			stopWhen,
			abortSignal: AbortSignal.any([signal, idle.signal]),
			// Errors arrive as stream parts and are reported in the message; no console noise.
			onError: () => undefined
		});
		for await (const part of result.fullStream) {
			bump(part.type);
			switch (part.type) {
				case 'start-step':
					writer.startStep();
					// The request body as sent: what a server that reports fewer prompt tokens cut.
					if (sentTokens === undefined && part.request.body && typeof part.request.body === 'object') {
						sentTokens = promptParts(part.request.body).total;
					}
					break;
				case 'text-delta':
					if (part.text) writer.appendText(part.text);
					break;
				case 'tool-input-start':
					writer.startToolCall(part.id, part.toolName);
					break;
				case 'tool-call':
					if ('invalid' in part && part.invalid) {
						writer.rejectToolCall(part.toolCallId, part.toolName, errorText(part.error), part.input);
					} else {
						writer.setToolInput(part.toolCallId, part.toolName, part.input);
						const key = `${part.toolName} ${canonicalJson(part.input)}`;
						const times = (spend.calls.get(key) ?? 0) + 1;
						spend.calls.set(key, times);
						if (times >= REPEAT_LIMIT) repeated ??= part.toolName;
					}
					break;
				case 'tool-result':
					writer.finishToolCall(part.toolCallId, part.output);
					// A question is also the assistant's visible words, inline in the transcript.
					if (part.toolName === 'ask_operator' && isQuestion(part.output)) writer.appendText(`\n\n${part.output.prompt}`);
					break;
				case 'tool-error':
					writer.failToolCall(part.toolCallId, errorText(part.error));
					break;
				case 'finish-step': {
					promptTokens ??= part.usage?.inputTokens;
					writer.finishStep();
					const step = stepUsage(part.usage, modelId);
					if (step) {
						spend.usage = addStep(spend.usage, step);
						writer.setUsage(spend.usage);
					}
					break;
				}
				case 'error':
					error = part.error;
					break;
				case 'abort':
					aborted = signal.aborted;
					if (!aborted) error = idle.signal.reason ?? new Error('aborted');
					break;
			}
		}
	} catch (e) {
		// A connection cut mid-stream throws from the iterator instead of yielding an error part.
		if (signal.aborted) aborted = true;
		else error = e;
	} finally {
		clearTimeout(idleTimer);
		clearTimeout(loadingTimer);
	}
	const clean = !error && !aborted;
	return {
		produced: await writer.hasContent(),
		error,
		aborted,
		promptTokens,
		sentTokens,
		overBudget: overBudget && clean,
		repeated: clean ? repeated : undefined
	};
}

function isQuestion(o: unknown): o is { prompt: string; questionId: string } {
	return !!o && typeof o === 'object' && typeof (o as { prompt?: unknown }).prompt === 'string' && 'questionId' in o;
}

function errorText(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}
