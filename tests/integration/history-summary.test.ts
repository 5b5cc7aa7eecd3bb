// Older turns folded into a stored summary (issue #30), with the scripted model writing the
// summaries: a long session's requests stay inside the history budget, a summary is asked for
// once per fold point (not per request) and extends the one before, the operator's transcript
// is untouched, a failed or empty summary request leaves the turn running on the unfolded
// history, and the session review lists the summaries.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { listHistorySummaries } from '../../src/lib/server/db/queries/summaries';
import { resetEnvCache } from '../../src/lib/server/env';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { promptParts } from '../../src/lib/server/agent/prompt-tokens';
import { SUMMARY_LABEL, SUMMARY_SYSTEM } from '../../src/lib/server/agent/summary';
import { renderReviewMarkdown } from '../../src/lib/server/review/markdown';
import { reviewSession } from '../../src/lib/server/review/session';
import { startScriptedLlm, type RecordedRequest, type ScriptedLlm, type ScriptedResponse } from '../doubles/llm/server';
import { useTestDatabase } from '../helpers/db';
import { useHub } from '../helpers/executions';
import { scaled } from '../helpers/time';

useTestDatabase();
useHub();
let llm: ScriptedLlm;
const BUDGET = 1200;

beforeAll(async () => {
	llm = await startScriptedLlm();
	Object.assign(process.env, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted', NOMOS_HISTORY_TOKENS: String(BUDGET) });
	resetEnvCache();
});
afterAll(async () => {
	await llm.close();
	delete process.env.OPENAI_BASE_URL;
	delete process.env.NOMOS_HISTORY_TOKENS;
	resetEnvCache();
});
beforeEach(() => {
	llm.reset();
	forgetContextWindow();
});

const isSummaryRequest = (r: RecordedRequest) => JSON.stringify(r.body?.messages?.[0]?.content ?? '').includes(SUMMARY_SYSTEM.slice(0, 40));
const chats = () => llm.requests.filter((r) => r.path.endsWith('/chat/completions'));
const turnRequests = () => chats().filter((r) => !isSummaryRequest(r));
const summaryRequests = () => chats().filter(isSummaryRequest);
const lastUserText = (r: RecordedRequest) => JSON.stringify(r.body?.messages?.findLast((m) => m.role === 'user')?.content ?? '');

/** Each turn: one list_lxcs call, then a long answer; summary requests get `summary(n)`. */
function script(summary: (n: number) => ScriptedResponse) {
	let summaries = 0;
	llm.setFallback((req) => {
		if (isSummaryRequest(req)) return summary(++summaries);
		const last = req.body?.messages?.at(-1);
		if (last?.role === 'tool') return { text: `Here is what I found about it. ${'The fleet is fine and every container answers as it should. '.repeat(6)}` };
		return { toolCalls: [{ name: 'list_lxcs', args: {} }] };
	});
}

async function turn(sessionId: string | null, text: string): Promise<{ sessionId: string; status: string }> {
	const id = await sql().begin<string>(async (tx) => {
		const id = sessionId ?? (await createSession(tx, null, 'long'));
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
	const r = await runTurn({ sessionId: id, origin: 'chat' });
	return { sessionId: id, status: r.status };
}

const ask = (i: number) => `Question ${i}: how is container ${100 + i} doing, and what does it run? Please check its state and tell me in detail.`;

describe('history folded into a stored summary', () => {
	it(
		'a long session folds once per fold point, stays inside the budget, keeps the transcript and shows the summaries in the review',
		async () => {
			script((n) => ({ text: `Summary ${n}: the operator asked about containers 101 to ${100 + n * 3}; all of them run.` }));
			let sessionId: string | null = null;
			let early: Awaited<ReturnType<typeof listMessages>> = [];
			const TURNS = 16;
			for (let i = 1; i <= TURNS; i++) {
				const r = await turn(sessionId, ask(i));
				sessionId = r.sessionId;
				expect(r.status).toBe('complete');
				if (i === 2) early = await listMessages(sql(), sessionId);
			}
			const id = sessionId!;

			const stored = await listHistorySummaries(sql(), id);
			const asked = summaryRequests();
			// At least two folds; one summary request per fold (none repeated per request or per turn).
			expect(stored.length).toBeGreaterThanOrEqual(2);
			expect(asked).toHaveLength(stored.length);
			expect(asked.length).toBeLessThan(TURNS / 2);
			// Summary requests offer no tools; each extends the previous summary.
			for (const r of asked) expect(r.body!.tools ?? []).toHaveLength(0);
			for (let i = 1; i < asked.length; i++) expect(lastUserText(asked[i])).toContain(`Summary ${i}:`);
			expect(stored.map((s) => s.text)).toEqual(stored.map((_, i) => expect.stringContaining(`Summary ${i + 1}:`)));
			expect(stored.every((s, i) => i === 0 || (s.throughSeq > stored[i - 1].throughSeq && s.messages > stored[i - 1].messages))).toBe(true);

			// Every turn request's history (summary note and this turn's own call and result included)
			// stays inside the budget; the whole transcript is far over it.
			const turns = turnRequests();
			expect(turns).toHaveLength(TURNS * 2);
			const histories = turns.map((r) => promptParts(r.body!).history);
			expect(Math.max(...histories)).toBeLessThanOrEqual(BUDGET);
			const last = turns.at(-1)!;
			const notes = last.body!.messages!.filter((m) => JSON.stringify(m.content).includes(SUMMARY_LABEL.slice(0, 40)));
			expect(notes).toHaveLength(1);
			expect(JSON.stringify(notes[0].content)).toContain(`Summary ${stored.length}:`);
			// The note comes first after the instructions, labelled as the model's words.
			expect(last.body!.messages![1]).toBe(notes[0]);
			expect(JSON.stringify(notes[0].content)).toContain('not the operator');
			// Older turns are not sent whole any more: the first question is only in the summary.
			expect(JSON.stringify(last.body!.messages)).not.toContain(ask(1));
			expect(stored.at(-1)!.foldedTokens).toBeGreaterThan(2 * BUDGET);

			// Between folds the conversation only grows at its end (the server's cache holds).
			const foldedAt = new Set(asked.map((r) => r.seq + 1));
			let stable = 0;
			for (let i = 1; i < turns.length; i++) {
				if (foldedAt.has(turns[i].seq)) continue;
				const before = JSON.stringify(turns[i - 1].body!.messages).slice(0, -1);
				if (JSON.stringify(turns[i].body!.messages).startsWith(before)) stable++;
			}
			expect(stable).toBe(turns.length - 1 - asked.length);

			// The operator's transcript is what it was: every message, unchanged, no summary in it.
			const now = await listMessages(sql(), id);
			expect(now).toHaveLength(TURNS * 2);
			for (const m of early) expect(now.find((x) => x.id === m.id)?.parts).toEqual(m.parts);
			expect(JSON.stringify(now.map((m) => m.parts))).not.toContain('Summary 1:');

			// The review lists each fold: what it covers and its tokens.
			const review = (await reviewSession(id))!;
			expect(review.summaries).toHaveLength(stored.length);
			for (const [i, s] of review.summaries.entries()) {
				expect(s.throughIndex).toBe(review.messages.findIndex((m) => m.id === stored[i].throughMessageId));
				expect(s.tokens).toBeGreaterThan(0);
				expect(s.foldedTokens).toBeGreaterThan(s.tokens);
				expect(s.text).toBe(stored[i].text);
			}
			expect(renderReviewMarkdown(review)).toContain('## History summaries');
		},
		scaled(240_000)
	);

	it(
		'a failed or empty summary request leaves the turn running on the unfolded history; the next turn folds',
		async () => {
			process.env.NOMOS_HISTORY_TOKENS = '0';
			resetEnvCache();
			script(() => ({ text: 'never asked' }));
			let sessionId: string | null = null;
			for (let i = 1; i <= 6; i++) sessionId = (await turn(sessionId, ask(i))).sessionId;
			expect(summaryRequests()).toHaveLength(0);
			const id = sessionId!;
			process.env.NOMOS_HISTORY_TOKENS = String(BUDGET);
			resetEnvCache();

			for (const fault of [{ fault: 'http500' }, { fault: 'empty' }] as const) {
				llm.reset();
				script(() => fault);
				const r = await turn(id, ask(10));
				expect(r.status).toBe('complete');
				expect(summaryRequests()).toHaveLength(1);
				expect(await listHistorySummaries(sql(), id)).toHaveLength(0);
				const sent = turnRequests();
				expect(sent).toHaveLength(2);
				// The unfolded history: the first question is still there, no summary note.
				expect(JSON.stringify(sent[0].body!.messages)).toContain(ask(1));
				expect(JSON.stringify(sent[0].body!.messages)).not.toContain(SUMMARY_LABEL.slice(0, 40));
				const reply = (await listMessages(sql(), id)).at(-1)!;
				expect(reply.status).toBe('complete');
				expect(JSON.stringify(reply.parts)).toContain('Here is what I found');
			}

			llm.reset();
			script((n) => ({ text: `Summary ${n} after the failures.` }));
			await turn(id, ask(11));
			expect(summaryRequests()).toHaveLength(1);
			expect(await listHistorySummaries(sql(), id)).toHaveLength(1);
			expect(JSON.stringify(turnRequests()[0].body!.messages)).toContain('Summary 1 after the failures.');
		},
		scaled(240_000)
	);
});
