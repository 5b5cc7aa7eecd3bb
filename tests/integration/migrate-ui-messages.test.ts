// Migration 0005: stored chat messages move from Nomos's own part shapes (text, tool-call, note) to
// the AI SDK's UIMessage parts. A database migrated up to 0004 gets real-shaped old data, then the
// app's migrator applies 0005; every converted row is checked part by part, everything else must
// stay as it was, a second run must change nothing, and the SDK must replay the converted history
// in the same assistant/tool blocks as the old replay rule did.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { convertToModelMessages, validateUIMessages, type ModelMessage, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigrations } from '../../src/lib/server/db/migrate';
import { createTestDatabase } from '../helpers/db';

type Json = unknown;
type Part = Record<string, Json>;

/** drizzle/ as it was before 0005: the same SQL files, the journal cut after `lastTag`. */
async function migrationsUpTo(lastTag: string): Promise<string> {
	const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-mig-'));
	await fs.cp(path.resolve('drizzle'), dir, { recursive: true });
	const journalPath = path.join(dir, 'meta', '_journal.json');
	const journal = JSON.parse(await fs.readFile(journalPath, 'utf8')) as { entries: { tag: string }[] };
	const end = journal.entries.findIndex((e) => e.tag === lastTag);
	if (end < 0) throw new Error(`no migration ${lastTag}`);
	journal.entries = journal.entries.slice(0, end + 1);
	await fs.writeFile(journalPath, JSON.stringify(journal));
	return dir;
}

// ---- the old data -------------------------------------------------------------------------------

const text = (t: string): Part => ({ type: 'text', text: t });
const STEP: Part = { type: 'step-start' };

type Seed = {
	key: string;
	session: 'a' | 'b' | 'c';
	role: 'user' | 'assistant' | 'system';
	status: string;
	origin?: string;
	error?: string | null;
	rev: number;
	parts: Part[];
};

const SEEDS: Seed[] = [
	{ key: 'a.user1', session: 'a', role: 'user', status: 'complete', rev: 1, parts: [text('what is the state of ct 101 on pve1?')] },
	{
		key: 'a.assistant1',
		session: 'a',
		role: 'assistant',
		status: 'complete',
		rev: 42,
		parts: [
			text('Let me check the container and the host.'),
			{
				type: 'tool-call',
				toolCallId: 'c1',
				toolName: 'get_lxc_state',
				input: { vmid: 101, node: null, opts: { deep: null, list: [null, 1] } },
				state: 'done',
				output: { status: 'running', tags: null, net: [{ name: 'eth0', ip: null }], cpu: 0.12 }
			},
			{ type: 'tool-call', toolCallId: 'c2', toolName: 'list_hosts', input: {}, state: 'done', output: [{ name: 'pve1', address: null }] },
			text('The container is running. Restarting its service now.'),
			{
				type: 'tool-call',
				toolCallId: 'c3',
				toolName: 'run_command',
				input: { vmid: 101, command: 'systemctl restart nginx' },
				state: 'error',
				output: { error: 'permission denied', detail: null },
				error: 'permission denied'
			},
			{ type: 'tool-call', toolCallId: 'c4', toolName: 'restart_lxc', input: { vmid: 101 }, state: 'error', error: 'host unreachable: pve1' },
			{ type: 'note', kind: 'retry', text: 'The model server failed; retrying (2/3).', data: { attempt: 2, wait: null, cause: { code: 'ECONNRESET' } } },
			text('Both attempts failed: the host did not answer.'),
			{ type: 'tool-call', toolCallId: 'c5', toolName: 'get_lxc_state', input: { vmid: 101 }, state: 'done', output: null },
			{ type: 'tool-call', toolCallId: 'c6', toolName: 'ping_host', state: 'error' },
			text('Done.')
		]
	},
	{ key: 'a.user2', session: 'a', role: 'user', status: 'complete', rev: 1, parts: [text('and ct 102?')] },
	{
		key: 'a.assistant2',
		session: 'a',
		role: 'assistant',
		status: 'cancelled',
		error: 'cancelled by the operator',
		rev: 9,
		parts: [
			{ type: 'note', kind: 'retry', text: 'Retrying after an empty answer.' },
			text('Looking at 102.'),
			{ type: 'tool-call', toolCallId: 'c7', toolName: 'get_lxc_state', input: { vmid: 102 }, state: 'error', error: 'cancelled' },
			{ type: 'note', kind: 'cancel', text: 'Cancelled by alice.', data: { by: 'alice' } }
		]
	},
	{ key: 'a.user3', session: 'a', role: 'user', status: 'queued', rev: 0, parts: [text('hello?'), text(' anyone')] },
	{
		key: 'b.system',
		session: 'b',
		role: 'system',
		status: 'complete',
		rev: 1,
		parts: [{ type: 'note', kind: 'context', text: 'Earlier messages were left out.' }]
	},
	{ key: 'b.user1', session: 'b', role: 'user', status: 'complete', rev: 1, parts: [text('hi')] },
	{ key: 'b.assistant-text', session: 'b', role: 'assistant', status: 'complete', origin: 'resume', rev: 3, parts: [text('Hello! '), text('How can I help?')] },
	{
		key: 'b.orphan',
		session: 'b',
		role: 'assistant',
		status: 'streaming',
		rev: 17,
		parts: [
			text('Checking both containers.'),
			{ type: 'tool-call', toolCallId: 'c8', toolName: 'get_lxc_state', state: 'running' },
			{ type: 'tool-call', toolCallId: 'c9', toolName: 'exec_in_lxc', input: { vmid: 103, argv: ['ls', null] }, state: 'running' },
			{ type: 'tool-call', toolCallId: 'c10', toolName: 'get_lxc_state', input: { vmid: 104 }, state: 'done', output: { status: 'stopped', lock: null } }
		]
	},
	{ key: 'b.empty', session: 'b', role: 'assistant', status: 'error', error: 'model server unreachable', rev: 2, parts: [] },
	{
		key: 'c.assistant-notes',
		session: 'c',
		role: 'assistant',
		status: 'error',
		error: 'model error',
		origin: 'continuation',
		rev: 5,
		parts: [{ type: 'note', kind: 'error', text: 'The model server returned 500.', data: { status: 500, body: null } }]
	},
	{ key: 'c.user-empty', session: 'c', role: 'user', status: 'complete', rev: 0, parts: [] }
];

// ---- what 0005 must make of it ------------------------------------------------------------------

const EXPECTED: Record<string, Part[]> = {
	'a.user1': [text('what is the state of ct 101 on pve1?')],
	'a.assistant1': [
		STEP,
		text('Let me check the container and the host.'),
		{
			type: 'tool-get_lxc_state',
			toolCallId: 'c1',
			state: 'output-available',
			input: { vmid: 101, node: null, opts: { deep: null, list: [null, 1] } },
			output: { status: 'running', tags: null, net: [{ name: 'eth0', ip: null }], cpu: 0.12 }
		},
		{ type: 'tool-list_hosts', toolCallId: 'c2', state: 'output-available', input: {}, output: [{ name: 'pve1', address: null }] },
		STEP,
		text('The container is running. Restarting its service now.'),
		{
			type: 'tool-run_command',
			toolCallId: 'c3',
			state: 'output-available',
			input: { vmid: 101, command: 'systemctl restart nginx' },
			output: { error: 'permission denied', detail: null }
		},
		{ type: 'tool-restart_lxc', toolCallId: 'c4', state: 'output-error', input: { vmid: 101 }, errorText: 'host unreachable: pve1' },
		{
			type: 'data-note',
			data: { kind: 'retry', text: 'The model server failed; retrying (2/3).', data: { attempt: 2, wait: null, cause: { code: 'ECONNRESET' } } }
		},
		STEP,
		text('Both attempts failed: the host did not answer.'),
		{ type: 'tool-get_lxc_state', toolCallId: 'c5', state: 'output-available', input: { vmid: 101 }, output: null },
		{ type: 'tool-ping_host', toolCallId: 'c6', state: 'output-error', errorText: 'failed' },
		STEP,
		text('Done.')
	],
	'a.user2': [text('and ct 102?')],
	'a.assistant2': [
		STEP,
		{ type: 'data-note', data: { kind: 'retry', text: 'Retrying after an empty answer.' } },
		text('Looking at 102.'),
		{ type: 'tool-get_lxc_state', toolCallId: 'c7', state: 'output-error', input: { vmid: 102 }, errorText: 'cancelled' },
		{ type: 'data-note', data: { kind: 'cancel', text: 'Cancelled by alice.', data: { by: 'alice' } } }
	],
	'a.user3': [text('hello?'), text(' anyone')],
	'b.system': [{ type: 'data-note', data: { kind: 'context', text: 'Earlier messages were left out.' } }],
	'b.user1': [text('hi')],
	'b.assistant-text': [STEP, text('Hello! '), text('How can I help?')],
	'b.orphan': [
		STEP,
		text('Checking both containers.'),
		{ type: 'tool-get_lxc_state', toolCallId: 'c8', state: 'output-error', errorText: 'interrupted before it finished' },
		{
			type: 'tool-exec_in_lxc',
			toolCallId: 'c9',
			state: 'output-error',
			input: { vmid: 103, argv: ['ls', null] },
			errorText: 'interrupted before it finished'
		},
		{ type: 'tool-get_lxc_state', toolCallId: 'c10', state: 'output-available', input: { vmid: 104 }, output: { status: 'stopped', lock: null } }
	],
	'b.empty': [],
	'c.assistant-notes': [STEP, { type: 'data-note', data: { kind: 'error', text: 'The model server returned 500.', data: { status: 500, body: null } } }],
	'c.user-empty': []
};

/** Rows 0005 must rewrite: those with an old part, and assistant rows lacking their step-start. */
const CHANGED = ['a.assistant1', 'a.assistant2', 'b.system', 'b.assistant-text', 'b.orphan', 'c.assistant-notes'];

// ---- the old replay rule (src/lib/server/agent/history.ts before the move), for comparison --------

type OldCall = { type: 'tool-call'; toolCallId: string; toolName: string; input?: unknown; state: string; output?: unknown; error?: string };

function oldAssistantMessages(parts: Part[]): ModelMessage[] {
	const out: ModelMessage[] = [];
	let content: { type: string; [k: string]: unknown }[] = [];
	let calls: OldCall[] = [];
	const flush = () => {
		if (content.length) out.push({ role: 'assistant', content } as ModelMessage);
		if (calls.length)
			out.push({
				role: 'tool',
				content: calls.map((p) => ({
					type: 'tool-result',
					toolCallId: p.toolCallId,
					toolName: p.toolName,
					output:
						p.output !== undefined
							? { type: 'json', value: p.output }
							: { type: 'error-text', value: p.error ?? (p.state === 'running' ? 'interrupted before it finished' : 'failed') }
				}))
			} as ModelMessage);
		content = [];
		calls = [];
	};
	for (const p of parts) {
		if (p.type === 'text') {
			if (calls.length) flush();
			if (p.text) content.push({ type: 'text', text: p.text });
		} else if (p.type === 'tool-call') {
			const c = p as unknown as OldCall;
			content.push({ type: 'tool-call', toolCallId: c.toolCallId, toolName: c.toolName, input: c.input ?? {} });
			calls.push(c);
		}
	}
	flush();
	return out;
}

/** What the model is told, without what the two sides legitimately differ in (missing input: `{}` vs absent). */
function shape(messages: ModelMessage[]) {
	return messages.map((m) => ({
		role: m.role,
		content: (m.content as { type: string; [k: string]: unknown }[]).map((c) =>
			c.type === 'text'
				? { text: c.text }
				: c.type === 'tool-call'
					? { call: c.toolCallId, tool: c.toolName }
					: { result: c.toolCallId, tool: c.toolName, output: c.output }
		)
	}));
}

// ---- the test -----------------------------------------------------------------------------------

type RowState = { key: string; id: string; parts: Part[]; rest: Record<string, unknown>; xmin: string };

describe('migration 0005: messages to UIMessage parts', () => {
	let sql: postgres.Sql;
	const ids = new Map<string, string>();
	let before: Map<string, RowState>;
	let after: Map<string, RowState>;
	let eventsBefore: readonly unknown[];
	let sessionsBefore: readonly unknown[];
	let tmp = '';
	let tmp5 = '';

	const snapshot = async (): Promise<Map<string, RowState>> => {
		const rows = await sql<{ id: string; parts: Part[]; rest: Record<string, unknown>; xmin: string }[]>`
			select id, parts, to_jsonb(m) - 'parts' as rest, xmin::text as xmin from messages m`;
		const byId = new Map(rows.map((r) => [r.id, r]));
		return new Map([...ids].map(([key, id]) => [key, { key, ...byId.get(id)! }]));
	};

	beforeAll(async () => {
		const url = await createTestDatabase({ empty: true });
		tmp = await migrationsUpTo('0004_truth');
		await runMigrations(url, tmp);
		sql = postgres(url, { max: 1, onnotice: () => undefined });

		const [{ n: applied }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
		expect(applied).toBe(5);

		const sessions: Record<string, string> = {};
		for (const s of ['a', 'b', 'c'] as const) {
			const [row] = await sql<{ id: string }[]>`
				insert into chat_sessions (title, created_at, updated_at)
				values (${`session ${s}`}, '2026-11-01T10:00:00Z', '2026-11-02T10:00:00Z') returning id`;
			sessions[s] = row.id;
		}
		for (const [i, s] of SEEDS.entries()) {
			const stamp = `2026-11-0${1 + (i % 9)}T10:${String(i).padStart(2, '0')}:00.123456Z`;
			const [row] = await sql<{ id: string }[]>`
				insert into messages (session_id, role, parts, status, origin, error, rev, created_at, updated_at)
				values (${sessions[s.session]}, ${s.role}, ${JSON.stringify(s.parts)}::text::jsonb, ${s.status}, ${s.origin ?? 'chat'},
					${s.error ?? null}, ${s.rev}, ${stamp}, ${stamp})
				returning id`;
			ids.set(s.key, row.id);
			await sql`insert into events (session_id, type, payload) values (${sessions[s.session]}, 'message.updated', ${JSON.stringify({ messageId: row.id })}::text::jsonb)`;
		}
		before = await snapshot();
		eventsBefore = await sql`select * from events order by id`;
		sessionsBefore = await sql`select * from chat_sessions order by id`;

		// Up to 0005 only: a later migration may rewrite the whole table (0022 adds a stored
		// generated column), which would move every row's xmin.
		tmp5 = await migrationsUpTo('0005_ui_messages');
		await runMigrations(url, tmp5);
		after = await snapshot();
	});

	afterAll(async () => {
		await sql?.end();
		if (tmp) await fs.rm(tmp, { recursive: true, force: true });
		if (tmp5) await fs.rm(tmp5, { recursive: true, force: true });
	});

	it('the old data went in as the old shapes', () => {
		for (const s of SEEDS) expect(before.get(s.key)!.parts).toStrictEqual(s.parts);
	});

	it('0005 was applied by the migrator, after 0004', async () => {
		const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
		// 0000…0005, and any later migration.
		expect(n).toBeGreaterThanOrEqual(6);
	});

	it('converts every message to the exact UIMessage parts', () => {
		for (const s of SEEDS) expect({ key: s.key, parts: after.get(s.key)!.parts }).toStrictEqual({ key: s.key, parts: EXPECTED[s.key] });
	});

	it('gives parts the SDK accepts', async () => {
		const messages = SEEDS.filter((s) => EXPECTED[s.key].length > 0).map((s) => ({ id: ids.get(s.key)!, role: s.role, parts: after.get(s.key)!.parts }));
		await expect(validateUIMessages({ messages })).resolves.toHaveLength(messages.length);
	});

	it('rewrites only rows with old parts, and leaves every other column alone', () => {
		const changed = SEEDS.filter((s) => after.get(s.key)!.xmin !== before.get(s.key)!.xmin).map((s) => s.key);
		expect(changed.sort()).toEqual([...CHANGED].sort());
		// Later migrations may add columns (0014: runner): the columns there before are unchanged.
		const kept = (s: (typeof SEEDS)[number]) => Object.fromEntries(Object.keys(before.get(s.key)!.rest).map((c) => [c, after.get(s.key)!.rest[c]]));
		for (const s of SEEDS) expect({ key: s.key, rest: kept(s) }).toStrictEqual({ key: s.key, rest: before.get(s.key)!.rest });
		// Spot-check the columns that matter most: rev and updated_at kept, a streaming orphan still streaming.
		expect(after.get('b.orphan')!.rest).toMatchObject({ status: 'streaming', rev: 17 });
		expect(after.get('a.assistant1')!.rest).toMatchObject({ rev: 42, updated_at: before.get('a.assistant1')!.rest.updated_at });
	});

	it('leaves events and sessions alone (message.updated events carry only the message id)', async () => {
		expect(await sql`select * from events order by id`).toStrictEqual(eventsBefore);
		// Later migrations may add columns (0011: mcp_token_id): the columns there before are unchanged.
		const sessionsAfter = await sql`select * from chat_sessions order by id`;
		const columnsBefore = Object.keys(sessionsBefore[0] ?? {});
		expect(columnsBefore.length).toBeGreaterThan(0);
		expect(sessionsAfter.map((r) => Object.fromEntries(columnsBefore.map((c) => [c, r[c]])))).toStrictEqual([...sessionsBefore]);
		const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from events where payload - 'messageId' <> '{}'::jsonb`;
		expect(n).toBe(0);
	});

	it('changes nothing when its UPDATE runs a second time', async () => {
		const statement = await fs.readFile(path.resolve('drizzle/0005_ui_messages.sql'), 'utf8');
		expect(statement).not.toContain('--> statement-breakpoint');
		const result = await sql.unsafe(statement);
		expect(result.count).toBe(0);
		const again = await snapshot();
		for (const s of SEEDS) {
			expect(again.get(s.key)!.xmin).toBe(after.get(s.key)!.xmin);
			expect(again.get(s.key)!.parts).toStrictEqual(after.get(s.key)!.parts);
		}
	});

	it('replays converted assistant messages in the same assistant/tool blocks as the old rule', async () => {
		for (const key of ['a.assistant1', 'a.assistant2', 'b.assistant-text', 'b.orphan', 'c.assistant-notes']) {
			const seed = SEEDS.find((s) => s.key === key)!;
			const old = oldAssistantMessages(seed.parts);
			const now = await convertToModelMessages([{ id: ids.get(key)!, role: 'assistant', parts: after.get(key)!.parts } as UIMessage]);
			expect({ key, roles: now.map((m) => m.role) }).toStrictEqual({ key, roles: old.map((m) => m.role) });
			expect({ key, messages: shape(now) }).toStrictEqual({ key, messages: shape(old) });
		}
		// The long one, spelled out: three steps with tools, then a closing text.
		const long = await convertToModelMessages([{ id: 'x', role: 'assistant', parts: after.get('a.assistant1')!.parts } as UIMessage]);
		expect(long.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
	});

	it('would replay the long message as one block without the step-starts (they are what splits it)', async () => {
		const parts = after.get('a.assistant1')!.parts.filter((p) => p.type !== 'step-start');
		const merged = await convertToModelMessages([{ id: 'x', role: 'assistant', parts } as UIMessage]);
		expect(merged.map((m) => m.role)).toEqual(['assistant', 'tool']);
	});
});
