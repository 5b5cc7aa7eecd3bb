// The session review over the AI SDK's UIMessage parts: the shapes the review fixture does not
// produce (invalid calls that keep their arguments in rawInput, calls still running, failures
// in errorText, data-note retries and notes, step-start parts) count as they should.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { notePart } from '../../src/lib/messages/parts';
import { refreshSessionsFacts } from '../../src/lib/server/db/queries/review-facts';
import { reviewOverview, reviewSession } from '../../src/lib/server/review';
import type { MessagePart } from '../../src/lib/types/messages';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

const step: MessagePart = { type: 'step-start' };
const text = (t: string): MessagePart => ({ type: 'text', text: t, state: 'done' });
/** A call the model made with arguments that did not fit: no input, its arguments in rawInput. */
const invalid = (i: number): MessagePart => ({
	type: 'tool-get_entity',
	toolCallId: `bad_${i}`,
	state: 'output-error',
	input: undefined,
	rawInput: { id: `lxc:strong/${101 + i}`, extra: true },
	errorText: 'Invalid input for tool get_entity: unrecognized key "extra"'
});

type Msg = { role: 'user' | 'assistant' | 'system'; parts: MessagePart[]; status?: string; origin?: string };

async function insertSession(title: string, msgs: Msg[]): Promise<string> {
	const at = new Date(Date.now() - 3600_000);
	const [s] = await sql()<{ id: string }[]>`
		insert into chat_sessions (title, created_at, updated_at) values (${title}, ${at.toISOString()}::timestamptz, ${at.toISOString()}::timestamptz) returning id`;
	for (const [i, m] of msgs.entries()) {
		const t = new Date(at.getTime() + i * 60_000).toISOString();
		await sql()`
			insert into messages (session_id, role, parts, status, origin, created_at, updated_at)
			values (${s.id}, ${m.role}, ${JSON.stringify(m.parts)}::text::jsonb, ${m.status ?? 'complete'}, ${m.origin ?? 'chat'},
				${t}::timestamptz, ${t}::timestamptz)`;
	}
	await refreshSessionsFacts(sql(), [s.id]);
	return s.id;
}

describe('session review over UIMessage parts', () => {
	let id: string;

	beforeAll(async () => {
		id = await insertSession('deploy foo', [
			{ role: 'user', parts: [text('deploy foo on strong')] },
			{
				role: 'assistant',
				parts: [
					step,
					text('Looking at the containers.'),
					...[0, 1, 2, 3, 4].map(invalid),
					{ type: 'tool-http_get', toolCallId: 'h', state: 'output-error', input: { url: 'https://foo.example' }, errorText: 'HTTP 503 from foo.example' },
					{
						type: 'tool-request_execution',
						toolCallId: 'r',
						state: 'output-available',
						input: { target: 'strong', action: 'pct_create', params: {}, reason: 'create foo' },
						output: { error: "unknown action 'pct_create'", hint: 'valid actions: restart, pct_exec' }
					},
					{
						type: 'tool-list_lxcs',
						toolCallId: 'l',
						state: 'output-available',
						input: { host: 'strong' },
						output: { containers: 3 }
					} as unknown as MessagePart, // not list_lxcs' real output: the review reads only the call
					{ type: 'tool-list_entities', toolCallId: 'e', state: 'input-available', input: { kind: 'lxc' } },
					notePart('retry', 'The model returned nothing (an empty reply); retrying once…'),
					step,
					text('I will try another way.')
				]
			},
			{ role: 'system', origin: 'continuation', parts: [notePart('execution', 'restart of foo failed: exit 1')] },
			// A step that produced nothing: blank.
			{ role: 'assistant', origin: 'continuation', parts: [step] }
		]);
	});

	it('counts calls in every state, reads rawInput, errorText, output errors and data-note parts', async () => {
		const r = (await reviewSession(id))!;
		expect(r.totals.toolCalls).toBe(9);
		expect(r.messages.map((m) => m.toolCalls)).toEqual([0, 9, 0, 0]);
		expect(r.messages[1].topTools[0]).toEqual({ tool: 'get_entity', n: 5 });
		expect(r.messages[1].summary).toBe('Looking at the containers. I will try another way.');
		// A message with only a note is summarised by the note.
		expect(r.messages[2].summary).toBe('restart of foo failed: exit 1');

		const kinds = r.findings.map((f) => f.kind);
		expect(kinds).toContain('missing_capability');
		const cap = r.findings.find((f) => f.kind === 'missing_capability')!;
		expect(cap.title).toContain('pct_create');
		expect(cap.evidence.messageIndexes).toEqual([1]);
		expect(cap.evidence.detail.join('\n')).toContain("1 tool result said “unknown action 'pct_create'”");

		// The five get_entity calls name containers (in rawInput): list_lxcs is the better bulk tool.
		const n1 = r.findings.find((f) => f.kind === 'n_plus_one')!;
		expect(n1).toMatchObject({ severity: 'medium', title: 'get_entity ×5 in message 1; use list_lxcs / get_state_snapshot' });

		const silent = r.findings.find((f) => f.kind === 'silent_failure')!;
		expect(silent.evidence.messageIndexes).toEqual([1, 3]);
		expect(silent.evidence.detail).toContain('message 1: the model returned nothing and the turn was retried');
		expect(silent.evidence.detail).toContain('message 3: assistant turn is blank');
	});

	it('counts failures per tool in the overview: output-error and { error } results, not running calls', async () => {
		const o = await reviewOverview({});
		expect(o.toolCallCount).toBe(9);
		const byTool = Object.fromEntries(o.tools.map((t) => [t.tool, [t.calls, t.failed]]));
		expect(byTool).toEqual({
			get_entity: [5, 5],
			http_get: [1, 1],
			request_execution: [1, 1],
			list_lxcs: [1, 0],
			list_entities: [1, 0]
		});
		expect(o.sessions[0].kinds).toEqual(expect.arrayContaining(['missing_capability', 'n_plus_one', 'silent_failure']));
	});
});
