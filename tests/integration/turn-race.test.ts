// Issue #42 item 6: the operator's latest message is what the next request answers. An operator
// message that arrives just before a continuation claims its finished execution, or while the
// continuation's reply streams, is the last user message of that request or of a later one, and
// gets a reply; nothing is answered twice. Real worker (every Nomos task), real scripted model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { resetEnvCache } from '../../src/lib/server/env';
import { sendOperatorMessage } from '../../src/lib/server/chat/send';
import { queueContinuations } from '../../src/lib/server/executions/lifecycle';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { textOf } from '../../src/lib/messages/parts';
import { taskList } from '../../tasks/index';
import { startScriptedLlm, type ChatMessage, type RecordedRequest, type ScriptedLlm } from '../doubles/llm/server';
import { useTestDatabase } from '../helpers/db';
import { freshSession, newOperator, useHub, waitUntil } from '../helpers/executions';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
useHub();
let llm: ScriptedLlm;
let worker: WorkerHandle;
let operatorId: string;

beforeAll(async () => {
	llm = await startScriptedLlm();
	Object.assign(process.env, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted' });
	resetEnvCache();
	operatorId = await newOperator();
	worker = await startWorker({ url: dbUrl(), concurrency: 2, taskList });
});
afterAll(async () => {
	await worker?.stop();
	await llm.close();
	delete process.env.OPENAI_BASE_URL;
	resetEnvCache();
});

const contentText = (m: ChatMessage | undefined) => (!m ? '' : typeof m.content === 'string' ? m.content : (m.content ?? []).map((c) => c.text ?? '').join(''));
const lastUser = (r: RecordedRequest) => contentText((r.body?.messages ?? []).filter((m) => m.role === 'user').at(-1));
const NOTE = '[system note';

const send = (sessionId: string | undefined, text: string) =>
	sendOperatorMessage({
		sessionId,
		text,
		shownExecutionIds: [],
		operatorId,
		viewer: { id: operatorId, role: 'admin' },
		credential: freshSession(),
		token: null
	});

/** A finished execution linked to the session, its continuation queued as the runner queues it. */
async function finishExecution(sessionId: string): Promise<string> {
	return sql().begin(async (tx) => {
		const [e] = await tx<{ id: string }[]>`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, status, result, approved_at, finished_at)
			values (${sessionId}, 'strong', 'host:strong', 'pveam_update', '{}'::jsonb, 'config_mutation', ${crypto.randomUUID()}, 'succeeded', 'template list updated', now(), now())
			returning id`;
		await tx`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
		await queueContinuations(tx, e.id);
		return e.id;
	});
}

/** Every job of the session's queue has run and no message is left queued or streaming. */
async function settled(sessionId: string): Promise<boolean> {
	const [{ jobs }] = await sql()<{ jobs: number }[]>`select count(*)::int as jobs from graphile_worker.jobs where queue_name = ${'session:' + sessionId}`;
	const [{ open }] = await sql()<
		{ open: number }[]
	>`select count(*)::int as open from messages where session_id = ${sessionId} and status in ('queued', 'streaming')`;
	return jobs === 0 && open === 0;
}

/**
 * One run: `busy`, the session's queue is held by the reply to an earlier message when the
 * execution finishes (so the operator's message lands before the continuation claims it);
 * otherwise the continuation starts at once and the message lands while its reply streams.
 */
async function race(busy: boolean, offsetMs: number) {
	llm.reset();
	const label = `${busy ? 'busy' : 'idle'} queue, +${offsetMs} ms`;
	const first = `refresh the template list (${label})`;
	const later = `and then list the debian templates (${label})`;
	const answer = `Here are the debian templates (${label}).`;
	llm.setFallback((req) => {
		const msgs = req.body?.messages ?? [];
		const last = msgs.at(-1);
		const text = contentText(last);
		if (last?.role !== 'user') return { text: `(the request ended on a ${last?.role} message)` };
		if (text === first) return { text: 'Refreshing the template list now; I will check it after.', chunkSize: 3, delayMs: 25 };
		if (text === later) return { text: answer };
		if (text.startsWith(NOTE)) return { text: 'Verified: the template list is fresh.', chunkSize: 3, delayMs: 25 };
		return { text: `(unexpected last message: ${text.slice(0, 80)})` };
	});

	const { sessionId } = await send(undefined, first);
	await sql()`insert into assent_windows (session_id, opened_by, expires_at) values (${sessionId}, ${operatorId}, now() + interval '30 minutes')`;
	// Busy: the earlier reply still streams (about half a second) and holds the session's queue.
	if (busy) await waitUntil(async () => llm.requests.some((r) => lastUser(r) === first), 'the first turn to call the model', { intervalMs: 2 });
	else await waitUntil(() => settled(sessionId), 'the first turn to end');
	await finishExecution(sessionId);
	await new Promise((r) => setTimeout(r, offsetMs));
	const { messageId } = await send(sessionId, later);
	await waitUntil(() => settled(sessionId), `the session to settle (${label})`);

	const requests = [...llm.requests];
	const msgs = await listMessages(sql(), sessionId);
	return { label, later, answer, requests, msgs, messageId };
}

/** What is wrong with one run, in words (empty: the operator's message was answered as it should be). */
function problems(run: Awaited<ReturnType<typeof race>>): string[] {
	const { label, later, answer, requests, msgs, messageId } = run;
	const out: string[] = [];
	const say = (what: string) => out.push(`${label}: ${what}`);
	const ends = requests.map((r) => r.body?.messages?.at(-1)?.role);
	if (ends.includes('assistant')) say(`a request ended on the assistant's own reply (${ends.join(', ')})`);
	const answering = requests.filter((r) => lastUser(r) === later);
	if (answering.length !== 1) say(`${answering.length} requests had the operator's message as their last user message`);
	// The execution's note reached the model in that request or an earlier one, never after.
	const noteAt = requests.findIndex((r) =>
		(r.body?.messages ?? []).some((m) => m.role === 'user' && contentText(m).startsWith(NOTE) && contentText(m).includes('pveam_update'))
	);
	if (noteAt < 0 || (answering[0] && noteAt > requests.indexOf(answering[0]))) say('the execution note did not come before the answer');
	const replies = msgs.filter((m) => m.role === 'assistant' && textOf(m.parts) === answer);
	if (replies.length !== 1 || replies[0].status !== 'complete')
		say(`${replies.length} stored replies to the operator's message (${replies.map((m) => m.status).join(', ')})`);
	if (msgs.filter((m) => m.role === 'user' && textOf(m.parts) === later).length !== 1) say("the operator's message is not stored exactly once");
	const op = msgs.findIndex((m) => m.id === messageId);
	if (replies[0] && msgs.indexOf(replies[0]) < op) say('the reply is stored before the message it answers');
	// In the transcript the operator's message is where the agent read it: after the note.
	if (msgs.slice(op + 1).some((m) => m.role === 'system')) say("the execution's note is stored after the operator's message");
	return out;
}

describe('the operator’s latest message is what the next request answers', () => {
	it(
		'a message sent 0–200 ms after an execution finished, while an earlier reply still holds the session’s queue',
		async () => {
			const found: string[] = [];
			for (const offset of [0, 20, 50, 100, 140, 200]) {
				const run = await race(true, offset);
				found.push(...problems(run));
				// The race this covers: the message was stored before the continuation wrote its note.
				const [{ before }] = await sql()<{ before: boolean }[]>`
				select (select created_at from messages where id = ${run.messageId}) < min(created_at) as before
				from messages where session_id = (select session_id from messages where id = ${run.messageId}) and role = 'system'`;
				if (!before) found.push(`${run.label}: the message did not land before the continuation's note`);
			}
			expect(found).toEqual([]);
		},
		scaled(120_000)
	);

	it(
		'a message sent 0–200 ms after an execution finished, as its continuation starts and streams',
		async () => {
			const found: string[] = [];
			for (const offset of [0, 20, 50, 100, 140, 200]) found.push(...problems(await race(false, offset)));
			expect(found).toEqual([]);
		},
		scaled(120_000)
	);
});
