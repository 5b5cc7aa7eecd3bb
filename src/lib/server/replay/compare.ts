import { sql as appSql, type Sql } from '../db/index';
import { listMessages } from '../conversation/messages';
import { sessionReviewFacts } from '../db/queries/review';
import { reviewSession } from '../review/session';
import { ACTIONS, isActionName } from '../proxmox/actions';
import { canonicalJson } from '../../messages/fold';
import { callError, getToolName, isToolPart } from '../../messages/parts';
import { operatorActions, type SessionFigures } from '../../schemas/replay';

type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose => (v && typeof v === 'object' ? (v as Loose) : {});

/**
 * The figures a session is compared by, read the same way from an original and from a replay
 * (its calls from the message parts, its findings from the review). A replay ran nothing, so
 * its goal counts as reached when a replayed request or plan was answered with an original
 * success and, as the review has it, the last assistant message reports success.
 */
export async function sessionFigures(sessionId: string, sql: Sql = appSql()): Promise<SessionFigures | null> {
	const [messages, review, found] = await Promise.all([listMessages(sql, sessionId), reviewSession(sessionId, sql), sessionReviewFacts(sql, sessionId)]);
	if (!review || !found) return null;
	const f = found.facts;
	const toolCalls: string[] = [];
	const requests: string[] = [];
	let approvals = 0;
	let questions = 0;
	let replayedSuccess = 0;
	let replay = false;
	for (const m of messages) {
		if (m.role !== 'assistant') continue;
		for (const p of m.parts) {
			if (!isToolPart(p) || p.state === 'input-streaming') continue;
			const tool = getToolName(p);
			const input = obj(p.input);
			toolCalls.push(`${tool} ${canonicalJson(p.input ?? {})}`.slice(0, 300));
			if (callError(p) || p.state !== 'output-available') continue;
			const out = obj(p.output);
			if (typeof out.replay === 'string') {
				replay = true;
				if (out.status === 'succeeded') replayedSuccess++;
			}
			if (tool === 'request_execution') {
				requests.push(`${String(input.action)} ${String(input.target)}`);
				const action = String(input.action);
				if (!isActionName(action) || ACTIONS[action].classification !== 'read_only') approvals++;
			} else if (tool === 'propose_plan') {
				for (const s of Array.isArray(input.steps) ? input.steps : []) requests.push(`${String(obj(s).action)} ${String(obj(s).target)}`);
				approvals++;
			} else if (tool === 'ask_operator') questions++;
		}
	}
	const capped = review.findings.some((x) => x.kind === 'missing_capability');
	return {
		toolCalls,
		requests,
		approvalsNeeded: approvals,
		questions,
		operatorMessages: messages.filter((m) => m.role === 'user' && m.origin === 'chat').length,
		continues: f?.nudges ?? 0,
		tokens: review.totals.tokens.input + review.totals.tokens.output,
		findings: [...new Set(review.findings.filter((x) => x.kind !== 'goal_outcome').map((x) => x.kind))].sort(),
		goalReached: replay ? replayedSuccess > 0 && Boolean(f?.last_ok) && !capped : review.outcome.reached
	};
}

/** Why a replay falls short of the figures it must keep; empty when it does not. */
export function regressions(expected: SessionFigures, got: SessionFigures): string[] {
	const out: string[] = [];
	if (operatorActions(got) > operatorActions(expected))
		out.push(`more operator actions: ${operatorActions(got)}, expected at most ${operatorActions(expected)}`);
	const back = got.findings.filter((k) => !expected.findings.includes(k));
	if (back.length) out.push(`findings back: ${back.join(', ')}`);
	if (expected.goalReached && !got.goalReached) out.push('the goal was not reached');
	return out;
}

export type ComparisonRow = { label: string; original: string; replay: string; same: boolean };

/** The two sessions side by side, one row per figure. */
export function comparisonRows(a: SessionFigures, b: SessionFigures): ComparisonRow[] {
	const row = (label: string, x: string | number | boolean, y: string | number | boolean): ComparisonRow => ({
		label,
		original: String(x),
		replay: String(y),
		same: String(x) === String(y)
	});
	const list = (xs: string[]) => (xs.length ? xs.join('; ') : '—');
	return [
		row('Tool calls', a.toolCalls.length, b.toolCalls.length),
		row('Calls', list(a.toolCalls), list(b.toolCalls)),
		row('Requests', list(a.requests), list(b.requests)),
		row('Approvals needed', a.approvalsNeeded, b.approvalsNeeded),
		row('Questions', a.questions, b.questions),
		row('Operator messages', a.operatorMessages, b.operatorMessages),
		row('“Continue”s', a.continues, b.continues),
		row('Operator actions', operatorActions(a), operatorActions(b)),
		row('Tokens', a.tokens, b.tokens),
		row('Findings', list(a.findings), list(b.findings)),
		row('Goal reached', a.goalReached ? 'yes' : 'no', b.goalReached ? 'yes' : 'no')
	];
}

/** The comparison as a plain-text table (the replay script prints it). */
export function formatComparison(rows: ComparisonRow[], heads: [string, string] = ['original', 'replay']): string {
	const cut = (s: string) => (s.length > 60 ? s.slice(0, 59) + '…' : s);
	const cells = [['', heads[0], heads[1], ''], ...rows.map((r) => [r.label, cut(r.original), cut(r.replay), r.same ? '' : '≠'])];
	const widths = [0, 1, 2].map((i) => Math.max(...cells.map((c) => c[i].length)));
	return cells
		.map((c) =>
			c
				.map((v, i) => (i < 3 ? v.padEnd(widths[i]) : v))
				.join('  ')
				.trimEnd()
		)
		.join('\n');
}
