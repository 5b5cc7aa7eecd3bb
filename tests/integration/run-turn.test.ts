import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession, getSession } from '../../src/lib/server/db/queries/sessions';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { view } from '../helpers/message-view';
import { applyDelta, type HeldMessage } from '../../src/lib/messages/apply';
import { canonicalJson } from '../../src/lib/messages/fold';
import type { MessageDelta } from '../../src/lib/types/messages';
import { useStage } from '../helpers/stage';

// As the app's role, as Nomos connects: the whole path works with the rights it is granted.
const { llm } = useStage({ as: 'app', hub: false, model: true });

async function newSession(userText: string) {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'test');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: userText }], status: 'complete', origin: 'chat' });
		return id;
	});
}

describe('the turn runner', () => {
	it('streams text into one assistant message and completes the task', async () => {
		const sessionId = await newSession('hello');
		llm.push({ text: 'Hi! The fleet is **fine**.', chunkSize: 3 });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const msgs = await listMessages(sql(), sessionId);
		expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant']);
		expect(view(msgs[1].parts)).toEqual([{ type: 'text', text: 'Hi! The fleet is **fine**.' }]);
		expect(msgs[1].rev).toBeGreaterThan(1);
		expect((await getSession(sql(), sessionId))?.taskState).toBe('completed');
		// The model got the system prompt and the replayed history.
		const body = llm.requests[0].body! as { messages: Array<{ role: string; content: unknown }> };
		expect(body.messages[0].role).toBe('system');
		expect(body.messages.at(-1)).toMatchObject({ role: 'user', content: 'hello' });
	});

	it('retries an empty completion twice, then says what went wrong', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'empty' }, { fault: 'empty' }, { fault: 'empty' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		expect(llm.requests).toHaveLength(3);
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.status).toBe('error');
		expect(view(msg.parts).slice(0, 2)).toMatchObject([
			{ type: 'note', kind: 'retry', text: expect.stringMatching(/^An empty reply; retrying without streaming \(attempt 2 of 3\)/) },
			{ type: 'note', kind: 'retry' }
		]);
		expect((view(msg.parts)[2] as { text: string }).text).toMatch(/returned nothing 3 times \(an empty reply\)/);
	});

	it('recovers when the retry answers', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'http500' }, { text: 'Second time lucky.' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(view(msg.parts).map((p) => p.type)).toEqual(['note', 'text']);
		expect((view(msg.parts)[0] as { text: string }).text).toMatch(/^A server error \(HTTP 500\); retrying/);
	});

	it('reports HTTP 429 three times as an error message, never a blank one', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'http429' }, { fault: 'http429' }, { fault: 'http429' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(msg.error).toMatch(/429/);
		expect(JSON.stringify(view(msg.parts))).toMatch(/rate-limiting/);
	});

	it('a stream cut mid-way is retried, and the retried reply replaces the cut words (stored, and in every browser)', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'cut-midway' }, { text: 'The whole answer, from the start.' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(view(msg.parts)).toEqual([
			{ type: 'note', kind: 'retry', text: expect.stringMatching(/^The connection to the model server dropped mid-reply; retrying/), data: expect.anything() },
			{ type: 'text', text: 'The whole answer, from the start.' }
		]);
		// The cut words were on screen before the retry (a browser folded them), and are gone after.
		const deltas = await sql()<
			{ payload: MessageDelta }[]
		>`select payload from events where type = 'message.delta' and payload->>'messageId' = ${msg.id} order by id`;
		let held: HeldMessage = { id: msg.id, parts: [], rev: 0, status: 'streaming', error: null };
		let shownCut = false;
		for (const { payload } of deltas) {
			const next = await applyDelta(held, payload);
			expect(next).not.toBe('gap');
			if (next === 'skip' || next === 'gap') continue;
			held = next;
			if (held.parts.some((p) => p.type === 'text' && p.text !== 'The whole answer, from the start.' && p.text.length > 0)) shownCut = true;
		}
		expect(shownCut).toBe(true);
		expect(canonicalJson(held.parts)).toBe(canonicalJson(msg.parts));
		// The retry was asked afresh: the cut words are not passed off as the model's own.
		const sent = llm.requests[1].body!.messages!;
		expect(sent.at(-1)).toMatchObject({ role: 'user' });
		// And the transient note is not replayed to the model on the next turn.
		llm.push({ text: 'ok' });
		await runTurn({ sessionId, origin: 'chat' });
		expect(JSON.stringify(llm.requests[2].body)).not.toContain('retrying');
	});

	it('a cut after a finished tool step keeps the tool call and its result, and takes back only the cut words', async () => {
		const sessionId = await newSession('what runs on strong?');
		llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { fault: 'cut-midway' }, { text: 'Three containers run on strong.' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const [, msg] = await listMessages(sql(), sessionId);
		const v = view(msg.parts);
		expect(v.map((p) => p.type)).toEqual(['tool-call', 'note', 'text']);
		expect(v[2]).toEqual({ type: 'text', text: 'Three containers run on strong.' });
		// The retry showed the model its finished call and result, not the cut words.
		const sent = llm.requests[2].body!.messages!;
		expect(sent.at(-1)).toMatchObject({ role: 'tool' });
	});

	it("keeps the last attempt's partial output when the stream is cut every time", async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'cut-midway' }, { fault: 'cut-midway' }, { fault: 'cut-midway' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('error');
		const [, msg] = await listMessages(sql(), sessionId);
		expect(view(msg.parts).map((p) => p.type)).toEqual(['note', 'note', 'text', 'note']);
		expect(view(msg.parts).at(-1)).toMatchObject({ type: 'note', kind: 'error' });
		expect(view(msg.parts).at(-1)).not.toMatchObject({ text: expect.stringContaining('HTTP 200') });
	});

	it('honours Retry-After on a 429, with a note that says when, and Stop works while it waits', async () => {
		const sessionId = await newSession('anything');
		llm.push({ fault: 'http429', retryAfter: 1 }, { text: 'Back.' });
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		const gap = llm.requests[1].receivedAt - llm.requests[0].receivedAt;
		expect(gap).toBeGreaterThanOrEqual(1000);
		expect(gap).toBeLessThan(5000);
		const [, msg] = await listMessages(sql(), sessionId);
		expect(view(msg.parts)[0]).toMatchObject({
			type: 'note',
			kind: 'retry',
			text: expect.stringMatching(/^Rate limited by the model server \(HTTP 429\); retrying in 1 s/),
			data: { until: expect.any(String) }
		});

		const s2 = await newSession('again');
		llm.push({ fault: 'http429', retryAfter: 30 });
		const ctrl = new AbortController();
		const started = Date.now();
		setTimeout(() => ctrl.abort(), 500);
		const stopped = await runTurn({ sessionId: s2, origin: 'chat', signal: ctrl.signal });
		expect(stopped.status).toBe('cancelled');
		expect(Date.now() - started).toBeLessThan(3000);
		// A Retry-After beyond the bound is capped at 60 s.
		const { classifyModelError } = await import('../../src/lib/server/agent/model-errors');
		const { APICallError } = await import('ai');
		const huge = new APICallError({ message: 'slow down', url: 'x', requestBodyValues: {}, statusCode: 429, responseHeaders: { 'retry-after': '3600' } });
		expect(classifyModelError(huge).waitMs).toBe(60_000);
		expect(classifyModelError(new APICallError({ message: 'no', url: 'x', requestBodyValues: {}, statusCode: 400 })).retry).toBe(false);
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
		const text = (view(msg.parts)[0] as { text: string }).text;
		expect(text.length).toBeGreaterThan(0);
		expect(text.length).toBeLessThan('a long answer that takes a while to stream'.length);
		expect(view(msg.parts).at(-1)).toMatchObject({ type: 'note', kind: 'cancelled' });
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
	it('a refused propose_plan goes back to the model in the same turn; only the accepted plan ends it', async () => {
		const sessionId = await newSession('deploy the app and make sure it works');
		await sql()`insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
			values ('strong', '127.0.0.1', 22, 'root', '/nonexistent', 'SHA256:test') on conflict do nothing`;
		const unit = { vmid: '170', path: '/etc/systemd/system/app.service', content: '[Service]\nExecStart=/usr/bin/node /opt/app/server.js\n' };
		const plan = (push: Record<string, unknown>) => ({
			title: 'Deploy the app',
			steps: [
				{ action: 'pct_push', target: 'strong/170', params: push, why: 'its unit' },
				{ action: 'ct_http_check', target: 'strong/170', params: { port: 8080, path: '/' }, why: 'verify' }
			]
		});
		llm.push(
			{ toolCalls: [{ name: 'propose_plan', args: plan({ ...unit, perms: '0644' }) }] },
			{ toolCalls: [{ name: 'propose_plan', args: plan({ ...unit, mode: '0644' }) }] },
			{ text: 'never asked: the accepted plan ends the turn' }
		);
		const r = await runTurn({ sessionId, origin: 'chat' });
		expect(r.status).toBe('complete');
		expect(llm.requests).toHaveLength(2);
		// The second request carried the refusal, naming the wrong field and the allowed ones.
		const refusal = llm.requests[1].body!.messages!.find((m) => m.role === 'tool')!;
		expect(JSON.stringify(refusal.content)).toMatch(/step 1: bad params for pct_push.*perms/);
		const plans = await sql()`select status, steps from plans where session_id = ${sessionId}`;
		expect(plans).toHaveLength(1);
		expect(plans[0].status).toBe('proposed');
		// No operator message was needed: the operator wrote once.
		const msgs = await listMessages(sql(), sessionId);
		expect(msgs.filter((m) => m.role === 'user')).toHaveLength(1);
		expect(msgs.filter((m) => m.role === 'assistant')).toHaveLength(1);
	});
});
