import type { MessagePart } from '../types/messages';
import {
	isToolCheck,
	markedHypothesis,
	presentedSet,
	presentHypothesesInput,
	type Hypothesis,
	type PursueHypothesis,
	type Verdict
} from '../schemas/hypotheses';
import { callError, callInput, getToolName, isToolPart } from './parts';

/** One hypothesis as it stands: as presented, with the verdict its check settled (if any). */
export type HypothesisView = Hypothesis & {
	verdict: Verdict | 'open';
	/** What the check showed, in the agent's words, and the tool calls that show it. */
	result?: string;
	verdictEvidence?: string[];
};
/** A set of hypotheses the agent presented in one present_hypotheses call (`setId`: that call's id). */
export type HypothesisSet = { setId: string; messageId: string; hypotheses: HypothesisView[]; pursued: string | null };

type Msg = { id: string; parts: MessagePart[] };

export const PRESENT_TOOL = 'present_hypotheses';
export const MARK_TOOL = 'mark_hypothesis';

/**
 * The session's hypothesis sets, folded from its stored parts in order: each accepted
 * present_hypotheses call opens a set (its input, as the tool accepted it), each accepted mark_hypothesis call settles one of its
 * hypotheses (a later verdict replaces an earlier one), and an operator's `data-pursue` part marks
 * the one chosen. Refused calls (an `{ error }` result) change nothing. The browser, the review and
 * the tools all read the state this way, so what the card shows is what the agent is held to.
 */
export function hypothesisSets(messages: Msg[]): HypothesisSet[] {
	const sets = new Map<string, HypothesisSet>();
	for (const m of messages) {
		for (const p of m.parts) {
			if (p.type === 'data-pursue') {
				const s = sets.get(p.data.setId);
				if (s && s.hypotheses.some((h) => h.id === p.data.hypothesisId)) s.pursued = p.data.hypothesisId;
				continue;
			}
			if (!isToolPart(p) || p.state !== 'output-available' || callError(p) !== null) continue;
			const name = getToolName(p);
			if (name === PRESENT_TOOL) {
				const o = presentedSet.safeParse(p.output);
				const input = presentHypothesesInput.safeParse(callInput(p));
				if (o.success && input.success)
					sets.set(o.data.setId, {
						setId: o.data.setId,
						messageId: m.id,
						hypotheses: input.data.hypotheses.map((h) => ({ ...h, verdict: 'open' })),
						pursued: null
					});
			} else if (name === MARK_TOOL) {
				const o = markedHypothesis.safeParse(p.output);
				const h = o.success ? sets.get(o.data.setId)?.hypotheses.find((x) => x.id === o.data.id) : undefined;
				if (o.success && h) Object.assign(h, { verdict: o.data.verdict, result: o.data.result, verdictEvidence: o.data.evidence });
			}
		}
	}
	return [...sets.values()];
}

/** The latest set with a hypothesis of this id (ids repeat across sets: h1, h2, …). */
export function latestSetWith(sets: HypothesisSet[], id: string): HypothesisSet | undefined {
	return [...sets].reverse().find((s) => s.hypotheses.some((h) => h.id === id));
}

/** A finished tool call of the session, as evidence and checks see it. */
export type FinishedCall = { toolCallId: string; toolName: string; input: unknown; output: unknown };

/** The session's tool calls that have a result (not the hypothesis tools' own), by id. */
export function finishedCalls(messages: Msg[]): Map<string, FinishedCall> {
	const out = new Map<string, FinishedCall>();
	for (const m of messages) {
		for (const p of m.parts) {
			if (!isToolPart(p) || p.state !== 'output-available') continue;
			const toolName = getToolName(p);
			if (toolName === PRESENT_TOOL || toolName === MARK_TOOL) continue;
			out.set(p.toolCallId, { toolCallId: p.toolCallId, toolName, input: callInput(p), output: p.output });
		}
	}
	return out;
}

/** Whether a finished call ran a hypothesis's check: its read-only action, or its tool. */
export function ranCheck(h: Pick<Hypothesis, 'check'>, c: FinishedCall): boolean {
	if (isToolCheck(h.check)) return c.toolName === h.check.action && callErrorOf(c.output) === null;
	if (c.toolName !== 'request_execution' || !c.output || typeof c.output !== 'object') return false;
	const o = c.output as { action?: unknown; classification?: unknown; executionId?: unknown };
	return o.action === h.check.action && o.classification === 'read_only' && typeof o.executionId === 'string';
}

function callErrorOf(output: unknown): string | null {
	return output && typeof output === 'object' && typeof (output as { error?: unknown }).error === 'string' ? (output as { error: string }).error : null;
}

/** The words an operator's "Pursue this" sends (the agent reads them; the `data-pursue` part keeps the choice). */
export function pursueText(h: Pick<Hypothesis, 'id' | 'statement'>): string {
	return `Pursue hypothesis ${h.id}: ${h.statement}`;
}

export type { PursueHypothesis };
