// request_execution as a model sees it, through the real @ai-sdk/openai client: the tool definition
// sent over HTTP lists each action's signature (pct_create's `disk? GiB`; describe_action gives the defaults) and params is a plain
// object, for OpenAI's and Ollama's dialects at any window; a guessed field (`disk_gb`) comes back
// as the error that names it and lists the allowed fields, and the corrected call goes through.
import { beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { DEBIAN } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true, sync: false, hosts: [{ nodeName: 'strong' }] });
beforeEach(() => {
	forgetContextWindow();
});

async function newSession(userText: string) {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'test');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text: userText }], status: 'complete', origin: 'chat' });
		return id;
	});
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('request_execution over HTTP', () => {
	for (const dialect of ['openai', 'ollama'] as const) {
		it(`${dialect}: the tool definition carries the signatures; disk_gb is refused by name, disk goes through`, async () => {
			// Ollama with a context that has room for the typed schema (num_ctx 16384).
			llm.setDialect(dialect, dialect === 'ollama' ? 16384 : null);
			const sessionId = await newSession('create typetype with an 8 GB disk');
			const call = (params: Json, id: string) => ({
				toolCalls: [{ id, name: 'request_execution', args: { target: 'strong', action: 'pct_create', params, reason: 'deploy typetype' } }]
			});
			llm.push(call({ hostname: 'typetype', template: DEBIAN, disk_gb: 8 }, 'c1'));
			llm.push(call({ hostname: 'typetype', template: DEBIAN, disk: 8 }, 'c2'));
			llm.push({ text: 'Waiting for your approval.' });
			await runTurn({ sessionId, origin: 'chat' });

			const chats = llm.requests.filter((r) => r.path.endsWith('/chat/completions'));
			expect(chats.length).toBe(3);
			const tool = (chats[0].body!.tools as Json[]).find((t) => t.function.name === 'request_execution')!;
			const parameters = tool.function.parameters as Json;
			expect(parameters.type).toBe('object');
			expect(parameters.properties.params).toEqual({ type: 'object' });
			expect(tool.function.description).toContain('pct_create(hostname, template, vmid?, cores?, memory? MiB, swap? MiB, disk? GiB,');
			expect(tool.function.description).toContain('pct_push(path, content, mode?)');
			expect((chats[0].body!.tools as Json[]).map((t) => t.function.name)).toContain('describe_action');

			const firstResult = chats[1].body!.messages!.findLast((m) => m.role === 'tool')!;
			const text = typeof firstResult.content === 'string' ? firstResult.content : JSON.stringify(firstResult.content);
			expect(text).toContain('bad params for pct_create: Unrecognized key: \\"disk_gb\\"');
			expect(text).toContain('fields of pct_create: vmid, hostname, template, cores, memory, swap, disk,');
			const second = chats[2].body!.messages!.findLast((m) => m.role === 'tool')!;
			expect(JSON.stringify(second.content)).toContain('awaiting_approval');
			const [row] = await sql()<{ params: Json }[]>`select params from executions where requested_by_session = ${sessionId}`;
			expect(row.params).toMatchObject({ hostname: 'typetype', disk: 8 });
		});
	}

	it('ollama at its default 4096-token context: the same definition, the same error', async () => {
		llm.setDialect('ollama');
		const sessionId = await newSession('create typetype');
		llm.push({
			toolCalls: [
				{
					id: 'c1',
					name: 'request_execution',
					args: { target: 'strong', action: 'pct_create', params: { hostname: 'typetype', template: DEBIAN, disk_gb: 8 }, reason: 'r' }
				}
			]
		});
		llm.push({ text: 'I used a wrong field.' });
		await runTurn({ sessionId, origin: 'chat' });
		const chats = llm.requests.filter((r) => r.path.endsWith('/chat/completions'));
		const tool = (chats[0].body!.tools as Json[]).find((t) => t.function.name === 'request_execution')!;
		expect(tool.function.parameters.properties.params).toEqual({ type: 'object' });
		expect(tool.function.description).toContain('pct_create(hostname, template,');
		const result = chats[1].body!.messages!.findLast((m) => m.role === 'tool')!;
		expect(JSON.stringify(result.content)).toMatch(
			/bad params for pct_create: Unrecognized key: .*disk_gb.*fields of pct_create: vmid, hostname, template, cores, memory, swap, disk,/
		);
	});
});
