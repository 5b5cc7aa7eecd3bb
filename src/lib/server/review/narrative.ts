import { generateText, type LanguageModel } from 'ai';
import { formatDuration } from './markdown';
import type { SessionReview } from './types';

const SYSTEM =
	'You review sessions in which an AI agent ran a Proxmox homelab for an operator. You get the findings a ' +
	'deterministic analysis computed. Write the root cause of the outcome in ONE plain-text paragraph of 3 to 5 ' +
	'sentences: what the operator wanted, what went wrong and why, and the one change that would have helped most. ' +
	'Use only the evidence given; no lists, no headings, no markdown.';

/** The computed review, compact, as the model's input. */
export function narrativePrompt(r: SessionReview): string {
	const t = r.totals;
	const input = {
		goal: r.goal,
		outcome: r.outcome,
		totals: {
			messages: t.messages,
			byRole: t.byRole,
			toolCalls: t.toolCalls,
			duration: formatDuration(t.durationSeconds),
			executions: t.executions,
			questions: t.questions
		},
		findings: r.findings.map((f) => ({
			kind: f.kind,
			severity: f.severity,
			title: f.title,
			evidence: f.evidence.detail.slice(0, 6),
			fix: f.fix
		}))
	};
	return `Session review:\n${JSON.stringify(input, null, 1)}\n\nWrite the root-cause paragraph.`;
}

/** Asks the model for a one-paragraph root cause; throws what the model call throws. */
export async function writeNarrative(r: SessionReview, model: LanguageModel, signal?: AbortSignal): Promise<string> {
	const { text } = await generateText({
		model,
		system: SYSTEM,
		prompt: narrativePrompt(r),
		maxOutputTokens: 500,
		maxRetries: 1,
		abortSignal: signal
	});
	return text.trim();
}
