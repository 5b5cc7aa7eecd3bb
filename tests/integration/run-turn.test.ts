import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage, listMessages } from '../../src/lib/server/db/queries/messages';
import { createSession, getSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();
let llm: ScriptedLlm;

beforeAll(async () => {
	llm = await startScriptedLlm();
	process.env.OPENAI_BASE_URL = llm.baseURL;
	process.env.OPENAI_API_KEY = 'test';
	process.env.NOMOS_MODEL = 'scripted';
	resetEnvCache();
});
afterAll(async () => {
	await llm.close();
	delete process.env.OPENAI_BASE_URL;
	resetEnvCache();
});
beforeEach(() => llm.reset());

async function newSession(userText: string) {
	return sql().begin(async (tx) => {
		const id = await createSession(tx, null, 'test');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: userText }], status: 'complete', origin: 'chat' });
		return id;
	}) as Promise<string>;
}

describe('the turn runner', () => {
	it('streams text into one assistant message and completes the task', async () => {
		const sessionId = await newSession('hello');
		llm.push({ text: 'Hi! The fleet is **fine**.', chunkSize: 3 });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const msgs = await listMessages(sql(), sessionId);
		expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant']);
		expect(msgs[1].parts).toEqual([{ type: 'text', text: 'Hi! The fleet is **fine**.' }]);
		expect(msgs[1].rev).toBeGreaterThan(1);
		expect((await getSession(sql(), sessionId))?.taskState).toBe('completed');
		// The model got the system prompt and the replayed history.
		const body = llm.requests[0].body! as { messages: Array<{ role: string; content: unknown }> };
		expect(body.messages[0].role).toBe('system');
		expect(body.messages.at(-1)).toMatchObject({ role: 'user', content: 'hello' });
	});

	it('retries once on an empty completion, then says what went wrong', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'empty' }, { fault: 'empty' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		expect(llm.requests).toHaveLength(2);
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.status).toBe('error');
		expect(msg.parts[0]).toMatchObject({ type: 'note', kind: 'retry' });
		expect(msg.parts[1]).toMatchObject({ type: 'text' });
		expect((msg.parts[1] as { text: string }).text).toMatch(/returned nothing twice/);
	});

	it('recovers when the retry answers', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'http500' }, { text: 'Second time lucky.' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.parts.map((p) => p.type)).toEqual(['note', 'text']);
		expect((msg.parts[0] as { text: string }).text).toMatch(/HTTP 500/);
	});

	it('reports HTTP 429 twice as an error message, never a blank one', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'http429' }, { fault: 'http429' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.error).toMatch(/429/);
		expect(JSON.stringify(msg.parts)).toMatch(/rate-limiting/);
	});

	it('keeps partial output when the stream is cut midway', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'cut-midway' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.parts[0].type).toBe('text');
		expect(msg.parts.at(-1)).toMatchObject({ type: 'note', kind: 'error' });
	});

	it('a cancelled turn keeps its partial output, marked', async () => {
		const sessionId = await newSession('anything');
		llm.push({ text: 'a long answer that takes a while to stream', chunkSize: 2, delayMs: 30 });
		const ctrl = new AbortController();
		setTimeout(() => ctrl.abort(), 250);
		const r = await runTurn({ sessionId, origin: 'chat', signal: ctrl.signal });
		expect(r.status).toBe('cancelled');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.status).toBe('cancelled');
		const text = (msg.parts[0] as { text: string }).text;
		expect(text.length).toBeGreaterThan(0);
		expect(text.length).toBeLessThan('a long answer that takes a while to stream'.length);
		expect(msg.parts.at(-1)).toMatchObject({ type: 'note', kind: 'cancelled' });
	});

	it('injects notes for the model without storing them as operator words', async () => {
		const sessionId = await newSession('deploy it');
		llm.push({ text: 'Noted.' });
		await runTurn({ sessionId, origin: 'continuation', notes: ['execution 123 (pct_create on strong) succeeded: created CT 105'] });
		const sent = llm.requests[0].body!.messages!;
		expect(sent.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('execution 123 (pct_create on strong) succeeded') });
		const stored = await listMessages(sql(), sessionId);
		expect(stored.filter((m) => m.role === 'user')).toHaveLength(1);
		expect(JSON.stringify(stored)).not.toContain('execution 123');
	});
});
