// The review's stored facts (message_facts, session_facts) are written by the app's own write
// paths in the transaction that writes each message, and must equal a rebuild from scratch;
// the overview and the one-session review read from them and give the same answers as from
// every message's parts. While the stored facts are of another version (the rules changed),
// the review reads the parts, and the rebuild job restores the fast path.
import { runOnce } from 'graphile-worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { claimQueued, insertMessage } from '../../src/lib/server/db/queries/messages';
import { getMessage, handOverReplies } from '../../src/lib/server/conversation/messages';
import { FACTS_VERSION, markFactsBuilt, refreshMessageFacts, storedFactsVersion } from '../../src/lib/server/db/queries/review-facts';
import { emitEvent } from '../../src/lib/server/db/queries/events';
import { addSystemNote } from '../../src/lib/server/conversation/notes';
import { TEXT_ID } from '../../src/lib/messages/fold';
import type { MessageChunk } from '../../src/lib/types/messages';
import { MessageWriter } from '../../src/lib/server/agent/message-writer';
import { enqueueJob, PRIORITY } from '../../src/lib/server/jobs/enqueue';
import { reviewOverview, reviewSession, type OverviewFilter } from '../../src/lib/server/review';
import { rebuildReviewFacts } from '../../src/lib/server/review/rebuild';
import { TOOL_NAMES } from '../../src/lib/server/db/review-rules';
import { taskList } from '../../tasks/index';
import { prng } from '../helpers/hostile';
import { useTestDatabase } from '../helpers/db';
import { insertFailedSessionFixture, insertHealthySessionFixture, insertNudgedSessionFixture, insertSilentSessionFixture } from '../helpers/review-fixture';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();

const SEED = 0x5eed15;
const SESSIONS = 36;

const rand = prng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
const chance = (p: number) => rand() < p;

const USER_TEXTS = [
	'continue',
	'go on',
	'??',
	'ok, continue',
	'run it yourself',
	'   ',
	'please deploy the wiki on strong as an LXC',
	'also check the backups of ct 104'
];
const ASSISTANT_TEXTS = [
	'Looking into it.',
	"I can't run pct create — only pct_exec, systemctl, restart, apt_upgrade.",
	'There is no pct_create action here.',
	'Done: the wiki is deployed and running.',
	'The deploy failed: unit not found.',
	'Could not reach the host, but it is up now.',
	'I have collected the state; waiting for your go-ahead.',
	'There was an error in step 2.'
];
const TOOLS = [...TOOL_NAMES, 'pct_create'];

/** Milliseconds between writes, so messages and executions get distinct, ordered timestamps. */
const tick = () => new Promise((r) => setTimeout(r, 2));

/**
 * A turn whose process died mid-stream, as it leaves the database: the streaming row (parts
 * empty) and the deltas it sent. The sweeper hands it over to be resumed (handOverReplies).
 */
async function orphanedTurn(sessionId: string): Promise<void> {
	await sql().begin(async (tx) => {
		const m = await insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'streaming', origin: 'chat' });
		const chunks: MessageChunk[] = [
			{ type: 'start-step' },
			{ type: 'text-start', id: TEXT_ID },
			{ type: 'text-delta', id: TEXT_ID, delta: 'Checking the containers first.' },
			{ type: 'text-end', id: TEXT_ID },
			{ type: 'tool-input-start', toolCallId: 'o1', toolName: 'get_entity' },
			{ type: 'tool-input-available', toolCallId: 'o1', toolName: 'get_entity', input: { id: 'lxc:strong/101' } }
		];
		await emitEvent(tx, { sessionId, type: 'message.delta', payload: { messageId: m.id, rev: 1, chunks } });
	});
}

/** One assistant turn through the app's message writer: steps, calls in every state, notes, text. */
async function assistantTurn(sessionId: string, mention: string | null): Promise<void> {
	const w = await MessageWriter.start(sessionId, chance(0.3) ? 'continuation' : 'chat');
	w.startStep();
	if (chance(0.6)) w.appendText(pick(ASSISTANT_TEXTS) + ' ');
	const calls = chance(0.2) ? 0 : 1 + Math.floor(rand() * (chance(0.15) ? 24 : 5));
	for (let i = 0; i < calls; i++) {
		const tool = chance(0.3) ? pick(['get_entity', 'get_lxc_state'] as const) : pick(TOOLS);
		const id = `c${i}`;
		w.startToolCall(id, tool);
		if (chance(0.08)) {
			w.rejectToolCall(id, tool, 'Invalid input: unrecognized key "extra"', { id: `lxc:strong/${100 + i}`, extra: true });
			continue;
		}
		w.setToolInput(id, tool, tool === 'get_entity' ? { id: `${pick(['lxc', 'host'])}:strong/${100 + i}` } : { q: i });
		const r = rand();
		if (r < 0.1) w.failToolCall(id, 'HTTP 503 from example.org');
		else if (r < 0.18) w.finishToolCall(id, { error: "unknown action 'pct_create'", hint: 'valid actions: restart, pct_exec' });
		else if (r < 0.22) w.finishToolCall(id, 'Error: it broke');
		else if (r < 0.25)
			continue; // still running when the turn ends
		else w.finishToolCall(id, { ok: true });
	}
	if (chance(0.1)) w.addNote('retry', 'The model returned nothing (an empty reply); retrying once…');
	// The turn's usage on one of two models: most sessions use one, some both (summed apart in the overview).
	if (chance(0.7)) {
		const [input, output, cached] = [1 + Math.floor(rand() * 5000), Math.floor(rand() * 500), Math.floor(rand() * 1000)];
		w.setUsage({ steps: [{ model: pick(['local-small', 'local-small', 'remote-large']), input, output, cached }], input, output, cached });
	}
	w.finishStep();
	if (calls && chance(0.7)) {
		w.startStep();
		w.appendText(mention ? `Execution ${mention} is finished.` : pick(ASSISTANT_TEXTS));
		w.finishStep();
	}
	await w.finish(chance(0.1) ? 'error' : 'complete', null);
}

async function insertExecution(sessionId: string): Promise<string> {
	const status = pick(['succeeded', 'succeeded', 'failed', 'failed', 'denied', 'expired', 'awaiting_approval'] as const);
	const [e] = await sql()<{ id: string }[]>`
		insert into executions (requested_by_session, target, action, classification, hash, status, error, created_at, approved_at, finished_at)
		values (${sessionId}, 'lxc:strong/101', 'restart', 'config_mutation', ${'facts-' + rand().toString(36).slice(2)}, ${status},
			${status === 'failed' ? 'exit 1: unit not found' : null},
			now() - ${status === 'awaiting_approval' && chance(0.5) ? '2 hours' : '0 seconds'}::interval,
			${status === 'succeeded' || status === 'failed' ? sql()`now()` : null},
			${status === 'awaiting_approval' ? null : sql()`now()`})
		returning id`;
	return e.id;
}

/** A random session written only through the app's write paths (messages), plus executions and questions. */
async function randomSession(i: number): Promise<string> {
	const sessionId = await sql().begin((tx) => createSession(tx, null, `random ${i}`));
	const turns = 1 + Math.floor(rand() * 4);
	let mention: string | null = null;
	for (let t = 0; t < turns; t++) {
		const queued = chance(0.3);
		await sql().begin((tx) =>
			insertMessage(tx, {
				sessionId,
				role: 'user',
				parts: [{ type: 'text', text: t === 0 ? `goal ${i}: deploy the wiki` : pick(USER_TEXTS) }],
				status: queued ? 'queued' : 'complete',
				origin: 'chat'
			})
		);
		if (queued) await sql().begin((tx) => claimQueued(tx, sessionId));
		await tick();
		if (chance(0.25)) await sql().begin((tx) => addSystemNote(tx, sessionId, pick(['execution', 'answer', 'plan']), 'The restart of ct 101 failed: exit 1.'));
		if (t === turns - 1 && chance(0.15)) await orphanedTurn(sessionId);
		else await assistantTurn(sessionId, mention);
		mention = null;
		await tick();
		if (chance(0.5)) {
			const id = await insertExecution(sessionId);
			// A later assistant message sometimes names it by its first 8 characters.
			if (chance(0.3)) mention = id.slice(0, 8);
			await tick();
		}
	}
	if (chance(0.2)) {
		await sql()`insert into session_questions (session_id, prompt, status, answer) values (${sessionId}, 'Which host?', ${chance(0.5) ? 'open' : 'answered'}, null)`;
	}
	return sessionId;
}

type Row = Record<string, unknown>;

/** The stored facts of these sessions, in a stable order. */
async function storedFacts(sessionIds: string[]): Promise<{ messages: Row[]; sessions: Row[] }> {
	const messages = await sql()<Row[]>`select * from message_facts where session_id = any(${sessionIds}::uuid[]) order by message_id`;
	const sessions = await sql()<Row[]>`select * from session_facts where session_id = any(${sessionIds}::uuid[]) order by session_id`;
	return { messages: [...messages], sessions: [...sessions] };
}

/** What a rebuild from nothing stores for these sessions (the stored facts are emptied first). */
async function rebuiltFacts(sessionIds: string[]): Promise<{ messages: Row[]; sessions: Row[] }> {
	await sql()`delete from message_facts`;
	await sql()`delete from session_facts`;
	expect(await rebuildReviewFacts({ wait: true, batch: 7 })).not.toBeNull();
	return storedFacts(sessionIds);
}

/** JSON with sorted keys, without the field that says where the answer was read from. */
function canonical(x: unknown): string {
	return JSON.stringify(x, (k, v: unknown) =>
		k === 'source'
			? undefined
			: v && typeof v === 'object' && !Array.isArray(v)
				? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
				: v
	);
}

const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const FILTERS: OverviewFilter[] = [
	{},
	{ limit: 500 },
	{ outcome: 'reached', limit: 500 },
	{ outcome: 'not_reached' },
	{ from: day(20) },
	{ to: day(10), outcome: 'not_reached', limit: 500 },
	{ from: day(45), to: day(5) }
];

describe('stored review facts', () => {
	const ids: string[] = [];
	let sample: string[] = [];

	beforeAll(async () => {
		for (let i = 0; i < SESSIONS; i++) ids.push(await randomSession(i));
		ids.push(
			await insertFailedSessionFixture(sql()),
			await insertHealthySessionFixture(sql()),
			await insertNudgedSessionFixture(sql()),
			await insertSilentSessionFixture(sql())
		);
		// Two sessions with no messages at all.
		for (const t of ['empty a', 'empty b']) ids.push(await sql().begin((tx) => createSession(tx, null, t)));
		// Turns whose process died: the sweeper hands them over to be resumed (a delta of its own).
		await sql()`update messages set updated_at = now() - interval '2 minutes' where status = 'streaming'`;
		const handed = await sql().begin((tx) => handOverReplies(tx, { unowned: true }));
		expect(handed.length).toBeGreaterThan(0);
		// …and the turn that resumes each one ends it (no model here: as an error), a write of its own.
		for (const h of handed) await MessageWriter.attach((await getMessage(sql(), h.id))!).finish('error', 'no model in this test');
		// Sessions spread over two months (the overview filters on their creation day).
		for (const id of ids) await sql()`update chat_sessions set created_at = now() - make_interval(days => ${Math.floor(rand() * 60)}) where id = ${id}`;
		// (the app never moves a session's creation; the facts' copy of it follows: a trigger)
		sample = ids.filter(() => chance(0.5));
	}, scaled(120_000));

	it('written by the app as it writes each message, they equal a rebuild from scratch', async () => {
		const incremental = await storedFacts(sample);
		expect(incremental.messages.length).toBeGreaterThan(sample.length);
		// Every queued message was claimed and every orphaned turn closed, each a write of its own.
		const statuses = await sql()<{ status: string }[]>`select distinct status from message_facts order by 1`;
		expect(statuses.map((r) => r.status)).toEqual(['complete', 'error']);
		expect(await rebuiltFacts(sample)).toEqual(incremental);
	});

	it('give the overview and the one-session review the answers the parts give', async () => {
		expect(await storedFactsVersion(sql())).toBe(FACTS_VERSION);
		for (const f of FILTERS) {
			const fromFacts = await reviewOverview(f);
			expect(fromFacts.source).toBe('facts');
			const fromParts = await reviewOverview(f, sql(), { source: 'parts' });
			expect(canonical(fromFacts), JSON.stringify(f)).toBe(canonical(fromParts));
		}
		const all = await reviewOverview({ limit: 500 });
		expect(all.sessionCount).toBe(ids.length - 2);
		expect(all.kinds.map((k) => k.kind)).toEqual(
			expect.arrayContaining(['missing_capability', 'silent_failure', 'n_plus_one', 'operator_as_event_loop', 'stall'])
		);
		expect(all.tools.map((t) => t.tool)).toContain('other');
		for (const id of ids) {
			const fromFacts = await reviewSession(id, sql(), { source: 'facts' });
			expect(canonical(fromFacts), id).toBe(canonical(await reviewSession(id, sql(), { source: 'parts' })));
			// The overview ranks a session by the findings its own page shows.
			const ranked = all.sessions.find((s) => s.id === id);
			if (ranked) {
				expect([...ranked.kinds].sort(), id).toEqual(
					fromFacts!.findings
						.map((x) => x.kind)
						.filter((k) => k !== 'goal_outcome')
						.sort()
				);
				expect(ranked.reached).toBe(fromFacts!.outcome.reached);
			}
		}
	});

	it('go when their session goes', async () => {
		const doomed = ids.splice(0, 2);
		expect((await storedFacts(doomed)).sessions).toHaveLength(2);
		await sql()`delete from chat_sessions where id = any(${doomed}::uuid[])`;
		expect(await storedFacts(doomed)).toEqual({ messages: [], sessions: [] });
		sample = sample.filter((id) => !doomed.includes(id));
	});

	it('a write that skips the refresh is caught by the comparison', async () => {
		const [m] = await sql()<{ id: string; session_id: string }[]>`
			select id, session_id from messages where role = 'assistant' and session_id = any(${sample}::uuid[]) order by id limit 1`;
		const before = await storedFacts(sample);
		// Written behind the app's back: the facts do not know.
		await sql()`update messages set parts = parts || ${JSON.stringify([{ type: 'tool-pct_create', toolCallId: 'x', state: 'output-error', input: {}, errorText: "unknown action 'pct_create'" }])}::text::jsonb where id = ${m.id}`;
		expect(await storedFacts(sample)).toEqual(before);
		const rebuilt = await rebuiltFacts(sample);
		expect(rebuilt).not.toEqual(before);
		const was = before.messages.find((r) => r.message_id === m.id)!;
		expect(rebuilt.messages.find((r) => r.message_id === m.id)).toMatchObject({ calls: (was.calls as number) + 1, cap_errs: (was.cap_errs as number) + 1 });
		// The refresh the app's writers make puts it right.
		await sql()`update messages set parts = parts - (jsonb_array_length(parts) - 1) where id = ${m.id}`;
		await sql().begin((tx) => refreshMessageFacts(tx, [m.id]));
		expect(await storedFacts(sample)).toEqual(before);
	});

	it('a rebuild while messages are written leaves no fact older than its message', async () => {
		const busy = ids.slice(0, 6);
		const rebuild = rebuildReviewFacts({ wait: true, batch: 2 });
		await Promise.all(busy.map((id) => assistantTurn(id, null)));
		await sql().begin((tx) => addSystemNote(tx, busy[0], 'execution', 'It failed again.'));
		await rebuild;
		const now = await storedFacts(busy);
		expect(await rebuiltFacts(busy)).toEqual(now);
	});

	it('of another version are not read: the review reads the parts until the rebuild job ran', async () => {
		const expected = canonical(await reviewOverview({ limit: 500 }));
		await markFactsBuilt(sql(), 'rules-of-yesterday');
		const stale = await reviewOverview({ limit: 500 });
		expect(stale.source).toBe('parts');
		expect(canonical(stale)).toBe(expected);
		// Stale rows meanwhile: had the review read them, it would be wrong.
		await sql()`update session_facts set nudges = nudges + 5, n1_max = 99`;
		expect(canonical(await reviewOverview({ limit: 500 }))).toBe(expected);
		expect(canonical(await reviewSession(ids[0]))).toBe(canonical(await reviewSession(ids[0], sql(), { source: 'parts' })));

		await enqueueJob(sql(), 'review__rebuild_facts', {}, { jobKey: 'review__rebuild_facts', priority: PRIORITY.background });
		await runOnce({ connectionString: dbUrl(), concurrency: 1, taskList });
		expect(await storedFactsVersion(sql())).toBe(FACTS_VERSION);
		const fresh = await reviewOverview({ limit: 500 });
		expect(fresh.source).toBe('facts');
		expect(canonical(fresh)).toBe(expected);
	});

	it('the job returns at once when the facts are current, or while another rebuild holds the lock', async () => {
		expect(await rebuildReviewFacts({ ifStale: true })).toBeNull();
		const other = await sql().reserve();
		try {
			await other`select pg_advisory_lock(7140202612)`;
			expect(await rebuildReviewFacts({})).toBeNull();
		} finally {
			await other`select pg_advisory_unlock(7140202612)`;
			other.release();
		}
		expect(await rebuildReviewFacts({})).toMatchObject({ version: FACTS_VERSION, sessions: ids.length });
	});
});
