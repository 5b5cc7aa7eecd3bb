import { jsonSchema, tool } from 'ai';
import type { z } from 'zod';
import { sql } from '../../db/index';
import { listMessages } from '../../conversation/messages';
import { prepareExecution } from '../../executions/prepare';
import { isActionName } from '../../proxmox/actions';
import { finishedCalls, hypothesisSets, latestSetWith, ranCheck, type FinishedCall } from '../../../messages/hypotheses';
import { getExecutionsByIds, type ExecutionRow } from '../../db/queries/executions';
import { recordFinding } from '../../db/queries/findings';
import type { ExecutionStep } from '../../../types/executions';
import { BUSY } from '../../executions/verdict';
import { CHECK_TOOLS, isToolCheck, markHypothesisInput, presentHypothesesInput, type Hypothesis } from '../../../schemas/hypotheses';
import type { MessagePart } from '../../../types/messages';
import { toolError, type ToolContext, type ToolError } from './context';

/** The session's messages as this turn's tools see them: the stored ones, and this reply as folded so far. */
async function sessionMessages(ctx: ToolContext): Promise<Array<{ id: string; parts: MessagePart[] }>> {
	const rows = await listMessages(sql(), ctx.sessionId);
	const own = ctx.replyParts ? await ctx.replyParts() : null;
	const out = rows.map((m) => ({ id: m.id, parts: m.id === ctx.messageId && own ? own : m.parts }));
	if (own && !rows.some((m) => m.id === ctx.messageId)) out.push({ id: ctx.messageId, parts: own });
	return out;
}

/**
 * Refuses a check that is not read-only: an action must resolve (target, params) to a catalogued
 * action classified read-only, so that running it never needs an approval; a tool must be one of
 * CHECK_TOOLS. A prompt-injected model cannot smuggle a mutation in here.
 */
async function refuseCheck(h: Hypothesis): Promise<ToolError | null> {
	if (isToolCheck(h.check)) return null;
	if (!isActionName(h.check.action)) {
		return toolError(
			`hypothesis ${h.id}: the check ${h.check.action} is neither a catalogued action nor a read-only tool`,
			`read-only tools: ${CHECK_TOOLS.join(', ')}`
		);
	}
	const p = await prepareExecution({
		target: h.check.target ?? '',
		action: h.check.action,
		params: h.check.params ?? {},
		reason: `check of hypothesis ${h.id}`
	});
	if ('error' in p) return toolError(`hypothesis ${h.id}: the check is not runnable: ${p.error}`, p.hint);
	if (p.classification !== 'read_only') {
		return toolError(
			`hypothesis ${h.id}: ${h.check.action} is ${p.classification.replace('_', ' ')}, not read-only; a check only reads`,
			'pick a read-only action (e.g. pct_status, ct_service_active) or a read-only tool'
		);
	}
	return null;
}

/**
 * Why a check's execution, as stored, shows nothing about a hypothesis (null: it answered). It
 * answered when it succeeded with output, or when its command got the host's own definite answer:
 * an exit status with words (`systemctl status` exits 3 for an inactive unit). A check that timed
 * out, was stopped, was not run, lost its link, found the host busy or printed nothing did not.
 */
export function unansweredCheck(e: Pick<ExecutionRow, 'id' | 'status' | 'steps' | 'error'>): string | null {
	const said = (s: ExecutionStep | undefined) => `${s?.stdoutTail ?? ''}${s?.stderrTail ?? ''}`.trim();
	const last = e.steps.at(-1);
	if (e.status === 'succeeded') return e.steps.some((s) => said(s)) ? null : `its check (execution ${e.id}) gave no output`;
	const definite =
		e.status === 'failed' && last?.finishedAt !== undefined && typeof last.exitCode === 'number' && !last.stop && said(last) !== '' && !BUSY.test(said(last));
	return definite ? null : `its check (execution ${e.id}) ${e.status}${e.error ? `: ${e.error.slice(0, 200)}` : ''}`;
}

/** Why none of these calls (each ran the check) can settle a hypothesis, or null when one can. */
async function unanswered(ran: FinishedCall[]): Promise<string | null> {
	const ids = ran.map((c) => (c.output as { executionId?: unknown }).executionId).filter((id): id is string => typeof id === 'string');
	if (ids.length < ran.length) return null; // a read-only tool's call: its result is its answer
	const stored = await getExecutionsByIds(sql(), ids);
	const reasons = stored.map(unansweredCheck);
	return reasons.length && reasons.every(Boolean) ? reasons.join('; ') : null;
}

/**
 * What the model is shown of present_hypotheses' input: one field, the hypothesis's shape in the
 * description (every request offers the tool: tokens); the arguments are checked by the strict
 * zod schema, whose error names the wrong field (as request_execution does).
 */
const presentHypothesesShown = jsonSchema<z.output<typeof presentHypothesesInput>>(
	{ type: 'object', properties: { hypotheses: { type: 'array', items: { type: 'object' } } }, required: ['hypotheses'] },
	{
		validate: (value) => {
			const r = presentHypothesesInput.safeParse(value);
			return r.success ? { success: true, value: r.data } : { success: false, error: r.error };
		}
	}
);

/** present_hypotheses: 2–3 candidate causes as cards, each with its evidence, a read-only check and a confidence. */
export function presentHypothesesTool(ctx: ToolContext) {
	return tool({
		description:
			'Diagnosing: 2-3 hypotheses as cards, each {id, statement, evidence: ids of earlier tool calls, check: {action, target?, params?} (a read-only action or tool that settles it), confidence: low|medium|high}. Run the checks, then mark_hypothesis each.',
		inputSchema: presentHypothesesShown,
		execute: async (input, { toolCallId }) => {
			const calls = finishedCalls(await sessionMessages(ctx));
			for (const h of input.hypotheses) {
				const unknown = h.evidence.filter((id) => !calls.has(id));
				if (unknown.length)
					return toolError(`hypothesis ${h.id}: ${unknown.join(', ')} is not a tool call of this session with a result`, 'evidence: ids of earlier tool calls');
				const refused = await refuseCheck(h);
				if (refused) return refused;
			}
			// In an incident's session each hypothesis is a finding of it, uncertain until its check settles it.
			await sql().begin(async (tx) => {
				for (const h of input.hypotheses)
					await recordFinding(tx, { sessionId: ctx.sessionId, what: h.statement, verdict: 'uncertain', evidence: h.evidence.join(', ') });
			});
			return { setId: toolCallId, shown: input.hypotheses.map((h) => h.id), next: 'run each check, then mark_hypothesis' };
		}
	});
}

/** mark_hypothesis: settles one hypothesis by the result of its check. */
export function markHypothesisTool(ctx: ToolContext) {
	return tool({
		description: "Settle a hypothesis by its check's result (evidence: the check's call id).",
		inputSchema: markHypothesisInput,
		execute: async (input) => {
			const messages = await sessionMessages(ctx);
			const set = latestSetWith(hypothesisSets(messages), input.id);
			const h = set?.hypotheses.find((x) => x.id === input.id);
			if (!set || !h) return toolError(`no presented hypothesis ${input.id} in this session`, 'present_hypotheses first');
			const calls = finishedCalls(messages);
			const unknown = input.evidence.filter((id) => !calls.has(id));
			if (unknown.length)
				return toolError(`${unknown.join(', ')} is not a tool call of this session with a result`, 'evidence: the id of the call that ran the check');
			const ran = input.evidence.map((id) => calls.get(id)!).filter((c) => ranCheck(h, c));
			if (!ran.length) {
				const what = isToolCheck(h.check) ? h.check.action : `request_execution of ${h.check.action}`;
				return toolError(`none of the evidence ran the check of ${h.id} (${what})`, 'run the check first, then give its call id');
			}
			// Only a check that answered settles it: the execution it ran, as stored, succeeded with output.
			const why = await unanswered(ran);
			if (why) {
				return toolError(
					`${h.id} cannot be marked ${input.verdict}: ${why}. A check that timed out, was not run or gave no answer shows nothing about the hypothesis`,
					'run the check again (or another read-only check) and mark it by a call that succeeded; until then it stays open'
				);
			}
			// The incident's finding takes the verdict: confirmed, it is present; refuted, it is resolved.
			await sql().begin((tx) =>
				recordFinding(tx, {
					sessionId: ctx.sessionId,
					what: h.statement,
					verdict: input.verdict === 'confirmed' ? 'present' : 'resolved',
					evidence: `${input.result} (${input.evidence.join(', ')})`
				})
			);
			return { setId: set.setId, id: h.id, verdict: input.verdict, result: input.result, evidence: input.evidence };
		}
	});
}
