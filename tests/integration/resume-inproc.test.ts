// Issue #27 in one process: a resumed reply never asks twice for what it already parked; work
// whose job is gone is queued again after a worker died; a continuation's claim commits with its reply.
import postgres from 'postgres';
import { beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { registerWorkerProcess } from '../../src/lib/server/db/queries/workers';
import { emitEvent } from '../../src/lib/server/db/queries/events';
import type { MessageChunk } from '../../src/lib/types/messages';
import { requeueStranded } from '../../src/lib/server/executions/lifecycle';
import { recoverDeadProcesses } from '../../src/lib/server/recovery/dead-processes';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { openWindow } from '../../src/lib/server/db/queries/assent-windows';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { jobs } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm, dbUrl } = useStage({ model: true });
beforeEach(async () => {
	await sql()`delete from graphile_worker._private_jobs`;
});

/** A restart of CT 100 requested in the session (as request_execution stores one), in `status`. */
async function execution(sessionId: string, status: string, callKey: string | null = null): Promise<string> {
	const [row] = await sql()<{ id: string }[]>`
		insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, call_key, approved_at, finished_at)
		values (${sessionId}, 'strong', 'lxc:strong/100', 'restart', '{}'::jsonb, 'config_mutation', ${'h-' + Math.random()}, 'pct reboot 100', 'asked', ${status}, ${callKey},
			${status === 'awaiting_approval' ? null : sql()`now() - interval '1 minute'`}, ${['failed', 'succeeded'].includes(status) ? sql()`now()` : null})
		returning id`;
	await sql()`insert into execution_sessions (execution_id, session_id) values (${row.id}, ${sessionId})`;
	return row.id;
}

async function session(userText: string, status: 'complete' | 'queued' = 'complete') {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'test');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: userText }], status, origin: 'chat' });
		return id;
	});
}

/** A registered worker process that then died: its own connection held the life lock and closed. */
async function deadProcess(): Promise<string> {
	const client = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
	const conn = await client.reserve();
	const p = await registerWorkerProcess(conn, { hostname: 'gone', pid: 424242, workerIds: [] });
	conn.release();
	await client.end();
	return p.id;
}

const runJob = (payload: unknown) => agent__run_turn(payload, {} as never);

describe('a resumed reply', () => {
	it('gets the result of a request it parked before its process died, instead of asking again', async () => {
		const sessionId = await session('restart caddy');
		const runner = await deadProcess();
		const executionId = await execution(sessionId, 'awaiting_approval');
		// The reply as its dead process left it: the call's input sent, its result never written.
		const messageId = await sql().begin(async (tx) => {
			const m = await insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'streaming', origin: 'chat', runner });
			const chunks: MessageChunk[] = [
				{ type: 'start-step' },
				{ type: 'tool-input-start', toolCallId: 'c1', toolName: 'request_execution' },
				{
					type: 'tool-input-available',
					toolCallId: 'c1',
					toolName: 'request_execution',
					input: { target: 'lxc:strong/100', action: 'restart', params: {}, reason: 'asked' }
				}
			];
			await emitEvent(tx, { sessionId, type: 'message.delta', payload: { messageId: m.id, rev: 1, chunks } });
			return m.id;
		});
		await sql()`update executions set call_key = ${`${messageId}/c1`} where id = ${executionId}`;

		const [rec] = await recoverDeadProcesses(sql());
		expect(rec.resumed).toBe(1);
		const [job] = await jobs('agent__run_turn');
		expect(job.payload).toMatchObject({ sessionId, resume: messageId });
		llm.push({ text: 'The restart of caddy waits for your approval.' });
		await runJob(job.payload);

		const body = JSON.stringify(llm.requests[0].body);
		expect(body).toContain(executionId);
		expect(body).toContain('do not ask for it again');
		expect(body).not.toContain('interrupted before it finished');
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions where requested_by_session = ${sessionId}`;
		expect(n).toBe(1);
		const reply = (await listMessages(sql(), sessionId)).find((m) => m.id === messageId)!;
		expect(reply.status).toBe('complete');
		expect(reply.parts.filter((p) => p.type === 'data-note').map((p) => (p as { data: { kind: string } }).data.kind)).toEqual(['resumed']);
		// A second delivery of the same job finds the reply taken and does nothing.
		await runJob(job.payload);
		expect(llm.requests).toHaveLength(1);
	});

	it('a call that parked nothing is told to the model as interrupted', async () => {
		const sessionId = await session('what runs?');
		const runner = await deadProcess();
		await sql().begin(async (tx) => {
			const m = await insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'streaming', origin: 'chat', runner });
			const chunks: MessageChunk[] = [
				{ type: 'start-step' },
				{ type: 'tool-input-start', toolCallId: 'c9', toolName: 'list_lxcs' },
				{ type: 'tool-input-available', toolCallId: 'c9', toolName: 'list_lxcs', input: {} }
			];
			await emitEvent(tx, { sessionId, type: 'message.delta', payload: { messageId: m.id, rev: 1, chunks } });
		});
		await recoverDeadProcesses(sql());
		const [job] = await jobs('agent__run_turn');
		llm.push({ text: 'Let me look again.' });
		await runJob(job.payload);
		expect(JSON.stringify(llm.requests[0].body)).toContain('interrupted before it finished: Nomos restarted');
	});
});

describe('a turn that fails in a live process (not a model fault)', () => {
	it('hands its reply over to be resumed, and after three resumes closes it saying why', async () => {
		const sessionId = await session('hello');
		await sql().unsafe(`create function no_final() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$`);
		await sql().unsafe(
			`create trigger no_final before update on messages for each row when (new.status = 'complete' and old.status = 'streaming') execute function no_final()`
		);
		try {
			llm.push({ text: 'Hi.' });
			await expect(runTurn({ sessionId, origin: 'chat' })).rejects.toThrow(/disk full/);
			const [reply] = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant');
			expect(reply.status).toBe('streaming');
			for (let i = 1; i <= 3; i++) {
				const [job] = await jobs('agent__run_turn');
				expect(job.payload).toMatchObject({ resume: reply.id });
				await sql()`delete from graphile_worker._private_jobs`;
				llm.push({ text: `Hi (${i}).` });
				await expect(runJob(job.payload)).rejects.toThrow(/disk full/);
			}
			const [closed] = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant');
			expect(closed.status).toBe('error');
			expect(closed.error).toMatch(/could not finish this reply: disk full \(tried 4 times\)/);
			expect(await jobs('agent__run_turn')).toEqual([]);
		} finally {
			await sql().unsafe(`drop trigger no_final on messages; drop function no_final()`);
		}
	});
});

describe('after a worker died, recovery', () => {
	it('queues a turn for operator messages whose turn job is gone', async () => {
		const sessionId = await session('hello?', 'queued');
		await sql()`update messages set created_at = now() - interval '1 minute' where session_id = ${sessionId}`;
		expect(await jobs('agent__run_turn')).toEqual([]);
		expect(await sql().begin((tx) => requeueStranded(tx))).toBe(1);
		const [job] = await jobs('agent__run_turn');
		expect(job.payload).toMatchObject({ sessionId, origin: 'chat' });
		llm.push({ text: 'Here.' });
		await runJob(job.payload);
		const ms = await listMessages(sql(), sessionId);
		expect(ms.map((m) => [m.role, m.status])).toEqual([
			['user', 'complete'],
			['assistant', 'complete']
		]);
		// Queued once: a second pass finds nothing stranded.
		expect(await sql().begin((tx) => requeueStranded(tx))).toBe(0);
	});

	it('queues the run of an approved execution whose job is gone (at most once at a time)', async () => {
		const sessionId = await session('restart caddy');
		const id = await execution(sessionId, 'approved');
		expect(await sql().begin((tx) => requeueStranded(tx))).toBe(1);
		expect((await jobs('executions__run')).map((j) => j.payload.executionId)).toEqual([id]);
		expect(await sql().begin((tx) => requeueStranded(tx))).toBe(0);
	});
});

describe('a continuation', () => {
	it('commits its claim with its reply: when the reply cannot be made, nothing is claimed, and the retry tells the agent once', async () => {
		const sessionId = await session('restart caddy');
		const id = await execution(sessionId, 'failed');
		await sql().begin((tx) => openWindow(tx, sessionId, null, 10));
		// The process cannot make the reply (as if it died right after claiming): the claim must not stay.
		await sql().unsafe(`create function no_reply() returns trigger language plpgsql as $$ begin raise exception 'no reply now'; end $$`);
		await sql().unsafe(`create trigger no_reply before insert on messages for each row when (new.role = 'assistant') execute function no_reply()`);
		await expect(continueSession(sessionId)).rejects.toThrow(/no reply now/);
		const link = async () =>
			(await sql()<{ continued: Date | null }[]>`select continued_at as continued from execution_sessions where execution_id = ${id}`)[0].continued;
		const notes = async () => (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system').length;
		expect(await link()).toBeNull();
		expect(await notes()).toBe(0);
		await sql().unsafe(`drop trigger no_reply on messages; drop function no_reply()`);
		llm.push({ text: 'The restart failed: exit 1.' });
		expect(await continueSession(sessionId)).toBe('turn');
		expect(await link()).not.toBeNull();
		expect(await notes()).toBe(1);
		expect(await continueSession(sessionId)).toBe('nothing');
		expect(llm.requests).toHaveLength(1);
	});
});
