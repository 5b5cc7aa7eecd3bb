import { sql as appSql, type Sql } from '../db/index';
import { ACTION_NAMES } from '../proxmox/actions';
import { listFailedExecutions, sessionReviewFacts, type ReviewFactsRow, type ReviewMessageRow } from '../db/queries/review';
import { shownStatus } from '../../execution-status';
import { env } from '../env';
import { costOf } from '../../messages/usage';
import { BULK_ALTERNATIVE, BULK_ALTERNATIVE_LXC, N_PLUS_ONE_MIN, PENDING_APPROVAL_HOURS, kindRank, severityRank, type Severity } from '../db/review-rules';
import type { Finding, ReviewMessage, ReviewSummary, SessionReview, UnverifiedExecution } from './types';
import { listUnverifiedExecutions } from '../db/queries/executions';
import { listHistorySummaries } from '../db/queries/summaries';
import { getMessagesByIds } from '../db/queries/messages';
import { hypothesisSets } from '../../messages/hypotheses';
import { perModel } from './overview';

type FactsRow = ReviewFactsRow;
type MessageRow = ReviewMessageRow;

const SUMMARY_CHARS = 120;

const one = (s: string | null | undefined, max = 160) => {
	const t = (s ?? '').replace(/\s+/g, ' ').trim();
	return t.length > max ? t.slice(0, max - 1).trimEnd() + '…' : t;
};
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const list = (xs: string[]) => (xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`);

/**
 * The review of one session: its messages, totals and findings, computed in Postgres
 * (see db/queries/review.ts) from the stored message facts while they are of this code's version, else
 * from the parts (`source` forces one); this only turns the aggregates into sentences. Null
 * when no such session.
 */
export async function reviewSession(sessionId: string, sql: Sql = appSql(), opts: { source?: 'facts' | 'parts' } = {}): Promise<SessionReview | null> {
	const found = await sessionReviewFacts(sql, sessionId, opts);
	if (!found) return null;
	const { session, facts: f, messages: rows } = found;
	const idxById = new Map(rows.map((m) => [m.id, m.idx]));
	const summaries: ReviewSummary[] = (await listHistorySummaries(sql, sessionId)).map((h) => ({
		throughIndex: idxById.get(h.throughMessageId) ?? null,
		messages: h.messages,
		tokens: h.tokens,
		foldedTokens: h.foldedTokens,
		request: { input: h.inputTokens, output: h.outputTokens },
		model: h.model,
		createdAt: new Date(h.createdAt).toISOString(),
		text: h.text
	}));
	const messages: ReviewMessage[] = rows.map((m) => ({
		index: m.idx,
		id: m.id,
		role: m.role,
		origin: m.origin,
		status: m.status,
		createdAt: m.created_at,
		toolCalls: m.calls,
		topTools: m.top_tools ?? [],
		tokens: { input: Number(m.input_tokens), output: Number(m.output_tokens), cached: Number(m.cached_tokens) },
		summary: m.summary.length > SUMMARY_CHARS ? m.summary.slice(0, SUMMARY_CHARS).trimEnd() + '…' : m.summary
	}));
	// The hypotheses the agent presented, with their verdicts and the operator's pick (from the parts).
	// Only the parts of the messages the facts mark as holding such parts are read (reading every
	// part of a 6,000-call session to find them was most of its review's time).
	const withHypotheses = (
		await getMessagesByIds(
			sql,
			rows.filter((m) => m.hypotheses).map((m) => m.id)
		)
	).sort((a, b) => (idxById.get(a.id) ?? 0) - (idxById.get(b.id) ?? 0));
	const hypotheses = hypothesisSets(withHypotheses).map((h) => ({ ...h, index: idxById.get(h.messageId) ?? null }));
	const unverified = (await listUnverifiedExecutions(sql, sessionId)) as UnverifiedExecution[];
	const goal = one(rows.find((m) => m.role === 'user')?.summary ?? session.title, SUMMARY_CHARS);
	if (!f) {
		return {
			session,
			goal,
			totals: emptyTotals(),
			outcome: { reached: false, reason: 'The session has no messages.' },
			findings: [],
			messages,
			summaries,
			hypotheses,
			unverified
		};
	}

	// Failed before anything ran ("not run: …") is told apart from failed, as on the cards.
	const failedRuns = new Map((await listFailedExecutions(sql, sessionId)).map((e) => [e.id, shownStatus(e)]));
	const notRun = [...failedRuns.values()].filter((s) => s === 'not_run').length;
	const totals: SessionReview['totals'] = {
		messages: f.messages,
		byRole: { user: f.user_messages, assistant: f.assistant_messages, system: f.system_messages },
		toolCalls: f.tool_calls,
		firstAt: f.first_at,
		lastAt: f.last_at,
		durationSeconds: f.first_at && f.last_at ? Math.round((Date.parse(f.last_at) - Date.parse(f.first_at)) / 1000) : 0,
		executions: {
			requested: f.exec_requested,
			approved: f.exec_approved,
			succeeded: f.exec_succeeded,
			failed: Math.max(0, f.exec_failed - notRun),
			notRun,
			denied: f.exec_denied,
			expired: f.exec_expired
		},
		questions: { asked: f.questions_asked, answered: f.questions_answered, open: f.questions_open },
		tokens: { input: Number(f.input_tokens), output: Number(f.output_tokens), cached: Number(f.cached_tokens) },
		// from the facts' tokens per model, as the overview prices the session (not its parts again)
		costUsd: costOf(perModel(f.usage_by_model), env().NOMOS_PRICES)
	};

	const byIdx = new Map(rows.map((m) => [m.idx, m]));
	const findings: Finding[] = [];
	if (f.sev_missing_capability) findings.push(missingCapability(f, f.sev_missing_capability));
	if (f.sev_n_plus_one) findings.push(nPlusOne(f, f.sev_n_plus_one, byIdx));
	if (f.sev_operator_as_event_loop) findings.push(eventLoop(f, f.sev_operator_as_event_loop, byIdx));
	if (f.sev_silent_failure) findings.push(silentFailure(f, f.sev_silent_failure, byIdx, failedRuns));
	if (f.sev_stall) findings.push(stall(f, f.sev_stall));
	const outcome = goalOutcome(f, rows, notRun);
	findings.push(outcome.finding);
	findings.sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || kindRank(a.kind) - kindRank(b.kind));

	return { session, goal, totals, outcome: { reached: f.reached, reason: outcome.reason }, findings, messages, summaries, hypotheses, unverified };
}

function emptyTotals(): SessionReview['totals'] {
	return {
		messages: 0,
		byRole: { user: 0, assistant: 0, system: 0 },
		toolCalls: 0,
		firstAt: null,
		lastAt: null,
		durationSeconds: 0,
		executions: { requested: 0, approved: 0, succeeded: 0, failed: 0, notRun: 0, denied: 0, expired: 0 },
		questions: { asked: 0, answered: 0, open: 0 },
		tokens: { input: 0, output: 0, cached: 0 },
		costUsd: null
	};
}

function missingCapability(f: FactsRow, severity: Severity): Finding {
	const names = f.cap_names;
	const detail: string[] = [];
	for (const d of f.cap_detail ?? []) {
		if (d.cap_errs > 0) {
			detail.push(`message ${d.idx}: ${plural(d.cap_errs, 'tool result')} said “${one(d.cap_example, 120)}”`);
		}
		if (d.says_cannot && d.excerpt) detail.push(`message ${d.idx}: “${one(d.excerpt, 200)}”`);
	}
	detail.push(f.exec_succeeded > 0 ? 'no execution succeeded after these messages' : 'no execution succeeded in the session');
	const known = names.filter((n) => (ACTION_NAMES as string[]).includes(n));
	const missing = names.filter((n) => !known.includes(n));
	const fixes: string[] = [];
	if (missing.length) {
		fixes.push(
			`Add ${list(missing.map((n) => `a ${n} action`))} to the execution catalogue (src/lib/server/proxmox/actions.ts: zod params, a fixed argv template, a classification) so request_execution accepts it.`
		);
	}
	if (known.length) {
		fixes.push(
			`${list(known)} ${known.length === 1 ? 'is' : 'are'} in the catalogue now: if the session predates ${known.length === 1 ? 'it' : 'them'}, re-run the goal; otherwise check that the request_execution description lists ${known.length === 1 ? 'it' : 'them'}.`
		);
	}
	if (!names.length) fixes.push('Give the agent the action it asked for (execution catalogue or a tool), or a plan the operator can run by hand.');
	return {
		kind: 'missing_capability',
		severity,
		title: names.length ? `The agent lacked ${list(names)}, which the goal needed` : 'The agent said it could not do what the goal needed',
		evidence: { messageIndexes: f.cap_idx, detail },
		fix: fixes.join(' ')
	};
}

function bulkFor(tool: string, m: MessageRow | undefined, n: number): string {
	if (tool === 'get_entity' && m && m.lxc_refs * 2 >= n) return BULK_ALTERNATIVE_LXC;
	return BULK_ALTERNATIVE[tool] ?? 'a bulk tool';
}

function nPlusOne(f: FactsRow, severity: Severity, byIdx: Map<number, MessageRow>): Finding {
	const detail: string[] = [];
	let worst: { idx: number; tool: string; n: number } | null = null;
	for (const idx of f.n1_idx) {
		const m = byIdx.get(idx);
		for (const t of m?.top_tools ?? []) {
			if (!(t.tool in BULK_ALTERNATIVE) || t.n < N_PLUS_ONE_MIN) continue;
			detail.push(`message ${idx}: ${t.tool} ×${t.n} (of ${m!.calls} tool calls); ${bulkFor(t.tool, m, t.n)} answers it in one call`);
			if (!worst || t.n > worst.n) worst = { idx, tool: t.tool, n: t.n };
		}
	}
	const w = worst ?? { idx: f.n1_idx[0] ?? 0, tool: 'get_entity', n: f.n1_max ?? 0 };
	const alt = bulkFor(w.tool, byIdx.get(w.idx), w.n);
	return {
		kind: 'n_plus_one',
		severity,
		title: `${w.tool} ×${w.n} in message ${w.idx}; use ${alt}`,
		evidence: { messageIndexes: f.n1_idx, detail },
		fix: `Fetch the fleet once with ${alt} instead of one ${w.tool} per entity; tell the agent (soul.md / tool descriptions) to prefer bulk tools when more than a few entities are involved.`
	};
}

function eventLoop(f: FactsRow, severity: Severity, byIdx: Map<number, MessageRow>): Finding {
	const said = f.nudge_idx.map((i) => `message ${i}: “${one(byIdx.get(i)?.summary, 60)}”`);
	const words = [...new Set(f.nudge_idx.map((i) => `“${one(byIdx.get(i)?.summary, 30)}”`))];
	return {
		kind: 'operator_as_event_loop',
		severity,
		title: `The operator nudged the agent on ${f.nudge_idx.length}× (${words.join(', ')})`,
		evidence: { messageIndexes: f.nudge_idx, detail: said },
		fix: 'The agent stopped after each step and waited to be told to go on. Let a turn keep working until the goal is reached or a real decision is needed, and end a turn with ask_operator / propose_plan when it needs input.'
	};
}

function silentFailure(f: FactsRow, severity: Severity, byIdx: Map<number, MessageRow>, failedRuns: Map<string, string>): Finding {
	const detail: string[] = [];
	const silentIdx: number[] = [];
	for (const e of f.silent_list ?? []) {
		const after = e.next_idx === null ? 'no assistant message came after it' : `no assistant message from ${e.next_idx} on mentions it`;
		const notRun = (failedRuns.get(e.id) ?? shownStatus({ status: 'failed', error: e.error })) === 'not_run';
		const why = e.error ? one(notRun ? e.error.replace(/^not run:\s*/, '') : e.error, 100) : '';
		detail.push(`execution ${e.id.slice(0, 8)} (${e.action} on ${e.target}) ${notRun ? 'was not run' : 'failed'}${why ? `: ${why}` : ''} — ${after}`);
		if (e.next_idx !== null) silentIdx.push(e.next_idx);
	}
	for (const i of f.blank_idx) {
		const m = byIdx.get(i);
		detail.push(`message ${i}: assistant turn ${m?.status === 'error' ? 'ended with status error' : 'is blank'}`);
	}
	for (const i of f.retry_idx) detail.push(`message ${i}: the model returned nothing and the turn was retried`);
	const silentNotRun = (f.silent_list ?? []).filter((e) => failedRuns.get(e.id) === 'not_run').length;
	const silentFailed = f.silent_failed - silentNotRun;
	const parts = [
		silentFailed > 0 ? plural(silentFailed, 'failed execution') + ' never reported' : '',
		silentNotRun > 0 ? plural(silentNotRun, 'execution') + ' not run never reported' : '',
		f.blank_idx.length ? plural(f.blank_idx.length, 'blank or errored turn') : '',
		f.retry_idx.length ? plural(f.retry_idx.length, 'retried turn') : ''
	].filter(Boolean);
	return {
		kind: 'silent_failure',
		severity,
		title: `Silent failure: ${parts.join(', ')}`,
		evidence: { messageIndexes: [...new Set([...silentIdx, ...f.blank_idx, ...f.retry_idx])].sort((a, b) => a - b), detail },
		fix: 'Make every failure visible: the continuation turn after an execution should say when it failed and why (get_execution_status), and empty or errored model replies need a check of the model server.'
	};
}

function stall(f: FactsRow, severity: Severity): Finding {
	const detail: string[] = [];
	for (const p of f.open_prompts ?? []) detail.push(`open question never answered: “${one(p, 120)}”`);
	if (f.pending_long) detail.push(`${plural(f.pending_long, 'approval')} pending for more than ${PENDING_APPROVAL_HOURS} h`);
	for (const i of f.notext_idx) detail.push(`message ${i}: the assistant turn ended with tool calls and no text`);
	const parts = [
		f.questions_open ? plural(f.questions_open, 'open question') : '',
		f.pending_long ? plural(f.pending_long, 'stale approval') : '',
		f.notext_idx.length ? plural(f.notext_idx.length, 'turn') + ' without a final answer' : ''
	].filter(Boolean);
	return {
		kind: 'stall',
		severity,
		title: `Stalled: ${parts.join(', ')}`,
		evidence: { messageIndexes: f.notext_idx, detail },
		fix: 'Answer or cancel open questions and decide pending approvals (Ops page); make the agent end every turn with a sentence saying what happens next.'
	};
}

function goalOutcome(f: FactsRow, rows: MessageRow[], notRun: number): { finding: Finding; reason: string } {
	const last = [...rows].reverse().find((m) => m.last_assistant);
	const lastIdx = last ? [last.idx] : [];
	const lastText = last ? `last assistant message ${last.idx}: “${one(last.text, 160)}”` : 'no assistant message';
	if (f.reached) {
		const reason = `${plural(f.exec_succeeded, 'execution')} succeeded and the last assistant message reports success.`;
		return {
			reason,
			finding: {
				kind: 'goal_outcome',
				severity: 'low',
				title: 'Goal reached',
				evidence: { messageIndexes: lastIdx, detail: [reason, lastText] },
				fix: 'Nothing to fix.'
			}
		};
	}
	let reason: string;
	if (f.cap_idx.length) reason = `blocked by a missing capability${f.cap_names.length ? ` (${list(f.cap_names)})` : ''}`;
	else if (f.exec_succeeded === 0) reason = f.exec_requested ? 'no requested execution succeeded' : 'no execution was requested';
	else reason = 'the last assistant message does not report success';
	return {
		reason: reason[0].toUpperCase() + reason.slice(1) + '.',
		finding: {
			kind: 'goal_outcome',
			severity: 'low',
			title: `Goal not reached: ${reason}`,
			evidence: {
				messageIndexes: lastIdx,
				detail: [
					`executions: ${f.exec_requested} requested, ${f.exec_succeeded} succeeded, ${f.exec_failed - notRun} failed, ${notRun ? `${notRun} not run, ` : ''}${f.exec_denied} denied`,
					lastText
				]
			},
			fix: f.cap_idx.length
				? 'Close the capability gap above, then re-run the goal.'
				: 'Check why the executions did not lead to the goal and make the agent report the final state explicitly.'
		}
	};
}
