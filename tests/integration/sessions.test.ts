// Sessions an operator lives with (#33): rename, pin, archive, delete (soft, audited, refused while
// something is under way), full-text search over messages, tool calls and results, export, the
// agent's title from the scripted model, and the per-session model choice.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession, getSession, listSessions, searchSessions } from '../../src/lib/server/db/queries/sessions';
import { listAudit } from '../../src/lib/server/db/queries/audit';
import { archiveSession, chooseSessionModel, deleteSession, pinSession, renameSession } from '../../src/lib/server/sessions/manage';
import { cleanTitle, offerAgentTitle, writeAgentTitle } from '../../src/lib/server/sessions/title';
import { exportSession } from '../../src/lib/server/sessions/export';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { forgetContextWindow } from '../../src/lib/server/agent/context-budget';
import { Refusal } from '../../src/lib/server/refusal';
import { renameSessionInput } from '../../src/lib/schemas/sessions';
import type { MessagePart } from '../../src/lib/types/messages';
import { jobs, newOperator, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true, env: { NOMOS_MODELS: 'scripted,scripted-large' } });
let operatorId: string;
/** The operator whose sessions these are (access/sessions.ts). */
let me: { id: string; role: 'operator' };

beforeAll(async () => {
	operatorId = await newOperator('sessions-op');
	me = { id: operatorId, role: 'operator' };
});
beforeEach(() => {
	forgetContextWindow();
});

async function session(title: string, messages: Array<{ role: 'user' | 'assistant'; parts: MessagePart[]; status?: 'complete' | 'streaming' }> = []) {
	return sql().begin(async (tx) => {
		const id = await createSession(tx, operatorId, title);
		const ids: string[] = [];
		for (const m of messages)
			ids.push((await insertMessage(tx, { sessionId: id, role: m.role, parts: m.parts, status: m.status ?? 'complete', origin: 'chat' })).id);
		return { id, ids };
	});
}
const text = (t: string): MessagePart[] => [{ type: 'text', text: t }];
const refusal = async (p: Promise<unknown>) => {
	const e = await p.then(
		() => null,
		(err: unknown) => err
	);
	expect(e).toBeInstanceOf(Refusal);
	return e as Refusal;
};

describe('rename, pin, archive', () => {
	it('renames (validated, ≤ 120 characters), pins on top, archives out of the list and back', async () => {
		const a = await session('first');
		const b = await session('second');
		await renameSession(a.id, me, 'Backups on pve1');
		expect(await getSession(sql(), a.id)).toMatchObject({ title: 'Backups on pve1', titledBy: 'operator' });
		expect(renameSessionInput.safeParse({ sessionId: a.id, title: 'x'.repeat(121) }).success).toBe(false);
		expect(renameSessionInput.safeParse({ sessionId: a.id, title: '   ' }).success).toBe(false);
		expect(renameSessionInput.parse({ sessionId: a.id, title: '  two   words ' }).title).toBe('two words');

		// b is newer; pinning a puts it first.
		expect((await listSessions(sql(), me)).map((s) => s.id).slice(0, 2)).toEqual([b.id, a.id]);
		await pinSession(a.id, me, true);
		const pinned = await listSessions(sql(), me);
		expect(pinned[0]).toMatchObject({ id: a.id, pinned: true });

		await archiveSession(a.id, me, true);
		expect((await listSessions(sql(), me)).map((s) => s.id)).not.toContain(a.id);
		expect((await listSessions(sql(), me, { archived: true })).map((s) => s.id)).toEqual([a.id]);
		await archiveSession(a.id, me, false);
		expect((await listSessions(sql(), me)).map((s) => s.id)).toContain(a.id);

		// Every change went out on the one event path.
		const events = await sql()<
			{ payload: Record<string, unknown> }[]
		>`select payload from events where session_id = ${a.id} and type = 'session.updated' order by id`;
		expect(events.map((e) => e.payload)).toEqual(
			expect.arrayContaining([{ title: 'Backups on pve1' }, { pinned: true }, { archived: true }, { archived: false }])
		);
		const missing = await refusal(renameSession('00000000-0000-4000-8000-000000000000', me, 'x'));
		expect(missing.code).toBe('NOT_FOUND');
	});
});

describe('delete', () => {
	it('is refused while a reply is being written or a question is open, then hides the session and keeps its records, audited', async () => {
		const s = await session('to delete', [
			{ role: 'user', parts: text('check the disks') },
			{ role: 'assistant', parts: text('Looking'), status: 'streaming' }
		]);
		const busy = await refusal(deleteSession(s.id, me));
		expect(busy.code).toBe('CONFLICT');
		expect(busy.message).toMatch(/still answering/);
		await sql()`update messages set status = 'complete' where id = ${s.ids[1]}`;
		await sql()`insert into session_questions (session_id, prompt) values (${s.id}, 'Which disk?')`;
		expect((await refusal(deleteSession(s.id, me))).message).toMatch(/question waits/);
		await sql()`update session_questions set status = 'answered' where session_id = ${s.id}`;

		await deleteSession(s.id, me);
		expect((await listSessions(sql(), me)).map((x) => x.id)).not.toContain(s.id);
		expect((await listSessions(sql(), me, { archived: true })).map((x) => x.id)).not.toContain(s.id);
		expect((await getSession(sql(), s.id))?.deletedAt).toBeTruthy();
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from messages where session_id = ${s.id}`;
		expect(n).toBe(2);
		const audit = await listAudit(sql(), { action: 'session.deleted' });
		expect(audit).toEqual([expect.objectContaining({ sessionId: s.id, subjectId: s.id, detail: { title: 'to delete' } })]);
		expect(await exportSession(s.id, 'md')).toBeNull();
		expect((await refusal(renameSession(s.id, me, 'again'))).code).toBe('NOT_FOUND');
		expect((await refusal(deleteSession(s.id, me))).code).toBe('NOT_FOUND');
	});
});

describe('search', () => {
	it('finds words in messages, tool names, inputs and results; archived marked, deleted not found', async () => {
		const tool: MessagePart[] = [
			{
				type: 'tool-get_lxc_state',
				toolCallId: 'c1',
				state: 'output-available',
				input: { host: 'pve1', vmid: 4242 },
				output: { status: 'stopped', note: 'zfspool degraded' }
			} as unknown as MessagePart,
			...text('The container is stopped.')
		];
		const a = await session('disks', [
			{ role: 'user', parts: text('Why is the grafana dashboard slow today?') },
			{ role: 'assistant', parts: tool }
		]);
		const b = await session('archived one', [{ role: 'user', parts: text('grafana again, please') }]);
		const c = await session('deleted one', [{ role: 'user', parts: text('grafana deleted') }]);
		await archiveSession(b.id, me, true);
		await deleteSession(c.id, me);

		const hits = await searchSessions(sql(), me, 'grafana');
		expect(hits.map((h) => h.sessionId).sort()).toEqual([a.id, b.id].sort());
		expect(hits.find((h) => h.sessionId === b.id)?.archived).toBe(true);
		const first = hits.find((h) => h.sessionId === a.id)!;
		expect(first.messageId).toBe(a.ids[0]);
		expect(first.snippet).toContain('\u0002grafana\u0003');

		expect((await searchSessions(sql(), me, 'zfspool')).map((h) => h.messageId)).toEqual([a.ids[1]]);
		expect((await searchSessions(sql(), me, '4242')).map((h) => h.messageId)).toEqual([a.ids[1]]);
		expect((await searchSessions(sql(), me, 'get_lxc_state')).map((h) => h.messageId)).toEqual([a.ids[1]]);
		expect(await searchSessions(sql(), me, 'nonexistentword')).toEqual([]);
		// The query is data, never SQL.
		expect(await searchSessions(sql(), me, "'); drop table messages; --")).toEqual([]);
	});
});

describe('export', () => {
	it('writes Markdown with the words, tool calls and results, and JSON with the stored UI messages', async () => {
		const parts: MessagePart[] = [
			{
				type: 'tool-list_lxcs',
				toolCallId: 'c1',
				state: 'output-available',
				input: { host: 'pve1' },
				output: { containers: [{ vmid: 101, name: 'web' }] }
			} as unknown as MessagePart,
			...text('Two containers run.')
		];
		const s = await session('Export me', [
			{ role: 'user', parts: text('list the containers') },
			{ role: 'assistant', parts }
		]);
		const md = (await exportSession(s.id, 'md'))!;
		expect(md.filename).toMatch(/^nomos-export-me-[0-9a-f]{8}\.md$/);
		expect(md.body).toContain('# Export me');
		expect(md.body).toContain('## Operator');
		expect(md.body).toContain('list the containers');
		expect(md.body).toContain('**Tool `list_lxcs`**');
		expect(md.body).toContain('"name": "web"');
		expect(md.body).toContain('Two containers run.');
		const json = JSON.parse((await exportSession(s.id, 'json'))!.body) as {
			session: { title: string };
			messages: Array<{ role: string; parts: MessagePart[] }>;
		};
		expect(json.session.title).toBe('Export me');
		expect(json.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
		expect(json.messages[1].parts).toEqual(parts);
	});
});

describe("the agent's title", () => {
	it('cleans the answer', () => {
		expect(cleanTitle('"Grafana slowness on pve1."\nmore')).toBe('Grafana slowness on pve1');
		expect(cleanTitle('Title: Disk usage')).toBe('Disk usage');
		expect(cleanTitle('   ')).toBe('');
	});

	it('after the first turn: one request without tools, stored; once only; never over an operator rename; a failure keeps the title', async () => {
		llm.setFallback(() => ({ text: 'All containers are running.' }));
		const s = await session('why is grafana slow on pve1 this morning', [{ role: 'user', parts: text('why is grafana slow on pve1 this morning') }]);
		const r = await runTurn({ sessionId: s.id, origin: 'chat' });
		expect(r.status).toBe('complete');
		await offerAgentTitle(s.id);
		expect((await jobs('sessions__title')).map((j) => j.payload)).toContainEqual({ sessionId: s.id });

		expect(await writeAgentTitle(s.id)).toBe('stored');
		expect(llm.titleRequests).toHaveLength(1);
		const body = llm.titleRequests[0].body!;
		expect(body.tools).toBeUndefined();
		expect(body.max_tokens ?? body.max_completion_tokens).toBeLessThanOrEqual(16);
		expect(await getSession(sql(), s.id)).toMatchObject({ title: 'About: why is grafana slow on pve1 this morning', titledBy: 'agent' });
		// The conversation's script was not touched by it.
		expect(llm.requests.every((q) => q.body?.tools)).toBe(true);
		expect(await writeAgentTitle(s.id)).toBe('skipped');
		expect(llm.titleRequests).toHaveLength(1);

		// Renamed while the request was out: the operator's title stays.
		const t = await session('first words', [
			{ role: 'user', parts: text('first words') },
			{ role: 'assistant', parts: text('ok') }
		]);
		// (the answer waits a second: the rename comes once the request has arrived)
		llm.pushTitle({ text: 'Agent title', delayMs: 1000 });
		const claimed = writeAgentTitle(t.id);
		await waitUntil(async () => llm.titleRequests.length === 2, 'the second title request');
		await renameSession(t.id, me, 'Mine');
		expect(await claimed).toBe('kept');
		expect(await getSession(sql(), t.id)).toMatchObject({ title: 'Mine', titledBy: 'operator' });

		// A failed request: the first message's words stay, silently.
		const u = await session('keep me', [
			{ role: 'user', parts: text('keep me') },
			{ role: 'assistant', parts: text('ok') }
		]);
		llm.pushTitle({ fault: 'http500' });
		expect(await writeAgentTitle(u.id)).toBe('kept');
		expect((await getSession(sql(), u.id))?.title).toBe('keep me');

		// Renamed before: never asked.
		const v = await session('v', [
			{ role: 'user', parts: text('v') },
			{ role: 'assistant', parts: text('ok') }
		]);
		await renameSession(v.id, me, 'Operator title');
		const before = llm.titleRequests.length;
		expect(await writeAgentTitle(v.id)).toBe('skipped');
		expect(llm.titleRequests).toHaveLength(before);
	});
});

describe('model per session', () => {
	it('uses the chosen model for the turn and refuses one not configured', async () => {
		llm.setFallback(() => ({ text: 'ok' }));
		const s = await session('model', [{ role: 'user', parts: text('hello') }]);
		await chooseSessionModel(s.id, me, 'scripted-large');
		expect((await getSession(sql(), s.id))?.model).toBe('scripted-large');
		await runTurn({ sessionId: s.id, origin: 'chat' });
		expect(llm.requests.at(-1)?.body?.model).toBe('scripted-large');
		const [reply] = await sql()<{ parts: MessagePart[] }[]>`select parts from messages where session_id = ${s.id} and role = 'assistant'`;
		expect(JSON.stringify(reply.parts)).toContain('scripted-large');
		expect((await refusal(chooseSessionModel(s.id, me, 'gpt-unknown'))).code).toBe('BAD_REQUEST');
		await chooseSessionModel(s.id, me, 'scripted');
		expect((await getSession(sql(), s.id))?.model).toBeNull();
	});
});
