// The agent's prompt for small local models (issue #30), read from the scripted model's request
// log: the first request fits in 2,000 o200k tokens with every tool there; the instructions and the
// tool definitions are byte-identical across a session's requests (so Ollama, llama.cpp and vLLM
// reuse their KV cache: issue #46, tests/integration/prefix-cache.test.ts); the guidance left out
// of the instructions is in knowledge notes that search_knowledge finds, and the operator's own
// import never removes them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { GUIDE_PREFIX } from '../../src/lib/server/db/queries/knowledge';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { promptParts } from '../../src/lib/server/agent/prompt-tokens';
import { seedGuideNotes } from '../../src/lib/server/knowledge/guide';
import { importKnowledgeDir } from '../../src/lib/server/knowledge/import';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true, sync: false, hosts: [{ nodeName: 'strong', seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] }] });
const notesDir = mkdtempSync(join(tmpdir(), 'nomos-lean-notes-'));

afterAll(() => {
	rmSync(notesDir, { recursive: true, force: true });
});
beforeEach(() => {
	forgetContextWindow();
});

async function say(sessionId: string | null, text: string): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = sessionId ?? (await createSession(tx, null, 'lean'));
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
}

const chats = () => llm.requests.filter((r) => r.path.endsWith('/chat/completions'));

describe('a lean prompt', () => {
	it('the first request fits in 2,000 tokens with every tool; instructions and tools stay byte-identical across the session', async () => {
		const sessionId = await say(null, 'is caddy up?');
		llm.push(
			{ toolCalls: [{ name: 'list_lxcs', args: {} }] },
			{ toolCalls: [{ name: 'request_execution', args: { target: 'lxc:strong/100', action: 'pct_status', params: {}, reason: 'check caddy' } }] },
			{ text: 'caddy runs.' }
		);
		await runTurn({ sessionId, origin: 'chat' });
		await say(sessionId, 'and how is the fleet?');
		llm.push(
			{ toolCalls: [{ name: 'get_state_snapshot', args: {} }] },
			{ toolCalls: [{ name: 'describe_action', args: { action: 'pct_create' } }] },
			{ text: 'All fine.' }
		);
		await runTurn({ sessionId, origin: 'chat' });

		const sent = chats();
		expect(sent).toHaveLength(6);
		const first = promptParts(sent[0].body!);
		expect(first.total).toBeLessThanOrEqual(2000);
		const names = (sent[0].body!.tools ?? []).map((t) => t.function.name).sort();
		expect(names).toEqual(
			[
				'ask_operator',
				'describe_action',
				'get_entity',
				'get_execution_status',
				'get_lxc_state',
				'get_state_snapshot',
				'http_get',
				'list_entities',
				'list_lxcs',
				'propose_plan',
				'request_execution',
				'search_knowledge',
				'present_hypotheses',
				'mark_hypothesis'
			].sort()
		);
		// The prefix a server caches: the system message and the tool definitions, byte for byte, from the first request on.
		const system = (i: number) => JSON.stringify(sent[i].body!.messages!.filter((m) => m.role === 'system'));
		const tools = (i: number) => JSON.stringify(sent[i].body!.tools ?? []);
		for (let i = 1; i < sent.length; i++) {
			expect(system(i), `request ${i}`).toBe(system(0));
			expect(tools(i), `request ${i}`).toBe(tools(0));
		}
		// And the conversation only grows at its end: each request starts with the one before it (same turn).
		const history = (i: number) => JSON.stringify(sent[i].body!.messages).slice(0, -1);
		expect(history(2).startsWith(history(1))).toBe(true);
	});

	it("the guide is in knowledge notes that search_knowledge finds, and an import of the operator's notes leaves them", async () => {
		const r = await seedGuideNotes();
		expect(r.created).toBeGreaterThanOrEqual(3);
		expect((await seedGuideNotes()).created + (await seedGuideNotes()).updated).toBe(0);
		writeFileSync(join(notesDir, 'backups.md'), '# Backups\n\nPBS runs nightly.\n');
		const imported = await importKnowledgeDir(notesDir);
		expect(imported.removed).toBe(0);
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from knowledge where source_path like ${GUIDE_PREFIX + '%'}`;
		expect(n).toBe(r.created);

		const sessionId = await say(null, 'deploy an app');
		llm.push({ toolCalls: [{ name: 'search_knowledge', args: { query: 'nomos guide deploy verify' } }] }, { text: 'Read the guide.' });
		await runTurn({ sessionId, origin: 'chat' });
		const result = JSON.stringify(chats()[1].body!.messages!.findLast((m) => m.role === 'tool'));
		expect(result).toContain('Nomos guide: deploying an app');
		expect(result).toContain('ct_http_check');
	});
});
