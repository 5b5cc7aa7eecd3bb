// session_activity: what a session's executions and questions say, against its messages, kept by
// the triggers of drizzle/0023 at commit (the overview reads it instead of grouping every
// execution). Each change a writer can make moves it; two transactions touching the same
// sessions neither deadlock nor lose each other's change; a message writer holding its session
// while it waits for an execution does not deadlock with the execution's writer.
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { FACTS_VERSION, markFactsBuilt } from '../../src/lib/server/db/queries/review-facts';
import { reviewOverview } from '../../src/lib/server/review';
import { useTestDatabase } from '../helpers/db';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();

interface Activity {
	exec_succeeded: number;
	last_success_at: string | null;
	pending_since: string | null;
	questions_open: number;
	silent_failed: number;
	cap_count: number;
}

async function activity(sessionId: string): Promise<Activity | undefined> {
	const [a] = await sql()<Activity[]>`
		select exec_succeeded, last_success_at, pending_since, questions_open, silent_failed, cap_count from session_activity where session_id = ${sessionId}`;
	return a;
}

const newSession = (title: string) => sql().begin((tx) => createSession(tx, null, title));

async function execution(sessionId: string, status: string, opts: { ago?: string } = {}): Promise<string> {
	const [e] = await sql()<{ id: string }[]>`
		insert into executions (requested_by_session, target, action, classification, hash, status, created_at, finished_at)
		values (${sessionId}, 'lxc:strong/101', 'restart', 'config_mutation', ${'act-' + Math.random()}, ${status},
			now() - ${opts.ago ?? '0 seconds'}::interval, ${['succeeded', 'failed'].includes(status) ? sql()`now()` : null})
		returning id`;
	return e.id;
}

const say = (sessionId: string, role: 'user' | 'assistant', text: string) =>
	sql().begin((tx) => insertMessage(tx, { sessionId, role, parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' }));

/** JSON with sorted keys, without the field that says where the answer was read from. */
const canonical = (x: unknown) =>
	JSON.stringify(x, (k, v: unknown) =>
		k === 'source'
			? undefined
			: v && typeof v === 'object' && !Array.isArray(v)
				? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
				: v
	);

/** Polls pg_stat_activity until `n` other backends wait on a lock in a statement like `queryLike` (lower-cased). */
async function lockWaiters(n: number, queryLike: string): Promise<void> {
	for (const until = Date.now() + scaled(15_000); ;) {
		const [{ k }] = await sql()<{ k: number }[]>`
			select count(*)::int as k from pg_stat_activity
			where datname = current_database() and wait_event_type = 'Lock' and lower(query) like ${queryLike} and pid <> pg_backend_pid()`;
		if (k >= n) return;
		if (Date.now() > until) throw new Error(`${n} statements like ${queryLike} did not wait on a lock within 15 s`);
		await new Promise((r) => setTimeout(r, 10));
	}
}

/** A transaction on its own connection that runs `work`, then waits for `release()` before it commits. */
function heldTransaction(client: postgres.Sql, work: (tx: postgres.TransactionSql) => Promise<unknown>) {
	let release!: () => void;
	const gate = new Promise<void>((r) => (release = r));
	let worked!: () => void;
	const ready = new Promise<void>((r) => (worked = r));
	const done = client.begin(async (tx) => {
		await work(tx);
		worked();
		await gate;
	});
	return { ready, release, done };
}

describe('session activity', () => {
	let clients: postgres.Sql[] = [];
	beforeAll(async () => {
		clients = [0, 1, 2].map(() => postgres(dbUrl(), { max: 1, onnotice: () => undefined }));
		// every message here is written by the app, so the stored facts are current: the overview reads them
		await markFactsBuilt(sql(), FACTS_VERSION);
	});
	afterAll(async () => {
		await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
	});

	it('moves with every change to the executions, the questions and the messages', async () => {
		const s = await newSession('activity');
		await say(s, 'user', 'deploy the wiki');
		expect(await activity(s)).toMatchObject({ exec_succeeded: 0, pending_since: null, questions_open: 0, silent_failed: 0, cap_count: 0 });

		// waiting for approval for two hours: the overview calls it a stall; approved: no longer
		const pending = await execution(s, 'awaiting_approval', { ago: '2 hours' });
		expect((await activity(s))!.pending_since).not.toBeNull();
		const overview = await reviewOverview({ limit: 500 });
		expect(overview.source).toBe('facts');
		expect(overview.sessions.find((x) => x.id === s)!.kinds).toContain('stall');
		await sql()`update executions set status = 'approved' where id = ${pending}`;
		expect((await activity(s))!.pending_since).toBeNull();

		// the agent says it cannot; a success after that answers it
		await say(s, 'assistant', "I can't run pct create — only pct_exec, systemctl, restart, apt_upgrade.");
		expect((await activity(s))!.cap_count).toBe(1);
		await sql()`update executions set status = 'succeeded', finished_at = now() + interval '1 second' where id = ${pending}`;
		expect(await activity(s)).toMatchObject({ exec_succeeded: 1, cap_count: 0 });
		expect((await activity(s))!.last_success_at).not.toBeNull();

		// a failed execution nobody mentions is silent, until a later reply names it by its id
		const failed = await execution(s, 'failed');
		expect((await activity(s))!.silent_failed).toBe(1);
		await sql()`update message_facts set created_at = created_at where session_id = ${s}`; // not a facts refresh: nothing moves
		expect((await activity(s))!.silent_failed).toBe(1);
		await new Promise((r) => setTimeout(r, 5));
		await say(s, 'assistant', `Execution ${failed.slice(0, 8)} did not go through; retrying with the other storage.`);
		expect((await activity(s))!.silent_failed).toBe(0);

		// a question open, then answered, then gone
		const [q] = await sql()<{ id: string }[]>`insert into session_questions (session_id, prompt, status) values (${s}, 'Which host?', 'open') returning id`;
		expect((await activity(s))!.questions_open).toBe(1);
		await sql()`update session_questions set status = 'answered', answer = 'strong' where id = ${q.id}`;
		expect((await activity(s))!.questions_open).toBe(0);
		await sql()`update session_questions set status = 'open' where id = ${q.id}`;
		await sql()`delete from session_questions where id = ${q.id}`;
		expect((await activity(s))!.questions_open).toBe(0);

		// an execution moved to another session, or deleted
		const other = await newSession('other');
		await sql()`update executions set requested_by_session = ${other} where id = ${pending}`;
		expect((await activity(s))!.exec_succeeded).toBe(0);
		expect((await activity(other))!.exec_succeeded).toBe(1);
		await sql()`delete from executions where id = ${pending}`;
		expect((await activity(other))!.exec_succeeded).toBe(0);

		// the overview reads the same from these rows as from every message and execution
		for (const f of [{ limit: 500 }, { outcome: 'not_reached' as const, limit: 500 }]) {
			const fromFacts = await reviewOverview(f);
			expect(fromFacts.source).toBe('facts');
			expect(canonical(fromFacts)).toBe(canonical(await reviewOverview(f, sql(), { source: 'parts' })));
		}

		// a session deleted for good takes its row; its executions lose the link and nothing fails
		await execution(other, 'succeeded');
		await sql()`delete from chat_sessions where id = ${other}`;
		expect(await activity(other)).toBeUndefined();
	});

	it('one statement over thousands of sessions notes each once; an update that moves nothing it counts notes nothing', async () => {
		const [{ before }] = await sql()<{ before: number }[]>`select count(*)::int as before from session_activity`;
		// 2,000 sessions, one execution each, in one statement apiece (as a bulk sweep or a seeder writes)
		const ids = (await sql()<{ id: string }[]>`insert into chat_sessions (title) select 'bulk ' || i from generate_series(1, 2000) i returning id`).map(
			(r) => r.id
		);
		await sql()`
			insert into executions (requested_by_session, target, action, classification, hash, status, finished_at)
			select s, 'lxc:strong/101', 'restart', 'config_mutation', 'bulk-' || s, 'succeeded', now() from unnest(${ids}::uuid[]) s`;
		const [{ n, ok }] = await sql()<{ n: number; ok: number }[]>`
			select count(*)::int as n, count(*) filter (where exec_succeeded = 1 and last_success_at is not null)::int as ok
			from session_activity where session_id = any(${ids}::uuid[])`;
		expect({ n, ok }).toEqual({ n: 2000, ok: 2000 });
		expect((await sql()<{ n: number }[]>`select count(*)::int as n from session_activity`)[0].n).toBe(before + 2000);

		// a lease's heartbeat: the statement trigger sees nothing it counts, and the row is not rewritten
		const [e] = await sql()<{ id: string; s: string }[]>`select id, requested_by_session as s from executions where hash = ${'bulk-' + ids[0]}`;
		const [{ xmin }] = await sql()<{ xmin: string }[]>`select xmin::text from session_activity where session_id = ${e.s}`;
		await sql()`update executions set lease_until = now() + interval '1 minute' where id = ${e.id}`;
		await sql()`update executions set status = status where id = ${e.id}`;
		expect((await sql()<{ xmin: string }[]>`select xmin::text from session_activity where session_id = ${e.s}`)[0].xmin).toBe(xmin);
		await sql()`update executions set status = 'failed' where id = ${e.id}`;
		expect(await activity(e.s)).toMatchObject({ exec_succeeded: 0, silent_failed: 1 });
	});

	it("the facts copy the session's creation and replay flag whatever their writer sends, and follow a moved creation", async () => {
		const s = await newSession('copies');
		// a writer that knows nothing of the copies (the code before them, still running during an upgrade)
		await sql()`
			insert into session_facts (session_id, messages, user_messages, assistant_messages, system_messages, tool_calls, first_at, last_at,
				n1_max, nudges, blanks, retried, notext, last_ok, tool_counts, cap_at)
			values (${s}, 1, 1, 0, 0, 0, now(), now(), 0, 0, 0, 0, 0, false, '{}', '{}')`;
		const copies = async () =>
			(
				await sql()<{ at: string; replay: boolean; created: string }[]>`
			select f.session_created_at as at, f.replay, c.created_at as created from session_facts f join chat_sessions c on c.id = f.session_id where f.session_id = ${s}`
			)[0];
		expect((await copies()).at).toBe((await copies()).created);
		expect((await copies()).replay).toBe(false);
		expect(await activity(s)).toBeDefined();
		await sql()`update chat_sessions set created_at = now() - interval '40 days' where id = ${s}`;
		const moved = await copies();
		expect(moved.at).toBe(moved.created);
		await sql()`update chat_sessions set replay = '{"status": "queued"}'::jsonb where id = ${s}`;
		expect((await copies()).replay).toBe(true);
	});

	it("two transactions touching the same sessions in opposite orders both commit, and neither loses the other's change", async () => {
		const [s1, s2] = [await newSession('a'), await newSession('b')];
		const [a1, a2, b1, b2] = [
			await execution(s1, 'awaiting_approval'),
			await execution(s1, 'awaiting_approval'),
			await execution(s2, 'awaiting_approval'),
			await execution(s2, 'awaiting_approval')
		];
		const [c0, c1, c2] = clients;

		// someone holds both rows, so both commits wait inside their triggers and then run at once
		const holder = heldTransaction(c0, (tx) => tx`select 1 from session_activity where session_id in (${s1}, ${s2}) for update`);
		await holder.ready;
		const succeed = (tx: postgres.TransactionSql, id: string) => tx`update executions set status = 'succeeded', finished_at = now() where id = ${id}`;
		const t1 = c1.begin(async (tx) => {
			await succeed(tx, a1);
			await succeed(tx, b1);
		});
		const t2 = c2.begin(async (tx) => {
			await succeed(tx, b2);
			await succeed(tx, a2);
		});
		await lockWaiters(2, 'commit%');
		holder.release();
		await Promise.all([holder.done, t1, t2]);

		// each counted both successes: the second commit read the first's (not a copy read before it)
		expect((await activity(s1))!.exec_succeeded).toBe(2);
		expect((await activity(s2))!.exec_succeeded).toBe(2);
	});

	it("a message writer holding its session while it waits for an execution does not deadlock with that execution's writer", async () => {
		const s = await newSession('assent');
		const e = await execution(s, 'awaiting_approval');
		const [, c1, c2] = clients;

		// the execution's writer changes it and holds it…
		const writer = heldTransaction(c2, (tx) => tx`update executions set status = 'expired', finished_at = now() where id = ${e}`);
		await writer.ready;
		// …while a message writer holds the session (as storing a message's facts does) and then wants the execution
		const typed = c1.begin(async (tx) => {
			await tx`select 1 from chat_sessions where id = ${s} for no key update`;
			await tx`update executions set status = 'approved' where id = ${e} and status = 'awaiting_approval'`;
		});
		await lockWaiters(1, 'update executions%');
		writer.release();
		await Promise.all([writer.done, typed]);

		const [row] = await sql()<{ status: string }[]>`select status from executions where id = ${e}`;
		expect(row.status).toBe('expired');
		expect((await activity(s))!.pending_since).toBeNull();
	});
});
