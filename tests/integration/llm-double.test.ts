/**
 * The scripted LLM double, exercised through the real AI SDK client over real HTTP:
 * createOpenAI({ baseURL }).chat() + streamText / generateText from `ai`.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, InvalidToolInputError, generateText, stepCountIs, streamText, tool, type TextStreamPart, type ToolSet } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { promptParts, tokensOf } from '../../src/lib/server/agent/prompt-tokens';
import { z } from 'zod';
import { llmControl } from '../doubles/llm/client';
import { startScriptedLlm, type ChatRequestBody, type ScriptedLlm } from '../doubles/llm/server';

let llm: ScriptedLlm;
let model: ReturnType<ReturnType<typeof createOpenAI>['chat']>;

beforeAll(async () => {
	llm = await startScriptedLlm();
	model = createOpenAI({ baseURL: llm.baseURL, apiKey: 'test' }).chat('scripted');
});
afterAll(() => llm.close());
beforeEach(() => llm.reset());

const getVmExecute = vi.fn(async ({ vmid, node }: { vmid: number; node: string }) => ({ vmid, node, status: 'running' }));
const tools = {
	get_vm: tool({
		description: 'Get the status of a Proxmox VM',
		inputSchema: z.object({ vmid: z.number(), node: z.string() }),
		execute: getVmExecute
	})
};
beforeEach(() => {
	getVmExecute.mockClear();
});

/** Drains fullStream; if iterating throws (it does for broken streams), returns what came before plus the error. */
async function collect<T extends ToolSet>(stream: AsyncIterable<TextStreamPart<T>>) {
	const parts: TextStreamPart<T>[] = [];
	let thrown: unknown;
	try {
		for await (const part of stream) parts.push(part);
	} catch (err) {
		thrown = err;
	}
	const ofType = <K extends TextStreamPart<T>['type']>(type: K) => parts.filter((p): p is Extract<TextStreamPart<T>, { type: K }> => p.type === type);
	return { parts, thrown, ofType };
}

const run = (prompt: string, extra: { steps?: number; maxRetries?: number; onError?: () => void } = {}) =>
	streamText({
		model,
		messages: [{ role: 'user', content: prompt }],
		tools,
		stopWhen: stepCountIs(extra.steps ?? 1),
		maxRetries: extra.maxRetries ?? 0,
		onError: extra.onError ?? (() => {}) // the default logs to stderr
	});

const chatBodies = () => llm.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as ChatRequestBody);

describe('happy paths', () => {
	it('streams text in several deltas and reports usage', async () => {
		const text = 'VM 101 is running on pve1.';
		llm.push({ text, chunkSize: 5 });
		const { ofType, thrown } = await collect(run('status of vm 101?').fullStream);

		expect(thrown).toBeUndefined();
		const deltas = ofType('text-delta').map((p) => p.text);
		expect(deltas).toHaveLength(Math.ceil(text.length / 5));
		expect(deltas.join('')).toBe(text);
		const finish = ofType('finish')[0];
		expect(finish.finishReason).toBe('stop');
		expect(finish.totalUsage.inputTokens).toBeGreaterThan(0);
		expect(finish.totalUsage.outputTokens).toBe(Math.ceil(text.length / 4));

		expect(llm.requests).toHaveLength(1);
		const [req] = llm.requests;
		expect(req).toMatchObject({ method: 'POST', path: '/v1/chat/completions', source: 'queue' });
		expect(req.error).toBeUndefined();
		expect(req.body).toMatchObject({ model: 'scripted', stream: true, stream_options: { include_usage: true } });
		expect(req.body?.messages).toEqual([{ role: 'user', content: 'status of vm 101?' }]);
		expect(req.body?.tools?.map((t) => t.function.name)).toEqual(['get_vm']);
	});

	it('parses and executes a tool call, then sends the tool result back', async () => {
		llm.push({ toolCalls: [{ name: 'get_vm', args: { vmid: 101, node: 'pve1' }, id: 'call_abc' }], text: 'Let me check.' }, { text: 'VM 101 is running.' });
		const result = run('status of vm 101?', { steps: 3 });
		const { ofType, thrown } = await collect(result.fullStream);

		expect(thrown).toBeUndefined();
		expect(ofType('tool-input-delta').length).toBeGreaterThan(1);
		expect(ofType('tool-call')).toMatchObject([{ toolCallId: 'call_abc', toolName: 'get_vm', input: { vmid: 101, node: 'pve1' } }]);
		expect(getVmExecute).toHaveBeenCalledTimes(1);
		expect(getVmExecute.mock.calls[0][0]).toEqual({ vmid: 101, node: 'pve1' });
		expect(ofType('tool-result')).toMatchObject([{ toolCallId: 'call_abc', output: { vmid: 101, node: 'pve1', status: 'running' } }]);
		expect(ofType('finish-step').map((p) => p.finishReason)).toEqual(['tool-calls', 'stop']);
		expect(await result.text).toBe('VM 101 is running.');

		const bodies = chatBodies();
		expect(bodies).toHaveLength(2);
		const followUp = bodies[1].messages ?? [];
		const assistant = followUp.find((m) => m.role === 'assistant');
		expect(assistant?.content).toBe('Let me check.');
		expect(assistant?.tool_calls).toEqual([
			{ id: 'call_abc', type: 'function', function: { name: 'get_vm', arguments: JSON.stringify({ vmid: 101, node: 'pve1' }) } }
		]);
		const toolMsg = followUp.find((m) => m.role === 'tool');
		expect(toolMsg?.tool_call_id).toBe('call_abc');
		expect(JSON.parse(toolMsg?.content as string)).toEqual({ vmid: 101, node: 'pve1', status: 'running' });
	});

	it('serves stream: false as a chat.completion (generateText)', async () => {
		llm.push({ toolCalls: [{ name: 'get_vm', args: { vmid: 7, node: 'pve2' } }] }, { text: 'All good.' });
		const result = await generateText({ model, prompt: 'check 7', tools, stopWhen: stepCountIs(2), maxRetries: 0 });

		expect(result.text).toBe('All good.');
		expect(result.steps[0].toolCalls).toMatchObject([{ toolName: 'get_vm', input: { vmid: 7, node: 'pve2' } }]);
		expect(getVmExecute).toHaveBeenCalledTimes(1);
		expect(chatBodies().map((b) => b.stream ?? false)).toEqual([false, false]);
	});

	it('answers a queued script in FIFO order and falls back to "(script exhausted)" with an error flag', async () => {
		llm.push({ text: 'first' }, { text: 'second' });
		expect(await run('a').text).toBe('first');
		expect(await run('b').text).toBe('second');
		expect(await run('c').text).toBe('(script exhausted)');
		expect(llm.requests.map((r) => r.source)).toEqual(['queue', 'queue', 'exhausted']);
		expect(llm.requests.map((r) => r.error)).toEqual([undefined, undefined, 'script-exhausted']);
		expect(llm.state()).toEqual({ pending: 0, hasFallback: false, requestCount: 3, errorCount: 1 });
	});
});

describe('faults', () => {
	it('http500 surfaces as an error part carrying APICallError 500 (no retry with maxRetries: 0)', async () => {
		llm.push({ fault: 'http500' });
		const onError = vi.fn();
		const { ofType, thrown } = await collect(run('hi', { onError }).fullStream);

		expect(thrown).toBeUndefined();
		const errors = ofType('error').map((p) => p.error);
		expect(errors).toHaveLength(1);
		expect(APICallError.isInstance(errors[0])).toBe(true);
		expect(errors[0]).toMatchObject({ statusCode: 500, isRetryable: true });
		expect((errors[0] as Error).message).toContain('(scripted)');
		expect(onError).toHaveBeenCalledWith({ error: errors[0] });
		expect(ofType('text-delta')).toHaveLength(0);
		expect(llm.requests).toHaveLength(1);
	});

	it('http429 surfaces as an error part carrying APICallError 429 with retry-after: 0', async () => {
		llm.push({ fault: 'http429' });
		const { ofType } = await collect(run('hi').fullStream);

		const [error] = ofType('error').map((p) => p.error);
		expect(APICallError.isInstance(error)).toBe(true);
		expect(error).toMatchObject({ statusCode: 429, isRetryable: true, responseHeaders: { 'retry-after': '0' } });
		expect((error as APICallError).responseBody).toContain('rate_limit_exceeded');
	});

	it('http429 is retried immediately when retries are allowed (retry-after: 0)', async () => {
		llm.push({ fault: 'http429' }, { text: 'recovered' });
		const started = Date.now();
		expect(await run('hi', { maxRetries: 1 }).text).toBe('recovered');
		expect(Date.now() - started).toBeLessThan(1500);
		expect(llm.requests).toHaveLength(2);
	});

	it('empty completion yields no text and finishes with stop', async () => {
		llm.push({ fault: 'empty' });
		const result = run('hi');
		const { ofType, thrown } = await collect(result.fullStream);

		expect(thrown).toBeUndefined();
		expect(ofType('text-delta')).toHaveLength(0);
		expect(ofType('error')).toHaveLength(0);
		expect(ofType('finish')[0].finishReason).toBe('stop');
		expect(await result.text).toBe('');
	});

	it('malformed tool JSON yields an invalid tool-call plus a tool-error, and the error goes back to the model', async () => {
		llm.push({ fault: 'malformed-tool-json' }, { text: 'Sorry, retrying.' });
		const { ofType, thrown } = await collect(run('hi', { steps: 2 }).fullStream);

		expect(thrown).toBeUndefined();
		const [call] = ofType('tool-call');
		expect(call).toMatchObject({ toolName: 'get_vm', invalid: true, dynamic: true });
		const error = call.invalid ? call.error : undefined;
		expect(InvalidToolInputError.isInstance(error)).toBe(true);
		expect((error as Error).message).toContain('JSON parsing failed');
		expect(typeof call.input).toBe('string'); // unparsable input is passed through as the raw text
		const [toolError] = ofType('tool-error');
		expect(toolError).toMatchObject({ toolCallId: call.toolCallId, toolName: 'get_vm' });
		expect(String(toolError.error)).toContain('Invalid input for tool get_vm');
		expect(getVmExecute).not.toHaveBeenCalled();
		expect(ofType('error')).toHaveLength(0);

		const toolMsg = chatBodies()[1].messages?.find((m) => m.role === 'tool');
		expect(toolMsg?.tool_call_id).toBe(call.toolCallId);
		expect(toolMsg?.content as string).toContain('Invalid input for tool get_vm');
	});

	it('cut-midway: some text arrives, then iterating fullStream throws APICallError (no error part, onError not called)', async () => {
		llm.push({ fault: 'cut-midway' });
		const onError = vi.fn();
		const result = streamText({ model, prompt: 'hi', maxRetries: 0, onError });
		const { ofType, thrown } = await collect(result.fullStream);

		expect(ofType('text-delta').length).toBeGreaterThan(0);
		expect(ofType('finish')).toHaveLength(0);
		expect(APICallError.isInstance(thrown)).toBe(true);
		expect((thrown as APICallError).message).toBe('Failed to process successful response');
		expect(String((thrown as APICallError).cause)).toContain('terminated');
		expect(onError).not.toHaveBeenCalled();
		await expect(result.text).rejects.toSatisfy((e) => APICallError.isInstance(e));
	});

	it('cut-midway on stream: false rejects generateText', async () => {
		llm.push({ fault: 'cut-midway' });
		await expect(generateText({ model, prompt: 'hi', maxRetries: 0 })).rejects.toSatisfy((e) => APICallError.isInstance(e));
	});

	it('hang never answers: the caller must abort', async () => {
		llm.push({ fault: 'hang' });
		const result = streamText({ model, prompt: 'hi', maxRetries: 0, abortSignal: AbortSignal.timeout(200) });
		const { ofType, parts } = await collect(result.fullStream);

		expect(ofType('text-delta')).toHaveLength(0);
		expect(parts.map((p) => p.type)).toContain('abort');
		expect(llm.requests).toHaveLength(1);
	});

	it('close() ends hanging requests so the process can exit', async () => {
		const own = await startScriptedLlm();
		own.push({ fault: 'hang' });
		const pending = fetch(`${own.baseURL}/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'scripted', messages: [], stream: true })
		});
		await vi.waitFor(() => expect(own.requests).toHaveLength(1));
		await own.close();
		await expect(pending).rejects.toThrow();
	});
});

describe('wire format', () => {
	it('streams real chat.completion.chunk SSE with split tool-call arguments, usage chunk and [DONE]', async () => {
		llm.push({ toolCalls: [{ name: 'get_vm', args: { vmid: 101, node: 'pve1' }, id: 'call_1' }] });
		const res = await fetch(`${llm.baseURL}/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } })
		});
		expect(res.headers.get('content-type')).toContain('text/event-stream');
		const events = (await res.text()).split('\n\n').filter(Boolean);
		expect(events.at(-1)).toBe('data: [DONE]');
		const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
		expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'm')).toBe(true);

		const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
		expect(toolDeltas[0]).toEqual({ index: 0, id: 'call_1', type: 'function', function: { name: 'get_vm', arguments: '' } });
		expect(toolDeltas.length).toBeGreaterThan(2);
		expect(toolDeltas.map((d) => d.function.arguments).join('')).toBe('{"vmid":101,"node":"pve1"}');
		expect(chunks.at(-2).choices[0].finish_reason).toBe('tool_calls');
		expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number) } });
	});

	it('counts the prompt as a server does: the messages and the tool definitions, in o200k tokens', async () => {
		const messages = [
			{ role: 'system', content: 'You are a test.' },
			{ role: 'user', content: 'list the containers on strong' }
		];
		const tools = [
			{
				type: 'function',
				function: {
					name: 'list_lxcs',
					description: 'Every container with its status, CPU and memory.',
					parameters: { type: 'object', properties: { host: { type: 'string' } } }
				}
			}
		];
		const prompt = async (body: object) => {
			llm.push({ text: 'ok' });
			const res = await fetch(`${llm.baseURL}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', ...body }) });
			return ((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
		};
		const without = await prompt({ messages });
		const withTools = await prompt({ messages, tools });
		expect(without).toBe(promptParts({ messages }).total);
		expect(withTools - without).toBe(tokensOf(JSON.stringify(tools)));
	});

	it('omits the usage chunk without include_usage and sends raw string args verbatim', async () => {
		llm.push({ toolCalls: [{ name: 'get_vm', args: '{"vmid": 1,' }] });
		const res = await fetch(`${llm.baseURL}/chat/completions`, {
			method: 'POST',
			body: JSON.stringify({ model: 'm', messages: [], stream: true })
		});
		const chunks = (await res.text())
			.split('\n\n')
			.filter((e) => e.startsWith('data: {'))
			.map((e) => JSON.parse(e.slice(6)));
		expect(chunks.some((c) => c.usage)).toBe(false);
		const args = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).map((d) => d.function.arguments);
		expect(args.join('')).toBe('{"vmid": 1,');
	});

	it('GET /v1/models lists a model', async () => {
		const res = await fetch(`${llm.baseURL}/models`);
		expect(await res.json()).toMatchObject({ object: 'list', data: [{ id: 'scripted', object: 'model' }] });
	});
});

describe('control API over HTTP', () => {
	it('push / state / requests / reset', async () => {
		const control = llmControl(llm.baseURL);
		await control.push({ text: 'from another process' }, { fault: 'empty' });
		expect(await control.state()).toMatchObject({ pending: 2, requestCount: 0 });

		expect(await run('hello over http').text).toBe('from another process');
		const recorded = await control.requests();
		expect(recorded).toHaveLength(1);
		expect(recorded[0]).toMatchObject({ seq: 0, method: 'POST', path: '/v1/chat/completions', source: 'queue' });
		expect(recorded[0].body?.messages?.[0]).toEqual({ role: 'user', content: 'hello over http' });
		expect(recorded[0].receivedAt).toBeGreaterThan(Date.now() - 10_000);

		await control.reset();
		expect(await control.state()).toEqual({ pending: 0, hasFallback: false, requestCount: 0, errorCount: 0 });
		expect(await control.requests()).toEqual([]);
	});

	it('rejects invalid scripts with 400', async () => {
		const control = llmControl(llm.baseURL);
		await expect(control.push({ fault: 'explode' } as never)).rejects.toThrow(/400/);
		await expect(control.fallback([{ respond: { txt: 'typo' } } as never])).rejects.toThrow(/400/);
		expect(llm.state().pending).toBe(0);
	});

	it('declarative fallback rules: first match wins, no match is flagged as exhausted, null clears', async () => {
		const control = llmControl(llm.baseURL);
		await control.fallback([
			{ whenLastMessageRole: 'tool', respond: { text: 'Done checking.' } },
			{ whenLastUserIncludes: 'status', respond: { toolCalls: [{ name: 'get_vm', args: { vmid: 5, node: 'pve1' } }] } },
			{ whenAnyMessageIncludes: 'backup', respond: { text: 'Backups are fine.' } }
		]);

		expect(await run('status of vm 5', { steps: 3 }).text).toBe('Done checking.');
		expect(getVmExecute).toHaveBeenCalledWith({ vmid: 5, node: 'pve1' }, expect.anything());
		expect(await run('how are the backup jobs?').text).toBe('Backups are fine.');
		expect(await run('unrelated').text).toBe('(script exhausted)');
		expect((await control.requests()).map((r) => [r.source, r.error])).toEqual([
			['fallback', undefined],
			['fallback', undefined],
			['fallback', undefined],
			['exhausted', 'script-exhausted']
		]);

		// The queue still takes precedence over the fallback.
		await control.push({ text: 'queued wins' });
		expect(await run('status?').text).toBe('queued wins');

		await control.fallback(null);
		expect(await control.state()).toMatchObject({ hasFallback: false });
		expect(await run('status?').text).toBe('(script exhausted)');
	});

	it('a rule matching the last message by a regex fills its groups into the answer, tool-call args included', async () => {
		const control = llmControl(llm.baseURL);
		await control.fallback([
			{
				whenLastMessageMatches: '^check vm (\\d+) on (\\w+)$',
				respond: { text: 'Checking VM $1.', toolCalls: [{ name: 'get_vm', args: '{"vmid":$1,"node":"$2"}' }] }
			},
			{ whenLastMessageRole: 'tool', whenLastMessageMatches: '"status":"(\\w+)"', respond: { text: 'It is $1.' } }
		]);
		expect(await run('check vm 7 on pve2', { steps: 3 }).text).toBe('It is running.');
		expect(getVmExecute).toHaveBeenCalledWith({ vmid: 7, node: 'pve2' }, expect.anything());
		expect(await run('check vm 8 on pve3', { steps: 3 }).text).toBe('It is running.');
		expect(getVmExecute).toHaveBeenLastCalledWith({ vmid: 8, node: 'pve3' }, expect.anything());
		// The regex reads the last message only: an earlier match does not count.
		expect(await run('check vm 9 on pve1?').text).toBe('(script exhausted)');
		await expect(control.fallback([{ whenLastMessageMatches: '(', respond: { text: 'x' } }])).rejects.toThrow(/400/);
	});

	it('in-process setFallback receives the recorded request', async () => {
		llm.setFallback((req) => ({ text: `you sent ${req.body?.messages?.length} message(s)` }));
		expect(await run('one').text).toBe('you sent 1 message(s)');
		llm.setFallback(null);
		expect(await run('two').text).toBe('(script exhausted)');
	});
});
