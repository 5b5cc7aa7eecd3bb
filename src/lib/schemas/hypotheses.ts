import { z } from 'zod';

/**
 * The tools a hypothesis check may name instead of a catalogued action: the agent's read-only
 * tools. Anything that changes the fleet is a request_execution of a mutation, which no check may
 * be (see agent/tools/hypotheses.ts).
 */
export const CHECK_TOOLS = [
	'get_lxc_state',
	'get_entity',
	'list_lxcs',
	'list_entities',
	'get_state_snapshot',
	'search_knowledge',
	'get_execution_status'
] as const;
export const confidences = ['low', 'medium', 'high'] as const;
export const verdicts = ['confirmed', 'refuted'] as const;
export type Confidence = (typeof confidences)[number];
export type Verdict = (typeof verdicts)[number];

const hypothesisId = z.string().regex(/^[A-Za-z0-9_-]{1,16}$/, 'an id of 1–16 letters, digits, - or _');
const toolCallId = z.string().min(1).max(100);

/**
 * The read-only check that would confirm or refute a hypothesis: a catalogued action classified
 * read-only (run with request_execution), or one of CHECK_TOOLS by name (then `target` and
 * `params` are that tool's arguments, as the agent calls it).
 */
export const hypothesisCheck = z
	.object({
		action: z.string().min(1).max(64),
		target: z.string().max(200).optional(),
		params: z.record(z.string(), z.unknown()).optional()
	})
	.strict();
export type HypothesisCheck = z.output<typeof hypothesisCheck>;
/** Whether a check names a read-only tool rather than a catalogued action. */
export const isToolCheck = (c: Pick<HypothesisCheck, 'action'>): boolean => (CHECK_TOOLS as readonly string[]).includes(c.action);

export const hypothesis = z
	.object({
		id: hypothesisId,
		statement: z.string().min(3).max(300),
		evidence: z.array(toolCallId).min(1).max(8),
		check: hypothesisCheck,
		confidence: z.enum(confidences)
	})
	.strict();
export type Hypothesis = z.output<typeof hypothesis>;

export const presentHypothesesInput = z
	.object({
		hypotheses: z
			.array(hypothesis)
			.min(2)
			.max(3)
			.refine((hs) => new Set(hs.map((h) => h.id)).size === hs.length, 'each hypothesis needs its own id')
	})
	.strict();

export const markHypothesisInput = z
	.object({
		id: hypothesisId,
		verdict: z.enum(verdicts),
		result: z.string().min(1).max(500),
		evidence: z.array(toolCallId).min(1).max(5)
	})
	.strict();
export type MarkHypothesisInput = z.output<typeof markHypothesisInput>;

/**
 * What present_hypotheses returns when it accepts a set: its id and the hypotheses' ids (the
 * hypotheses themselves are the call's input, stored with it: the model is not sent them twice).
 */
export const presentedSet = z.object({ setId: toolCallId, shown: z.array(hypothesisId).max(3) });
/** What mark_hypothesis returns when it accepts a verdict. */
export const markedHypothesis = z.object({
	setId: toolCallId,
	id: hypothesisId,
	verdict: z.enum(verdicts),
	result: z.string().max(500),
	evidence: z.array(toolCallId).max(5)
});

/** The operator's "Pursue this": which hypothesis of which presented set (stored as a `data-pursue` part). */
export const pursueHypothesis = z.object({ setId: toolCallId, hypothesisId }).strict();
export type PursueHypothesis = z.output<typeof pursueHypothesis>;
