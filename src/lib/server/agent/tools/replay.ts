import type { Tool } from 'ai';
import { canonicalJson } from '../../../messages/fold';
import type { RecordedCall, Recording } from '../../../schemas/replay';
import { toolError, type ReplayMode } from './context';

/** Tools that change something or wait on the operator: in a replay they are never run. */
export const PARKING_TOOLS = ['request_execution', 'propose_plan', 'ask_operator'];

type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose => (v && typeof v === 'object' ? (v as Loose) : {});
const step = (s: unknown) => ({ action: obj(s).action, target: obj(s).target, params: obj(s).params ?? {} });

/**
 * What identifies a tool call across the original and a replay: an execution by action, target
 * and params (not the reason it gave), a plan by its steps, a question by its prompt, a read by
 * its whole input; as canonical JSON (key order does not matter).
 */
export function replayKey(tool: string, input: unknown): string {
	const i = obj(input);
	if (tool === 'request_execution') return canonicalJson(step(i));
	if (tool === 'propose_plan') return canonicalJson(Array.isArray(i.steps) ? i.steps.map(step) : []);
	if (tool === 'ask_operator') return canonicalJson({ prompt: i.prompt });
	return canonicalJson(input ?? {});
}

/** Whether a tool result is an answer a replay gave instead of running (parkedForOperator lets the turn go on). */
export function isReplayAnswer(o: unknown): boolean {
	return typeof obj(o).replay === 'string';
}

function isError(o: unknown): boolean {
	return typeof obj(o).error === 'string';
}

/**
 * The replay mode of one turn over a recording: reads answer with what the original got,
 * executions and plans are "would have" and answered with the original outcome of the same
 * call, questions with the original answers. Nothing here reaches a host or writes a row.
 */
export class ReplayBook implements ReplayMode {
	#used = new Set<RecordedCall>();

	constructor(
		private recording: Recording,
		private live = false
	) {}

	/** The first call of the original with this tool and key not answered yet, else any such call. */
	#take(tool: string, key: string, anyOfTool = false): RecordedCall | undefined {
		const same = this.recording.calls.filter((c) => c.tool === tool && (c.key === key || anyOfTool));
		const c = same.find((x) => !this.#used.has(x) && x.key === key) ?? same.find((x) => !this.#used.has(x)) ?? same.find((x) => x.key === key);
		if (c) this.#used.add(c);
		return c;
	}

	async answer(tool: string, input: unknown, live: () => Promise<unknown>): Promise<unknown> {
		const key = replayKey(tool, input);
		const i = obj(input);
		if (tool === 'request_execution') {
			const c = this.#take(tool, key);
			const what = `would have asked to run ${String(i.action)} on ${String(i.target)}`;
			if (c?.outcome) return { replay: `${what}; this is what it did in the original session`, action: i.action, target: i.target, ...c.outcome };
			// The original refused the same call (a wrong param): the same refusal.
			if (c && isError(c.output)) return c.output;
			return { replay: what, action: i.action, target: i.target, status: 'not run in replay' };
		}
		if (tool === 'propose_plan') {
			const c = this.#take(tool, key);
			const what = `would have proposed the plan “${String(i.title)}”`;
			if (c?.outcome) return { replay: `${what}; this is how it ended in the original session`, ...c.outcome };
			if (c && isError(c.output)) return c.output;
			return { replay: what, status: 'not run in replay' };
		}
		if (tool === 'ask_operator') {
			// The same question, else the next one asked in the original: the operator's answers in order.
			const c = this.#take(tool, key, true);
			const answer = c?.outcome?.answer;
			if (typeof answer === 'string') return { replay: 'the operator’s answer in the original session', prompt: i.prompt, answer };
			return { replay: 'the question was not answered in the original session', prompt: i.prompt, status: 'not answered in replay' };
		}
		const c = this.#take(tool, key);
		if (c) return c.output;
		if (this.live) return live();
		return toolError('not recorded in the original session', 'this is a replay: only the calls the original session made have results');
	}
}

/** A tool whose calls a replay answers (the description and schema the model sees stay the same). */
export function replayed(name: string, t: Tool, mode: ReplayMode): Tool {
	const execute = t.execute;
	if (!execute) return t;
	return {
		...t,
		execute: (input, options) => mode.answer(name, input, async () => (PARKING_TOOLS.includes(name) ? toolError('not run in replay') : execute(input, options)))
	};
}
