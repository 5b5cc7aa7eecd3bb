import { sql as appSql, type Sql } from '../db/index';
import { formatDuration } from '../../format/time';
import { reviewSession } from './session';
import { formatCost, usageLine } from '../../messages/usage';

export { formatDuration };
import type { ReviewOverview, SessionReview } from './types';

/** A table cell: one line, pipes escaped. */
const cell = (s: string) => s.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

/** The review as Markdown: title, totals, findings with evidence and fixes, the message table. */
export function renderReviewMarkdown(r: SessionReview): string {
	const t = r.totals;
	const e = t.executions;
	const out: string[] = [];
	out.push(`# Session review: ${r.session.title}`, '');
	out.push(`- Session: \`${r.session.id}\` (started ${r.session.createdAt.replace('T', ' ').replace(/:\d\dZ$/, ' UTC')})`);
	out.push(`- Goal: ${r.goal || '—'}`);
	out.push(`- Outcome: **${r.outcome.reached ? 'reached' : 'not reached'}** — ${r.outcome.reason}`);
	out.push('');
	out.push('## Totals', '');
	out.push(`- ${t.messages} messages (${t.byRole.user} user, ${t.byRole.assistant} assistant, ${t.byRole.system} system)`);
	out.push(`- ${t.toolCalls} tool calls`);
	out.push(`- Duration: ${formatDuration(t.durationSeconds)} (first to last message)`);
	out.push(
		`- Executions: ${e.requested} requested, ${e.approved} approved, ${e.succeeded} succeeded, ${e.failed} failed, ${e.notRun ? `${e.notRun} not run, ` : ''}${e.denied} denied, ${e.expired} expired`
	);
	out.push(`- Questions: ${t.questions.asked} asked, ${t.questions.answered} answered${t.questions.open ? `, ${t.questions.open} open` : ''}`);
	out.push(`- Tokens: ${usageLine(t.tokens)}${t.costUsd !== null ? ` (${formatCost(t.costUsd)})` : ''}`);
	out.push('');
	out.push('## Findings', '');
	if (!r.findings.length) out.push('No findings.', '');
	for (const [i, f] of r.findings.entries()) {
		out.push(`### ${i + 1}. [${f.severity}] ${f.kind}: ${f.title}`, '');
		if (f.evidence.messageIndexes.length) out.push(`Messages: ${f.evidence.messageIndexes.map((n) => `#${n}`).join(', ')}`, '');
		for (const d of f.evidence.detail) out.push(`- ${d}`);
		if (f.evidence.detail.length) out.push('');
		out.push(`**Fix:** ${f.fix}`, '');
	}
	out.push('## Messages', '');
	out.push('| # | Role | Origin | Tool calls | Top tools | Summary |');
	out.push('|--:|------|--------|-----------:|-----------|---------|');
	for (const m of r.messages) {
		const tools = m.topTools
			.slice(0, 3)
			.map((x) => `${x.tool} ×${x.n}`)
			.join(', ');
		const status = m.status === 'complete' ? '' : ` (${m.status})`;
		out.push(`| ${m.index} | ${m.role}${status} | ${m.origin} | ${m.toolCalls} | ${cell(tools)} | ${cell(m.summary)} |`);
	}
	out.push('');
	if (r.unverified?.length) {
		out.push('## Changes not verified', '', 'Mutations whose read-back did not confirm them: never count them as done.', '');
		for (const u of r.unverified)
			out.push(
				`- \`${u.action}\` on \`${u.target}\` (${u.executionId}): **${u.verdict === 'inconclusive' ? 'inconclusive' : 'still failing'}** — ${cell(u.detail ?? '')}`
			);
		out.push('');
	}
	if (r.hypotheses?.length) {
		out.push('## Hypotheses', '');
		for (const set of r.hypotheses) {
			out.push(`Presented in ${set.index === null ? 'a message not listed' : `#${set.index}`}:`, '');
			for (const h of set.hypotheses) {
				const settled = h.result ? ` — ${cell(h.result)} (${(h.verdictEvidence ?? []).join(', ')})` : '';
				const pursued = set.pursued === h.id ? ' — **pursued by the operator**' : '';
				out.push(
					`- \`${h.id}\` **${h.verdict}** (${h.confidence} confidence): ${cell(h.statement)}; evidence ${h.evidence.join(', ')}; check \`${h.check.action}${h.check.target ? ` ${h.check.target}` : ''}\`${settled}${pursued}`
				);
			}
			out.push('');
		}
	}
	if (r.summaries?.length) {
		out.push('## History summaries', '', 'What the agent was sent instead of the older messages (written by the model).', '');
		for (const h of r.summaries) {
			const through = h.throughIndex === null ? `${h.messages} messages` : `messages #0–#${h.throughIndex}`;
			out.push(`- ${through}: ${h.foldedTokens} tokens → ${h.tokens} (request: ${h.request.input} in, ${h.request.output} out)`, '', `  > ${cell(h.text)}`, '');
		}
	}
	return out.join('\n');
}

/** The Markdown export of one session's review, or null when there is no such session. */
export async function reviewSessionMarkdown(sessionId: string, sql: Sql = appSql()): Promise<string | null> {
	const r = await reviewSession(sessionId, sql);
	return r ? renderReviewMarkdown(r) : null;
}

/**
 * The cross-session review as Markdown: the filter, the totals, finding kinds, tools by calls and
 * failure rate, and the ranked sessions (each linking to its own review).
 */
export function renderOverviewMarkdown(o: ReviewOverview, origin: string): string {
	const pct = (n: number, d: number) => (d ? `${Math.round((100 * n) / d)}%` : '—');
	const f = o.filter;
	const out: string[] = ['# Session review: all sessions', ''];
	const scope = [f.from ? `from ${f.from}` : '', f.to ? `to ${f.to}` : '', f.outcome ? `outcome ${f.outcome.replace('_', ' ')}` : ''].filter(Boolean);
	out.push(`- Filter: ${scope.length ? scope.join(', ') : 'none (every session)'}`);
	out.push(`- Sessions: ${o.sessionCount} (goal reached in ${o.reachedCount}, ${pct(o.reachedCount, o.sessionCount)})`);
	const og = o.origins;
	out.push(`- Started by: operators ${og.operator}, alerts ${og.alert}, schedules ${og.schedule}`);
	if (og.alert) {
		const s = (x: number | null) => (x === null ? '—' : `${Math.round(x)} s`);
		out.push(
			`- Alerts, median time to findings: ${s(og.alerts.findingsMedianS)} (${og.alerts.withFindings} of ${og.alert}); to an approved fix: ${s(og.alerts.fixMedianS)} (${og.alerts.withFix} of ${og.alert})`
		);
	}
	out.push(`- Tool calls: ${o.toolCallCount}`);
	out.push(`- Tokens: ${usageLine(o.tokens)}${o.costUsd !== null ? ` (${formatCost(o.costUsd)})` : ''}`, '');
	out.push('## Finding kinds', '');
	if (!o.kinds.length) out.push('No findings.', '');
	else {
		out.push('| Kind | Sessions |', '|------|---------:|');
		for (const k of o.kinds) out.push(`| ${k.kind} | ${k.sessions} |`);
		out.push('');
	}
	out.push('## Tools', '');
	if (!o.tools.length) out.push('No tool calls.', '');
	else {
		out.push('| Tool | Calls | Failed | Failure rate |', '|------|------:|-------:|-------------:|');
		for (const t of o.tools) out.push(`| ${cell(t.tool)} | ${t.calls} | ${t.failed} | ${(t.failureRate * 100).toFixed(1)}% |`);
		out.push('');
	}
	out.push(`## Sessions, worst first (${o.sessions.length} of ${o.sessionCount})`, '');
	out.push(
		'| Score | Session | Started | Messages | Tool calls | Findings | Goal |',
		'|------:|---------|---------|---------:|-----------:|----------|------|'
	);
	for (const r of o.sessions) {
		const link = `[${cell(r.title).replace(/[[\]]/g, '\\$&')}](${origin}/admin/review/${r.id})`;
		out.push(
			`| ${r.score} | ${link} | ${r.createdAt.slice(0, 16).replace('T', ' ')} | ${r.messages} | ${r.toolCalls} | ${r.kinds.join(', ') || '—'} | ${r.reached ? 'reached' : 'not reached'} |`
		);
	}
	out.push('');
	return out.join('\n');
}
