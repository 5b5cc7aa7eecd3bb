import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { view } from '../helpers/message-view';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true, env: { NOMOS_MAX_CONTINUATIONS: '2' } });

async function session(opts: { window: boolean }): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'deploy');
		await tx`insert into messages (session_id, role, parts, status, origin) values (${id}, 'user', ${JSON.stringify([{ type: 'text', text: 'deploy it' }])}::text::jsonb, 'complete', 'chat')`;
		if (opts.window) await tx`insert into assent_windows (session_id, expires_at) values (${id}, now() + interval '30 minutes')`;
		else await tx`insert into assent_windows (session_id, expires_at) values (${id}, now() - interval '1 minute')`;
		return id;
	});
}

async function finished(sessionId: string, status: 'succeeded' | 'failed', opts: { hash?: string; error?: string } = {}): Promise<string> {
	const [e] = await sql()`
		insert into executions (requested_by_session, host_name, target, action, params, classification, hash, status, result, error, finished_at)
		values (${sessionId}, 'strong', 'host:strong', 'pct_create', '{}'::jsonb, 'config_mutation', ${opts.hash ?? crypto.randomUUID()},
			${status}, ${status === 'succeeded' ? 'CT 105 (typetype) created and started' : null}, ${opts.error ?? (status === 'failed' ? 'exit 255' : null)}, now())
		returning id`;
	await sql()`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
	return e.id as string;
}

describe('continuation: the system is the event loop', () => {
	it('two workers racing on one finished execution produce one continuation turn', async () => {
		const s = await session({ window: true });
		const id = await finished(s, 'succeeded');
		llm.push({ text: 'Verified: CT 105 runs.', delayMs: 50 });
		const results = await Promise.all([continueSession(s), continueSession(s)]);
		expect(results.sort()).toEqual(['nothing', 'turn']);
		expect(llm.requests).toHaveLength(1);
		const msgs = await listMessages(sql(), s);
		expect(msgs.filter((m) => m.origin === 'continuation' && m.role === 'assistant')).toHaveLength(1);
		// The note is in the model's request, stored only as a system note, never as a user turn.
		const sent = JSON.stringify(llm.requests[0].body);
		expect(sent).toContain(`execution ${id} (pct_create on host:strong) succeeded: CT 105 (typetype) created and started`);
		expect(msgs.filter((m) => m.role === 'user')).toHaveLength(1);
		expect(view(msgs.find((m) => m.role === 'system')!.parts)[0]).toMatchObject({ type: 'note', kind: 'execution' });
	});

	it('folds several finished executions into one turn', async () => {
		const s = await session({ window: true });
		await finished(s, 'succeeded');
		await finished(s, 'failed');
		llm.push({ text: 'One worked, one failed; fixing.' });
		expect(await continueSession(s)).toBe('turn');
		expect(llm.requests).toHaveLength(1);
		expect((JSON.stringify(llm.requests[0].body).match(/\(pct_create on host:strong\)/g) ?? []).length).toBe(2);
	});

	it('a closed window runs no turn and leaves the visible note', async () => {
		const s = await session({ window: false });
		const id = await finished(s, 'succeeded');
		expect(await continueSession(s)).toBe('window-closed');
		expect(llm.requests).toHaveLength(0);
		const note = (await listMessages(sql(), s)).find((m) => m.role === 'system')!;
		expect(JSON.stringify(note.parts)).toContain(`execution ${id}`);
		expect(JSON.stringify(note.parts)).toContain('the approval window has closed; reply to continue');
	});

	it('the loop cap holds (NOMOS_MAX_CONTINUATIONS per window)', async () => {
		const s = await session({ window: true });
		llm.push({ text: 'one' }, { text: 'two' }, { text: 'three' });
		for (const expected of ['turn', 'turn', 'cap-reached']) {
			await finished(s, 'succeeded');
			expect(await continueSession(s)).toBe(expected);
		}
		expect(llm.requests).toHaveLength(2);
		const notes = (await listMessages(sql(), s)).filter((m) => m.role === 'system');
		expect(JSON.stringify(notes.at(-1)!.parts)).toContain('automatic continuations in this window; reply to continue');
	});

	it('the same action failing three times stops and asks the operator', async () => {
		const s = await session({ window: true });
		llm.push({ text: 'retrying' }, { text: 'retrying again' }, { text: 'never' });
		const results = [];
		for (let i = 0; i < 3; i++) {
			await finished(s, 'failed', { hash: 'same-hash', error: 'unable to destroy CT 103 - container is running' });
			results.push(await continueSession(s));
		}
		expect(results).toEqual(['turn', 'turn', 'repeated-failure']);
		const [task] = await sql()`select state from tasks where session_id = ${s}`;
		expect(task.state).toBe('awaiting_input');
	});
});
