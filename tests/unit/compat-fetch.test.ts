import { describe, expect, it } from 'vitest';
import { compatFetch, completionAsSse, MAX_STREAMED_ARGS, NO_STREAM_HEADER, ToolIndexFixer } from '../../src/lib/server/agent/compat-fetch';

const sse = (chunks: object[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
const delta = (tool_calls: object[]) => ({ choices: [{ index: 0, delta: { tool_calls } }] });

async function through(body: string, init: RequestInit = { method: 'POST', body: JSON.stringify({ stream: true }) }) {
	const inner = (async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } })) as typeof fetch;
	const res = await compatFetch({ inner })('http://x/v1/chat/completions', init);
	return (await res.text())
		.split('\n')
		.filter((l) => l.startsWith('data: {'))
		.map(
			(l) => JSON.parse(l.slice(6)) as { choices: Array<{ delta: { tool_calls?: Array<{ index: number; id?: string; function?: { arguments?: string } }> } }> }
		);
}

describe('the compatibility fetch', () => {
	it('gives each new tool call id its own index, and continuation deltas follow it', async () => {
		const out = await through(
			sse([
				delta([{ index: 0, id: 'a', function: { name: 'list_lxcs', arguments: '{' } }]),
				delta([{ index: 0, function: { arguments: '}' } }]),
				delta([{ index: 0, id: 'b', function: { name: 'search_knowledge', arguments: '{"query":' } }]),
				delta([{ index: 0, function: { arguments: '"caddy"}' } }])
			])
		);
		expect(out.map((c) => c.choices[0].delta.tool_calls![0].index)).toEqual([0, 0, 1, 1]);
	});

	it('leaves correct indices alone', () => {
		const f = new ToolIndexFixer();
		expect(
			f
				.fix(
					delta([
						{ index: 0, id: 'a' },
						{ index: 1, id: 'b' }
					])
				)
				.choices![0].delta!.tool_calls!.map((c) => c.index)
		).toEqual([0, 1]);
	});

	it('stops passing arguments of one call past the cap, dropping the empty events (a 1 MB argument in 8-character pieces)', async () => {
		const pieces = [delta([{ index: 0, id: 'a', function: { name: 'http_get', arguments: '{"url":"' } }])];
		for (let i = 0; i < 131_072; i++) pieces.push(delta([{ index: 0, function: { arguments: 'xxxxxxxx' } }]));
		const out = await through(sse(pieces));
		const total = out.reduce((n, c) => n + (c.choices[0]?.delta.tool_calls ?? []).reduce((m, t) => m + (t.function?.arguments?.length ?? 0), 0), 0);
		expect(total).toBe(MAX_STREAMED_ARGS);
		expect(out.length).toBeLessThan(MAX_STREAMED_ARGS / 8 + 10);
	});

	it('asked not to stream, sends stream:false and replays the JSON answer as the same SSE a server would send', async () => {
		let sent: { stream?: boolean } = {};
		const inner = (async (_u: unknown, init?: RequestInit) => {
			sent = JSON.parse(init!.body as string);
			return Response.json({
				id: 'c',
				model: 'm',
				choices: [
					{
						index: 0,
						finish_reason: 'tool_calls',
						message: { role: 'assistant', content: null, tool_calls: [{ id: 't', function: { name: 'list_lxcs', arguments: '{}' } }] }
					}
				]
			});
		}) as typeof fetch;
		const res = await compatFetch({ inner })('http://x/v1/chat/completions', {
			method: 'POST',
			headers: { [NO_STREAM_HEADER]: '1' },
			body: JSON.stringify({ stream: true, tools: [{}] })
		});
		expect(sent.stream).toBe(false);
		expect(res.headers.get('content-type')).toBe('text/event-stream');
		const text = await res.text();
		expect(text).toContain('"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"list_lxcs","arguments":"{}"}}]');
		expect(text).toContain('"finish_reason":"tool_calls"');
		expect(text.trim().endsWith('data: [DONE]')).toBe(true);
		expect(completionAsSse({ choices: [{ message: { content: 'hi' } }] })).toContain('"finish_reason":"stop"');
	});
});
