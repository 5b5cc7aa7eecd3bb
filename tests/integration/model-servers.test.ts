// The model servers homelabs run, emulated by the scripted server's dialects (Ollama, llama.cpp,
// vLLM): parallel tool calls that all say index 0, streamed tool calls that get dropped, models
// without tools, silent context truncation, and the chat / execution / question flows on each.
import { beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { ToolIndexFixer } from '../../src/lib/server/agent/compat-fetch';
import type { Dialect } from '../doubles/llm/types';
import { view } from '../helpers/message-view';
import type { MessagePart } from '../../src/lib/types/messages';
import { useStage } from '../helpers/stage';

const { llm } = useStage({
	model: true,
	// No summaries here: these sessions test the cut that is left when folding is off or fails
	// (history-summary.test.ts folds).
	env: { NOMOS_MODEL: 'qwen2.5:7b', NOMOS_HISTORY_TOKENS: '0' },
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 102, hostname: 'backup', status: 'stopped' }
			]
		}
	]
});
beforeEach(() => {
	forgetContextWindow();
	delete process.env.NOMOS_MODEL_STREAM_TOOLS;
	resetEnvCache();
});
async function session(text: string): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'model servers');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
}
const reply = async (sessionId: string) => (await listMessages(sql(), sessionId)).filter((m) => m.role === 'assistant').at(-1)!;
const calls = (parts: MessagePart[]) => view(parts).flatMap((p) => (p.type === 'tool-call' ? [p] : []));

describe('Ollama', () => {
	it('two parallel tool calls that both say index 0 run as two calls, not one merged call', async () => {
		llm.setDialect('ollama');
		llm.push(
			{
				toolCalls: [
					{ name: 'list_lxcs', args: {} },
					{ name: 'search_knowledge', args: { query: 'caddy reverse proxy' } }
				]
			},
			{ text: 'Two containers; no notes about caddy.' }
		);
		const s = await session('what runs, and how is caddy set up?');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts).map((c) => [c.toolName, c.input, c.state])).toEqual([
			['list_lxcs', {}, 'done'],
			['search_knowledge', { query: 'caddy reverse proxy' }, 'done']
		]);
		expect(llm.requests).toHaveLength(2);
		// The raw stream really did reuse index 0 (the double speaks Ollama's shape).
		const fixer = new ToolIndexFixer();
		const a = fixer.fix({ choices: [{ index: 0, delta: { tool_calls: [{ id: 'a', index: 0, function: { name: 'x', arguments: '{}' } }] } }] });
		const b = fixer.fix({ choices: [{ index: 0, delta: { tool_calls: [{ id: 'b', index: 0, function: { name: 'y', arguments: '{}' } }] } }] });
		expect([a.choices![0].delta!.tool_calls![0].index, b.choices![0].delta!.tool_calls![0].index]).toEqual([0, 1]);
	});

	it('a build that drops streamed tool calls: the empty step is retried without streaming and the call runs', async () => {
		llm.setDialect('ollama-no-stream-tools');
		llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { toolCalls: [{ name: 'list_lxcs', args: {} }] }, { text: 'CT 100 caddy and CT 102 backup.' });
		const s = await session('list my containers');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const m = await reply(s);
		expect(calls(m.parts).map((c) => c.toolName)).toEqual(['list_lxcs']);
		expect(JSON.stringify(m.parts)).toContain('retrying without streaming');
		// Streamed, dropped; then the rest of this turn's steps are asked without streaming.
		expect(llm.requests.map((r) => r.body?.stream)).toEqual([true, false, false]);
		expect(view(m.parts).at(-1)).toMatchObject({ type: 'text', text: 'CT 100 caddy and CT 102 backup.' });
	});

	it('NOMOS_MODEL_STREAM_TOOLS=off never streams a request that offers tools', async () => {
		process.env.NOMOS_MODEL_STREAM_TOOLS = 'off';
		resetEnvCache();
		llm.setDialect('ollama-no-stream-tools');
		llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { text: 'Done.' });
		const s = await session('list my containers');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		expect(llm.requests.map((r) => r.body?.stream)).toEqual([false, false]);
		expect(calls((await reply(s)).parts).map((c) => c.state)).toEqual(['done']);
	});

	it('a model without tools is named in one readable line, and not retried', async () => {
		llm.setDialect('ollama');
		llm.push({ fault: 'no-tools' });
		const s = await session('hello');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('error');
		expect(llm.requests).toHaveLength(1);
		const m = await reply(s);
		expect(m.error).toBe(
			'the model "qwen2.5:7b" does not support tools, which Nomos needs; set NOMOS_MODEL to a tool-capable model (for Ollama e.g. qwen2.5, llama3.1 or mistral-nemo)'
		);
		expect(JSON.stringify(m.parts)).toContain('does not support tools');
	});

	it('a small context: the history is fitted to num_ctx, and a cut prompt is reported with how to raise it', async () => {
		// Below the instructions and tools (≈ 1,750 tokens): nothing that fits is left to send.
		llm.setDialect('ollama', 1024);
		const s = await session('first question');
		await sql().begin(async (tx) => {
			for (let i = 0; i < 20; i++) {
				await insertMessage(tx, {
					sessionId: s,
					role: 'assistant',
					parts: [{ type: 'text', text: `old answer ${i} ${'x'.repeat(2000)}` }],
					status: 'complete',
					origin: 'chat'
				});
				await insertMessage(tx, { sessionId: s, role: 'user', parts: [{ type: 'text', text: `follow-up ${i}` }], status: 'complete', origin: 'chat' });
			}
		});
		llm.push({ text: 'Short answer.' });
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const body = JSON.stringify(llm.requests[0].body!.messages);
		expect(body.length).toBeLessThan(20_000);
		expect(body).toContain('follow-up 19');
		expect(body).toContain('left out to fit');
		const m = await reply(s);
		const note = view(m.parts).find((p) => p.type === 'note' && p.kind === 'context') as { text: string } | undefined;
		expect(note?.text).toMatch(/read only 1024 prompt tokens of about \d+ sent/);
		expect(note?.text).toContain('OLLAMA_CONTEXT_LENGTH');
	});
});

describe('a cut context is said once per session, for the server that is configured', () => {
	async function cutTurns(dialect: Dialect, window: number) {
		llm.setDialect(dialect, window);
		const s = await session('first question');
		await sql().begin(async (tx) => {
			for (let i = 0; i < 20; i++) {
				await insertMessage(tx, {
					sessionId: s,
					role: 'assistant',
					parts: [{ type: 'text', text: `old answer ${i} ${'x'.repeat(2000)}` }],
					status: 'complete',
					origin: 'chat'
				});
				await insertMessage(tx, { sessionId: s, role: 'user', parts: [{ type: 'text', text: `follow-up ${i}` }], status: 'complete', origin: 'chat' });
			}
		});
		llm.push({ text: 'Short answer.' }, { text: 'Another short answer.' });
		process.env.NOMOS_CONTEXT_TOKENS = String(window * 4);
		resetEnvCache();
		try {
			expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
			await sql().begin((tx) =>
				insertMessage(tx, { sessionId: s, role: 'user', parts: [{ type: 'text', text: 'and now?' }], status: 'complete', origin: 'chat' })
			);
			expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		} finally {
			delete process.env.NOMOS_CONTEXT_TOKENS;
			resetEnvCache();
		}
		const notes = (await listMessages(sql(), s)).flatMap((m) => view(m.parts)).filter((p) => p.type === 'note' && p.kind === 'context') as Array<{
			text: string;
			data?: { server: string };
		}>;
		expect(notes).toHaveLength(1);
		return notes[0];
	}

	it.each<[Dialect, string, string, RegExp]>([
		['ollama', 'ollama', 'The model server (Ollama) read only 2048', /OLLAMA_CONTEXT_LENGTH=16384/],
		['llamacpp', 'llamacpp', 'The model server (llama.cpp) read only 2048', /llama-server with -c 16384 \(--ctx-size/],
		['vllm', 'vllm', 'The model server (vLLM) read only 2048', /vLLM with --max-model-len 16384/],
		['openai', 'other', 'The model server read only 2048', /raise the context length in the model server's settings/]
	])('%s', async (dialect, server, starts, how) => {
		const note = await cutTurns(dialect, 2048);
		expect(note.text.startsWith(starts)).toBe(true);
		expect(note.text).toMatch(how);
		expect(note.data).toMatchObject({ server, read: 2048 });
		if (dialect !== 'ollama') expect(note.text).not.toContain('Ollama');
	});
});

describe.each<Dialect>(['openai', 'ollama', 'llamacpp', 'vllm'])('the flows on %s', (dialect) => {
	it('chat, an execution request and a question', async () => {
		llm.setDialect(dialect);
		llm.push(
			{ text: 'All quiet on strong.' },
			{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'backup tonight' } }] },
			{ text: 'Waiting for your approval.' },
			{ toolCalls: [{ name: 'ask_operator', args: { prompt: 'Keep the old backups?', options: ['yes', 'no'] } }] }
		);
		const s = await session('how is strong?');
		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		expect(view((await reply(s)).parts)).toEqual([{ type: 'text', text: 'All quiet on strong.' }]);

		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const [req] = calls((await reply(s)).parts);
		expect(req).toMatchObject({ toolName: 'request_execution', state: 'done', output: { status: 'awaiting_approval', command: "'pct' 'start' '102'" } });

		expect((await runTurn({ sessionId: s, origin: 'chat' })).status).toBe('complete');
		const [q] = await sql()`select prompt, options, status from session_questions where session_id = ${s}`;
		expect(q).toEqual({ prompt: 'Keep the old backups?', options: ['yes', 'no'], status: 'open' });
		expect(llm.state().errorCount).toBe(0);
	});
});

describe('the model check', () => {
	const probes = () =>
		llm.push(
			{ toolCalls: [{ name: 'echo', args: { word: 'ping' } }] },
			{
				toolCalls: [
					{ name: 'echo', args: { word: 'alpha' } },
					{ name: 'echo', args: { word: 'beta' } }
				]
			},
			{ toolCalls: [{ name: 'echo', args: { word: 'ping' } }] },
			{
				toolCalls: [
					{ name: 'echo', args: { word: 'alpha' } },
					{ name: 'echo', args: { word: 'beta' } }
				]
			}
		);

	it('on Ollama: lists models, reads the context it runs at, and every probe passes (parallel calls too)', async () => {
		const { checkModel, describeCheck } = await import('../../src/lib/server/agent/model-check');
		llm.setDialect('ollama');
		probes();
		const c = await checkModel({ probe: true });
		expect(c.models).toEqual(['scripted']);
		expect(c.listed).toBe(false);
		expect(c.context).toEqual({ tokens: 4096, source: "Ollama's default for its OpenAI endpoint" });
		// The first request (instructions + tools) fits Ollama's default window, with room to talk.
		expect(c.prompt).toMatchObject({ window: 4096, fits: true });
		expect(c.prompt.total).toBe(c.prompt.instructions + c.prompt.tools);
		expect(c.prompt.total).toBeLessThan(2000);
		expect(c.prompt.room).toBe(4096 - c.prompt.total);
		expect(c.probes.map((p) => [p.name, p.ok])).toEqual([
			['one tool call, streamed', true],
			['two parallel tool calls, streamed', true],
			['one tool call, not streamed', true],
			['two parallel tool calls, not streamed', true]
		]);
		expect(c.probes[1].detail).toBe('2 tool calls: {"word":"alpha"}, {"word":"beta"}');
		expect(c.probes[0].ttftMs).toBeGreaterThanOrEqual(0);
		expect(c.probes[0].tokensPerSec).toBeGreaterThan(0);
		expect(describeCheck(c)).toContain('"qwen2.5:7b" is NOT among the 1 it serves (scripted); context 4096 tokens');
	});

	it('on a build that drops streamed tool calls: says which probes fail and what to set', async () => {
		const { checkModel } = await import('../../src/lib/server/agent/model-check');
		llm.setDialect('ollama-no-stream-tools');
		probes();
		const c = await checkModel({ probe: true });
		expect(c.probes.map((p) => p.ok)).toEqual([false, false, true, true]);
		expect(c.probes[0].detail).toContain('NOMOS_MODEL_STREAM_TOOLS=off');
	});

	it('on vLLM: the context comes from max_model_len', async () => {
		const { checkModel } = await import('../../src/lib/server/agent/model-check');
		llm.setDialect('vllm', 16384);
		process.env.NOMOS_MODEL = 'scripted';
		resetEnvCache();
		try {
			const c = await checkModel({ probe: false });
			expect(c).toMatchObject({ listed: true, context: { tokens: 16384, source: 'the server (max_model_len)' }, probes: [] });
		} finally {
			process.env.NOMOS_MODEL = 'qwen2.5:7b';
			resetEnvCache();
		}
	});
});
