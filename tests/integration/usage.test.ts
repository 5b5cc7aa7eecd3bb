import { afterEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { rebuildReviewFacts } from '../../src/lib/server/review/rebuild';
import { reviewSession } from '../../src/lib/server/review/session';
import { reviewOverview } from '../../src/lib/server/review/overview';
import { usageOf } from '../../src/lib/messages/usage';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { view } from '../helpers/message-view';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true });
afterEach(() => {
	delete process.env.NOMOS_TURN_TOKEN_BUDGET;
	delete process.env.NOMOS_PRICES;
	resetEnvCache();
});

async function newSession(userText: string) {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'usage');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: userText }], status: 'complete', origin: 'chat' });
		return id;
	});
}

const search = { toolCalls: [{ name: 'search_knowledge', args: { query: 'backup schedule' } }] };

async function assistant(sessionId: string, nth = 0) {
	const msgs = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant');
	return msgs[nth];
}

describe('tokens per step, recorded with the turn', () => {
	it('records every model call of a turn (input, output, cached) with the model, and the sums', async () => {
		const sessionId = await newSession('what is the backup schedule?');
		llm.push(
			{ ...search, usage: { promptTokens: 1000, completionTokens: 50, cachedTokens: 800 } },
			{ text: 'Nightly at 02:00.', usage: { promptTokens: 1200, completionTokens: 30, cachedTokens: 1000 } }
		);
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		// The real client asked for the usage chunk.
		expect(llm.requests[0].body?.stream_options).toMatchObject({ include_usage: true });
		const msg = await assistant(sessionId);
		expect(usageOf(msg.parts)).toEqual({
			steps: [
				{ model: 'scripted', input: 1000, output: 50, cached: 800 },
				{ model: 'scripted', input: 1200, output: 30, cached: 1000 }
			],
			input: 2200,
			output: 80,
			cached: 1800
		});
		// One usage part, replaced in place; what the operator reads is unchanged.
		expect(msg.parts.filter((p) => p.type === 'data-usage')).toHaveLength(1);
		// (Scripted prompt sizes far below what was sent also bring the "context cut" note: not ours.)
		expect(view(msg.parts).filter((p) => p.type !== 'note' || p.kind !== 'context')).toMatchObject([
			{ type: 'tool-call', toolName: 'search_knowledge', state: 'done' },
			{ type: 'text', text: 'Nightly at 02:00.' }
		]);

		// The review's facts, written with the message.
		const [f] = await sql()`select input_tokens::int as i, output_tokens::int as o, cached_tokens::int as c from message_facts where message_id = ${msg.id}`;
		expect(f).toEqual({ i: 2200, o: 80, c: 1800 });

		// A second turn adds to the session's totals incrementally.
		llm.push({ text: 'Anything else?', usage: { promptTokens: 1500, completionTokens: 10, cachedTokens: 1200 } });
		await runTurn({ sessionId, origin: 'chat' });
		const [s] = await sql()`select input_tokens::int as i, output_tokens::int as o, cached_tokens::int as c from session_facts where session_id = ${sessionId}`;
		expect(s).toEqual({ i: 3700, o: 90, c: 3000 });
	});

	it('estimates usage when the script gives none (never zero for a real call), and a failed attempt adds nothing', async () => {
		const sessionId = await newSession('hello');
		llm.push({ fault: 'http500' }, { text: 'Hi there, all fine.' });
		await runTurn({ sessionId, origin: 'chat' });
		const u = usageOf((await assistant(sessionId)).parts)!;
		expect(u.steps).toHaveLength(1);
		expect(u.input).toBeGreaterThan(100);
		expect(u.output).toBe(Math.ceil('Hi there, all fine.'.length / 4));
		expect(u.cached).toBe(0);
	});

	it('the answer path (a resumed turn) and the continuation path record usage too', async () => {
		const sessionId = await newSession('deploy it');
		llm.push({ text: 'Resumed with your answer.', usage: { promptTokens: 300, completionTokens: 7 } });
		await agent__run_turn({ sessionId, origin: 'resume', notes: ['The operator answered: yes'] }, {} as never);
		expect(usageOf((await assistant(sessionId, 0)).parts)).toMatchObject({ input: 300, output: 7 });
		expect((await assistant(sessionId, 0)).origin).toBe('resume');

		await sql()`insert into assent_windows (session_id, expires_at) values (${sessionId}, now() + interval '30 minutes')`;
		const [e] = await sql()`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, status, result, finished_at)
			values (${sessionId}, 'strong', 'host:strong', 'pct_create', '{}'::jsonb, 'config_mutation', ${crypto.randomUUID()}, 'succeeded', 'CT 105 created', now())
			returning id`;
		await sql()`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
		llm.push({ text: 'It is up.', usage: { promptTokens: 400, completionTokens: 5, cachedTokens: 300 } });
		expect(await continueSession(sessionId)).toBe('turn');
		const cont = await assistant(sessionId, 1);
		expect(cont.origin).toBe('continuation');
		expect(usageOf(cont.parts)).toMatchObject({ input: 400, output: 5, cached: 300 });
	});
});

describe('the turn token budget', () => {
	it('stops before the next model call once the steps exceed it, with a note the agent reads next turn', async () => {
		process.env.NOMOS_TURN_TOKEN_BUDGET = '1500';
		resetEnvCache();
		const sessionId = await newSession('search twice');
		llm.push({ ...search, usage: { promptTokens: 1000, completionTokens: 600 } }, { text: 'never asked for' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		expect(llm.requests).toHaveLength(1);
		const msg = await assistant(sessionId);
		const parts = view(msg.parts);
		// Nothing half-written: the call of the last step has its result.
		expect(parts[0]).toMatchObject({ type: 'tool-call', toolName: 'search_knowledge', state: 'done' });
		expect(parts.filter((p) => p.type === 'note' && p.kind === 'budget')).toEqual([
			{
				type: 'note',
				kind: 'budget',
				text: 'Stopped: this turn used 1.6k tokens, over the 1.5k budget (NOMOS_TURN_TOKEN_BUDGET). Send a message to go on.'
			}
		]);
		expect(parts.at(-1)).toMatchObject({ type: 'note', kind: 'budget' });
		expect(usageOf(msg.parts)).toMatchObject({ input: 1000, output: 600 });

		expect(llm.state().pending).toBe(1);

		// The next turn (a continuation counts as a turn: its own budget) shows the agent why it stopped.
		llm.reset();
		llm.push({ text: 'Going on.', usage: { promptTokens: 10, completionTokens: 2 } });
		await runTurn({ sessionId, origin: 'continuation' });
		const sent = JSON.stringify(llm.requests[0].body?.messages);
		expect(sent).toContain('[system note — not from the operator] Stopped: this turn used 1.6k tokens, over the 1.5k budget');
		expect(view((await assistant(sessionId, 1)).parts)[0]).toEqual({ type: 'text', text: 'Going on.' });
	});

	it('under the budget the turn goes on as usual; without one it never stops', async () => {
		process.env.NOMOS_TURN_TOKEN_BUDGET = '5000';
		resetEnvCache();
		const a = await newSession('search');
		llm.push({ ...search, usage: { promptTokens: 1000, completionTokens: 600 } }, { text: 'Done.', usage: { promptTokens: 1700, completionTokens: 5 } });
		await runTurn({ sessionId: a, origin: 'chat' });
		expect(llm.requests).toHaveLength(2);
		expect(view((await assistant(a)).parts).some((p) => p.type === 'note' && p.kind === 'budget')).toBe(false);

		delete process.env.NOMOS_TURN_TOKEN_BUDGET;
		resetEnvCache();
		llm.reset();
		const b = await newSession('search');
		llm.push({ ...search, usage: { promptTokens: 900_000, completionTokens: 600 } }, { text: 'Done.' });
		await runTurn({ sessionId: b, origin: 'chat' });
		expect(llm.requests).toHaveLength(2);
	});

	it('a failed attempt is retried under the budget, not over it', async () => {
		process.env.NOMOS_TURN_TOKEN_BUDGET = '1500';
		resetEnvCache();
		const sessionId = await newSession('search');
		llm.push({ ...search, usage: { promptTokens: 1000, completionTokens: 100 } }, { fault: 'http500' }, { text: 'retried' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		// Under the budget after step 1, so step 2 is asked for; it fails, and by then 1.1k < 1.5k: retried.
		expect(r.status).toBe('complete');
		expect(llm.requests).toHaveLength(3);

		// An empty reply is retried, unless it already took the turn over its budget.
		llm.reset();
		process.env.NOMOS_TURN_TOKEN_BUDGET = '10';
		resetEnvCache();
		const b = await newSession('anything');
		llm.push({ fault: 'empty' }, { text: 'never asked for' });
		const r2 = await runTurn({ sessionId: b, origin: 'chat' });
		expect(llm.requests).toHaveLength(1);
		expect(r2.status).toBe('error');
		const last = view((await assistant(b)).parts).at(-1);
		expect(last).toMatchObject({
			type: 'note',
			kind: 'budget',
			text: expect.stringMatching(/^Stopped: this turn used \d+(\.\d)?k? tokens, over the 10 budget/)
		});
	});
});

describe('review: tokens per session, rebuilt, priced', () => {
	it("shows a session's tokens and cost, the overview's per-session tokens, and a rebuild recomputes them", async () => {
		process.env.NOMOS_PRICES = JSON.stringify({ scripted: { input: 2, output: 8, cached: 0.5 } });
		resetEnvCache();
		const sessionId = await newSession('priced');
		llm.push({ text: 'Priced answer.', usage: { promptTokens: 1_000_000, completionTokens: 100_000, cachedTokens: 400_000 } });
		await runTurn({ sessionId, origin: 'chat' });

		const review = await reviewSession(sessionId);
		expect(review!.totals.tokens).toEqual({ input: 1_000_000, output: 100_000, cached: 400_000 });
		// 600k uncached × $2 + 400k cached × $0.5 + 100k out × $8 per million = 1.2 + 0.2 + 0.8
		expect(review!.totals.costUsd).toBeCloseTo(2.2, 6);
		expect(review!.messages.find((m) => m.role === 'assistant')!.tokens).toEqual({ input: 1_000_000, output: 100_000, cached: 400_000 });

		// A model without a price: no cost rather than a wrong one.
		process.env.NOMOS_PRICES = JSON.stringify({ other: { input: 1, output: 1 } });
		resetEnvCache();
		expect((await reviewSession(sessionId))!.totals.costUsd).toBeNull();

		await rebuildReviewFacts({ wait: true });
		const overview = await reviewOverview({ limit: 500 });
		expect(overview.source).toBe('facts');
		const mine = overview.tokenSessions.find((s) => s.id === sessionId);
		expect(mine?.tokens).toEqual({ input: 1_000_000, output: 100_000, cached: 400_000 });
		expect(overview.tokenSessions[0].id).toBe(sessionId);
		expect(overview.sessions.find((s) => s.id === sessionId)?.tokens.input).toBe(1_000_000);
		expect(overview.tokens.input).toBeGreaterThanOrEqual(1_000_000);

		// The parts are the truth: facts zeroed behind the review's back come back with a rebuild.
		await sql()`update message_facts set input_tokens = 0, output_tokens = 0, cached_tokens = 0 where session_id = ${sessionId}`;
		await sql()`update session_facts set input_tokens = 0 where session_id = ${sessionId}`;
		await rebuildReviewFacts({ wait: true });
		const [s] = await sql()`select input_tokens::int as i, output_tokens::int as o, cached_tokens::int as c from session_facts where session_id = ${sessionId}`;
		expect(s).toEqual({ i: 1_000_000, o: 100_000, c: 400_000 });
		// Read from the parts, the overview says the same.
		const fromParts = await reviewOverview({ limit: 500 }, sql(), { source: 'parts' });
		expect(fromParts.tokenSessions.find((x) => x.id === sessionId)?.tokens).toEqual(mine?.tokens);
	});

	it("the overview prices every session's tokens by model, kept with each message written, the same from the parts", async () => {
		process.env.NOMOS_PRICES = JSON.stringify({ scripted: { input: 2, output: 8, cached: 0.5 } });
		resetEnvCache();
		const sessionId = await newSession('priced overview');
		llm.push({ text: 'One.', usage: { promptTokens: 500_000, completionTokens: 50_000, cachedTokens: 200_000 } });
		await runTurn({ sessionId, origin: 'chat' });
		llm.push({ text: 'Two.', usage: { promptTokens: 500_000, completionTokens: 50_000, cachedTokens: 200_000 } });
		await runTurn({ sessionId, origin: 'chat' });
		// Written with the messages (no rebuild): per model, on the session's facts.
		const [f] = await sql()<{ u: Record<string, number[]> }[]>`select usage_by_model as u from session_facts where session_id = ${sessionId}`;
		expect(f.u).toEqual({ scripted: [1_000_000, 100_000, 400_000] });

		const overview = await reviewOverview({ limit: 500 });
		expect(overview.source).toBe('facts');
		const mine = overview.sessions.find((s) => s.id === sessionId)!;
		expect(mine.costUsd).toBeCloseTo(2.2, 6);
		// Every session of this file used the one priced model: the total is the sum of theirs.
		const every = await reviewOverview({ limit: 500 });
		expect(every.sessions.length).toBe(every.sessionCount);
		expect(every.costUsd).toBeCloseTo(
			every.sessions.reduce((n, s) => n + (s.costUsd ?? 0), 0),
			6
		);
		expect(every.costUsd!).toBeGreaterThanOrEqual(2.2);
		const fromParts = await reviewOverview({ limit: 500 }, sql(), { source: 'parts' });
		expect(fromParts.costUsd).toBeCloseTo(every.costUsd!, 6);

		// A model without a price: no total rather than a wrong one.
		process.env.NOMOS_PRICES = JSON.stringify({ other: { input: 1, output: 1 } });
		resetEnvCache();
		const unpriced = await reviewOverview({ limit: 500 });
		expect(unpriced.costUsd).toBeNull();
		expect(unpriced.sessions.find((s) => s.id === sessionId)!.costUsd).toBeNull();
	});
});
