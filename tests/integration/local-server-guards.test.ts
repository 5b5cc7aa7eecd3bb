// Guards for what local model servers do wrong, each with the scripted server emitting the fault
// and the real @ai-sdk/openai client reading it: tool calls written as text, a prompt the server
// cut at its default window, a cold model load, and a model that repeats the same call.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost } from '../helpers/executions';
import { view } from '../helpers/message-view';
import type { MessagePart } from '../../src/lib/types/messages';

useTestDatabase();
let llm: ScriptedLlm;
let pve: ProxmoxDouble;

beforeAll(async () => {
	llm = await startScriptedLlm();
	process.env.OPENAI_BASE_URL = llm.baseURL;
	process.env.OPENAI_API_KEY = 'test';
	process.env.NOMOS_MODEL = 'qwen3:8b';
	process.env.NOMOS_HISTORY_TOKENS = '0';
	resetEnvCache();
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] });
	await addHost(pve);
	await syncAllHosts();
});
afterAll(async () => {
	await llm.close();
	await pve?.close();
	delete process.env.OPENAI_BASE_URL;
	delete process.env.NOMOS_MODEL_STREAM_TOOLS;
	delete process.env.NOMOS_HISTORY_TOKENS;
	resetEnvCache();
});
beforeEach(() => {
	llm.reset();
	forgetContextWindow();
	delete process.env.NOMOS_MODEL_STREAM_TOOLS;
	resetEnvCache();
});

async function session(text: string): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'local guards');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
}
const reply = async (sessionId: string) => (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant').at(-1)!;
const calls = (parts: MessagePart[]) => view(parts).flatMap((p) => (p.type === 'tool-call' ? [p] : []));
const texts = (parts: MessagePart[]) => view(parts).flatMap((p) => (p.type === 'text' ? [p.text] : []));

describe('tool calls that arrive as text', () => {
	it.each([
		['ollama', 'tag', true],
		['ollama', 'json', true],
		['llamacpp', 'tag', true],
		['ollama', 'tag', false]
	] as const)('%s, written as %s (streamed: %s), run as real calls', async (dialect, asText, streamed) => {
		llm.setDialect(dialect);
		if (!streamed) process.env.NOMOS_MODEL_STREAM_TOOLS = 'off';
		resetEnvCache();
		llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }], asText }, { text: 'One container: caddy.' });
		const s = await session('which containers run?');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts)).toMatchObject([{ toolName: 'list_lxcs', state: 'done' }]);
		expect(texts(m.parts).join('')).toBe('One container: caddy.');
		// The model's next request carries the call and its result, as for any call.
		const next = llm.requests[1].body!.messages!;
		expect(next.some((x) => x.role === 'assistant' && x.tool_calls?.[0]?.function.name === 'list_lxcs')).toBe(true);
		expect(next.some((x) => x.role === 'tool')).toBe(true);
	});

	it('words before the calls stay words; two calls in one reply both run', async () => {
		llm.setDialect('ollama');
		llm.push(
			{
				text: 'Let me look.',
				toolCalls: [
					{ name: 'list_lxcs', args: {} },
					{ name: 'search_knowledge', args: { query: 'caddy' } }
				],
				asText: 'tag'
			},
			{ text: 'Done.' }
		);
		const s = await session('look around');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts).map((c) => [c.toolName, c.state])).toEqual([
			['list_lxcs', 'done'],
			['search_knowledge', 'done']
		]);
		expect(texts(m.parts).join('')).toMatch(/^Let me look\.\s*Done\.$/);
	});

	it("a call whose arguments fail the tool's schema is refused like any call, and runs nothing", async () => {
		llm.setDialect('ollama');
		llm.push({ toolCalls: [{ name: 'search_knowledge', args: { query: 42 } }], asText: 'json' }, { text: 'Sorry.' });
		const s = await session('search');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const [c] = calls((await reply(s)).parts);
		expect(c).toMatchObject({ toolName: 'search_knowledge', state: 'error' });
		expect(c.output).toBeUndefined();
	});

	it('JSON that names no offered tool, or is not a call, is shown as the text it was', async () => {
		llm.setDialect('ollama');
		llm.push({ toolCalls: [{ name: 'format_disk', args: { disk: '/dev/sda' } }], asText: 'tag' });
		const s = await session('format it');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts)).toEqual([]);
		expect(texts(m.parts).join('')).toBe('<tool_call>\n{"name":"format_disk","arguments":{"disk":"/dev/sda"}}\n</tool_call>');

		llm.push({ text: '{"status": "ok", "note": "plain JSON the operator asked for"}' });
		const s2 = await session('answer in JSON');
		expect((await runTurn({ sessionId: s2, origin: 'chat' })).status).toBe('complete');
		expect(texts((await reply(s2)).parts).join('')).toBe('{"status": "ok", "note": "plain JSON the operator asked for"}');
	});
});

describe('the same call over and over', () => {
	it('the third identical call (same tool, same arguments in any key order) ends the turn with a note', async () => {
		llm.setDialect('ollama');
		const again = (args: object) => ({ toolCalls: [{ name: 'list_entities', args }] });
		llm.push(
			again({ kind: 'lxc', query: 'caddy' }),
			again({ query: 'caddy', kind: 'lxc' }),
			again({ kind: 'lxc', query: 'caddy' }),
			again({ kind: 'lxc', query: 'caddy' }),
			{
				text: 'never asked for'
			}
		);
		const s = await session('find caddy notes');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts).map((c) => c.state)).toEqual(['done', 'done', 'done']);
		const note = view(m.parts).find((p) => p.type === 'note' && p.kind === 'repeat');
		expect(note).toMatchObject({ data: { tool: 'list_entities', times: 3 } });
		expect((note as { text: string }).text).toContain('called list_entities with the same arguments 3 times in this turn');
		// No fourth request: the turn stopped, the model was not asked again.
		expect(llm.requests).toHaveLength(3);
		expect(llm.state().pending).toBe(2);
	});

	it('the same tool with other arguments, or a call made twice, goes on', async () => {
		llm.setDialect('ollama');
		const call = (query: string) => ({ toolCalls: [{ name: 'search_knowledge', args: { query } }] });
		llm.push(call('caddy'), call('backup'), call('caddy'), call('dns'), { text: 'Found what there is.' });
		const s = await session('search around');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts)).toHaveLength(4);
		expect(view(m.parts).some((p) => p.type === 'note')).toBe(false);
		expect(texts(m.parts).join('')).toBe('Found what there is.');
	});
});

describe('a prompt the server cut at a default window', () => {
	/** A session whose history, with the instructions and tools, is about 5,000–6,000 o200k tokens. */
	async function longSession(): Promise<string> {
		const s = await session('first question');
		const words = 'the backup of container caddy finished and the disk on strong is at sixty percent '.repeat(30);
		await sql().begin(async (tx) => {
			for (let i = 0; i < 7; i++) {
				await insertMessage(tx, {
					sessionId: s,
					role: 'assistant',
					parts: [{ type: 'text', text: `answer ${i}: ${words}` }],
					status: 'complete',
					origin: 'chat'
				});
				await insertMessage(tx, { sessionId: s, role: 'user', parts: [{ type: 'text', text: `follow-up ${i}` }], status: 'complete', origin: 'chat' });
			}
		});
		return s;
	}
	const contextNotes = async (s: string) =>
		(await listMessages(sql(), s)).flatMap((m) => view(m.parts)).filter((p) => p.type === 'note' && p.kind === 'context') as unknown as Array<{
			text: string;
			data: { read: number; sent: number; server: string };
		}>;

	it("usage at exactly Ollama's 4096 while ~5,000 were sent: said in the chat and on Settings, with num_ctx", async () => {
		// The operator believes the model's 32k; Ollama runs it at 4096 and drops the front.
		process.env.NOMOS_CONTEXT_TOKENS = '32768';
		resetEnvCache();
		try {
			llm.setDialect('ollama', 4096);
			const s = await longSession();
			llm.push({ text: 'Short answer.' });
			expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
			const [note] = await contextNotes(s);
			expect(note.data).toMatchObject({ server: 'ollama', read: 4096 });
			// Beyond the tokenizers' spread, but within what "far fewer than sent" (60 %) would catch:
			// only the known cap tells.
			expect(note.data.sent).toBeGreaterThan(4096 * 1.15);
			expect(note.data.sent).toBeLessThan(4096 / 0.6);
			expect(note.text).toContain('PARAMETER num_ctx 16384 in a Modelfile');
			expect(note.text).toContain('OLLAMA_CONTEXT_LENGTH');

			const { checkModel } = await import('../../src/lib/server/agent/model-check');
			const c = await checkModel({ probe: false });
			expect(c.cut).toMatchObject({ sessionId: s, text: note.text, data: { read: 4096 } });
		} finally {
			delete process.env.NOMOS_CONTEXT_TOKENS;
			resetEnvCache();
		}
	});

	it('the same prompt read whole is not reported', async () => {
		process.env.NOMOS_CONTEXT_TOKENS = '32768';
		resetEnvCache();
		try {
			llm.setDialect('ollama', 32768);
			const s = await longSession();
			llm.push({ text: 'Short answer.' });
			expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
			expect(await contextNotes(s)).toEqual([]);
		} finally {
			delete process.env.NOMOS_CONTEXT_TOKENS;
			resetEnvCache();
		}
	});

	it("llama.cpp's note says -c", async () => {
		process.env.NOMOS_CONTEXT_TOKENS = '32768';
		resetEnvCache();
		try {
			llm.setDialect('llamacpp', 4096);
			const s = await longSession();
			llm.push({ text: 'Short answer.' });
			expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
			const [note] = await contextNotes(s);
			expect(note.data).toMatchObject({ server: 'llamacpp', read: 4096 });
			expect(note.text).toContain('llama-server with -c 16384');
		} finally {
			delete process.env.NOMOS_CONTEXT_TOKENS;
			resetEnvCache();
		}
	});
});

describe("Settings → Check the model: the server's window and whether it caches", () => {
	const check = async () => (await import('../../src/lib/server/agent/model-check')).checkModel({ probe: false });

	it('Ollama: num_ctx it runs at, the trained window, and a KV cache per loaded model', async () => {
		llm.setDialect('ollama', 8192);
		const c = await check();
		expect(c).toMatchObject({ server: 'ollama', context: { tokens: 8192, source: "Ollama (the model's num_ctx)" }, trained: 32768, cache: { caches: true } });
	});

	it('llama.cpp: n_ctx and cache_prompt from /props', async () => {
		llm.setDialect('llamacpp', 6144);
		const c = await check();
		expect(c).toMatchObject({ server: 'llamacpp', context: { tokens: 6144, source: 'llama.cpp (/props n_ctx, per slot)' }, cache: { caches: true } });
		expect(c.cache.detail).toContain('cache_prompt on');
	});

	it('vLLM: max_model_len, and caching unknown (not discoverable)', async () => {
		llm.setDialect('vllm', 16384);
		process.env.NOMOS_MODEL = 'scripted';
		resetEnvCache();
		try {
			const c = await check();
			expect(c).toMatchObject({ server: 'vllm', context: { tokens: 16384 }, cache: { caches: null } });
			expect(c.cache.detail).toMatch(/^unknown: .*--enable-prefix-caching/);
		} finally {
			process.env.NOMOS_MODEL = 'qwen3:8b';
			resetEnvCache();
		}
	});

	it('a server that says nothing: window and caching unknown, never guessed', async () => {
		llm.setDialect('openai');
		const c = await check();
		expect(c).toMatchObject({ server: 'other', context: { tokens: null, source: 'unknown' }, trained: null, cache: { caches: null } });
	});
});

describe('a cold model load', () => {
	beforeEach(() => {
		// 15 s in production; a test waits a fraction of that (the rule is the same).
		process.env.NOMOS_MODEL_LOADING_SECONDS = '0.3';
		resetEnvCache();
	});
	afterAll(() => {
		delete process.env.NOMOS_MODEL_LOADING_SECONDS;
		resetEnvCache();
	});

	it('no byte for a while: the chat says the model is loading, and the one request is waited for, not retried', async () => {
		llm.setDialect('ollama');
		llm.push({ text: 'Ready now.', loadMs: 2500 }, { text: 'a retry would get this' });
		const s = await session('hello?');
		const turn = runTurn({ sessionId: s, origin: 'chat' });
		// Read as every browser reads it: the streaming reply folded from its events.
		let seen: MessagePart[] = [];
		for (let i = 0; i < 100; i++) {
			seen = (await reply(s).catch(() => null))?.parts ?? [];
			if (view(seen).some((p) => p.type === 'note' && p.kind === 'loading')) break;
			await new Promise((r) => setTimeout(r, 20));
		}
		expect(view(seen)).toMatchObject([{ type: 'note', kind: 'loading' }]);
		expect((view(seen)[0] as { text: string }).text).toMatch(/^The model is loading \(no answer for 0 s\); waiting for it rather than asking again…$/);
		// While the row shows, the server is still loading: one request, nothing answered yet.
		expect(llm.requests).toHaveLength(1);

		expect((await turn).status).toBe('complete');
		const m = await reply(s);
		expect(view(m.parts).map((p) => (p.type === 'note' ? `note:${p.kind}` : p.type))).toEqual(['note:loading', 'text']);
		expect(texts(m.parts).join('')).toBe('Ready now.');
		expect(llm.requests).toHaveLength(1);
		expect(llm.state().pending).toBe(1);
	});

	it('a slow stream after its first byte is not a load', async () => {
		llm.setDialect('ollama');
		llm.push({ text: 'one two three', chunkSize: 4, delayMs: 400 });
		const s = await session('slowly');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		expect(view((await reply(s)).parts)).toEqual([{ type: 'text', text: 'one two three' }]);
	});
});
