// Issue #31 schedules: a slot runs exactly once across worker processes (one SIGKILLed in the
// middle of a run), a late slot runs within its grace or is recorded as missed, every change is
// audited, and a run is a chat of its own under the watch rules (read-only, its plan waits and notifies).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { approveByTyping } from '../../src/lib/server/executions/decisions';
import { createSchedule, editSchedule, pauseSchedule, removeSchedule } from '../../src/lib/server/schedules/manage';
import { armSchedule, tickSchedule, TICK_TASK } from '../../src/lib/server/schedules/tick';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { useTestDatabase } from '../helpers/db';
import { freshSession, jobs, newOperator, useHub, waitUntil } from '../helpers/executions';
import { startWorkerChild, type TsChild } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
useHub();
let llm: ScriptedLlm;
let admin: { id: string; username: string };

beforeAll(async () => {
	llm = await startScriptedLlm();
	Object.assign(process.env, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted' });
	resetEnvCache();
	admin = { id: await newOperator('root-admin'), username: 'root-admin' };
});
afterAll(async () => {
	await llm.close();
	delete process.env.OPENAI_BASE_URL;
	resetEnvCache();
});
beforeEach(async () => {
	llm.reset();
	await sql()`delete from graphile_worker._private_jobs`;
});

/** A cron whose latest slot (this hour's minute `minutesAgo` back) passed `minutesAgo` minutes ago: hourly, so its grace is 30 minutes. */
function hourlySlotAgo(minutesAgo: number): { cron: string; slot: Date } {
	const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000 - minutesAgo * 60_000);
	return { cron: `${slot.getUTCMinutes()} * * * *`, slot };
}

/** A schedule (paused, so nothing is queued yet) pointed at a slot that passed: as if the workers were down then. */
async function scheduleDueSince(name: string, minutesAgo: number, prompt = 'Check every CT for pending upgrades.') {
	const { cron, slot } = hourlySlotAgo(minutesAgo);
	const s = await sql().begin((tx) => createSchedule(tx, admin, { name, cron, prompt, enabled: false }));
	await sql().begin(async (tx) => {
		await tx`update schedules set enabled = true where id = ${s.id}`;
		expect((await armSchedule(tx, { ...s, enabled: true }, new Date(slot.getTime() - 1000)))?.toISOString()).toBe(slot.toISOString());
	});
	return { id: s.id, slot, cron };
}

const iso = (t: string) => new Date(t).toISOString();
const runsOf = async (id: string) =>
	(
		await sql()<{ slot: string; outcome: string; sessionId: string | null }[]>`
		select slot, outcome, session_id as "sessionId" from schedule_runs where schedule_id = ${id} order by slot`
	).map((r) => ({ ...r, slot: iso(r.slot) }));
const sessionsOf = (id: string) => sql()<{ id: string; title: string }[]>`select id, title from chat_sessions where started_by_schedule = ${id}`;
const tickJobs = async (id: string) => (await jobs(TICK_TASK)).filter((j) => j.payload.scheduleId === id);

describe('a schedule', () => {
	it('is created, edited, paused, resumed and deleted by an admin, each audited; only the newest slot is queued', async () => {
		const s = await sql().begin((tx) => createSchedule(tx, admin, { name: 'nightly', cron: '0 3 * * *', prompt: 'Look at the backups.', enabled: true }));
		const tomorrow3 = new Date();
		if (tomorrow3.getUTCHours() >= 3) tomorrow3.setUTCDate(tomorrow3.getUTCDate() + 1);
		tomorrow3.setUTCHours(3, 0, 0, 0);
		expect(s.nextAt).toBe(tomorrow3.toISOString());
		expect((await tickJobs(s.id)).map((j) => j.key)).toEqual([`schedule:${s.id}:${tomorrow3.toISOString()}`]);

		// Every 15 minutes, never on the hour: the new next slot can never be the old one (03:00),
		// whatever the time this runs (with */15, between 02:45 and 03:00 UTC it was).
		const edited = (await sql().begin((tx) =>
			editSchedule(tx, admin, s.id, { name: 'nightly', cron: '7,22,37,52 * * * *', prompt: 'Look at the backups.', enabled: true })
		))!;
		expect(Date.parse(edited.nextAt!) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
		// The old slot's job stays queued but is stale: it finds next_at moved and does nothing.
		expect(await tickSchedule({ scheduleId: s.id, slot: tomorrow3.toISOString() })).toEqual({ outcome: 'stale' });

		const paused = (await sql().begin((tx) => pauseSchedule(tx, admin, s.id, false)))!;
		expect(paused).toMatchObject({ enabled: false, nextAt: null });
		expect(await tickSchedule({ scheduleId: s.id, slot: edited.nextAt! })).toEqual({ outcome: 'stale' });
		const resumed = (await sql().begin((tx) => pauseSchedule(tx, admin, s.id, true)))!;
		expect(Date.parse(resumed.nextAt!)).toBeGreaterThanOrEqual(Date.parse(edited.nextAt!));
		expect(await sql().begin((tx) => removeSchedule(tx, admin, s.id))).toBe(true);
		expect(await sql().begin((tx) => removeSchedule(tx, admin, s.id))).toBe(false);
		expect(await tickSchedule({ scheduleId: s.id, slot: edited.nextAt! })).toEqual({ outcome: 'stale' });
		expect(await runsOf(s.id)).toEqual([]);

		const trail = await sql()<{ action: string; actorName: string; detail: Record<string, unknown> }[]>`
			select action, actor_name as "actorName", detail from audit_log where subject_type = 'schedule' and subject_id = ${s.id} order by id`;
		expect(trail.map((a) => a.action)).toEqual(['schedule.created', 'schedule.edited', 'schedule.paused', 'schedule.resumed', 'schedule.deleted']);
		expect(trail.every((a) => a.actorName === 'root-admin')).toBe(true);
		expect(trail[1].detail.changed).toEqual({ cron: { from: '0 3 * * *', to: '7,22,37,52 * * * *' } });
	});

	it('a slot reached within its grace runs; one past it is recorded as missed and the next slot is queued', async () => {
		const late = await scheduleDueSince('late but in time', 3);
		const r = await tickSchedule({ scheduleId: late.id, slot: late.slot.toISOString() });
		expect(r).toMatchObject({ outcome: 'done', started: [expect.any(String)], missed: 0 });
		expect((await runsOf(late.id)).map((x) => x.outcome)).toEqual(['started']);

		const tooLate = await scheduleDueSince('too late', 40);
		const m = await tickSchedule({ scheduleId: tooLate.id, slot: tooLate.slot.toISOString() });
		expect(m).toMatchObject({ outcome: 'done', started: [], missed: 1 });
		expect(await runsOf(tooLate.id)).toEqual([{ slot: tooLate.slot.toISOString(), outcome: 'missed', sessionId: null }]);
		expect(await sessionsOf(tooLate.id)).toEqual([]);
		const next = new Date(tooLate.slot.getTime() + 3_600_000).toISOString();
		expect(m.outcome === 'done' && m.next).toBe(next);
		// (The missed slot's own job is still queued: this test ran its tick in-process; run again, it is stale.)
		expect((await tickJobs(tooLate.id)).map((j) => j.payload.slot)).toEqual([tooLate.slot.toISOString(), next]);
		expect(await tickSchedule({ scheduleId: tooLate.id, slot: tooLate.slot.toISOString() })).toEqual({ outcome: 'stale' });
	});
});

describe('a slot with two workers up', () => {
	it('runs exactly once when the worker running it is SIGKILLed mid-run, and a re-run of its job changes nothing', { timeout: scaled(180_000) }, async () => {
		const env = { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted' };
		const workers: TsChild[] = [startWorkerChild(dbUrl(), env), startWorkerChild(dbUrl(), env)];
		const held = await sql().reserve();
		try {
			await waitUntil(async () => workers.every((w) => w.log.out.includes('worker ready')), 'both workers to start', { timeoutMs: 90_000, intervalMs: 200 });
			// The run's transaction stops at the task row of its session (after its run row and session row): the worker that took it dies there.
			await held`begin`;
			await held`lock table tasks in exclusive mode`;
			const s = await scheduleDueSince('two workers', 2);
			const [{ lockedBy }] = await waitUntil(
				async () => {
					const waiting = await sql()`select 1 from pg_locks where relation = 'tasks'::regclass and not granted`;
					if (!waiting.length) return null;
					const rows = await sql()<{ lockedBy: string }[]>`
						select j.locked_by as "lockedBy" from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
						where t.identifier = ${TICK_TASK} and j.locked_by is not null and j.payload->>'scheduleId' = ${s.id}`;
					return rows.length ? rows : null;
				},
				'a worker to take the slot and wait on the tasks table',
				{ timeoutMs: 30_000, intervalMs: 50 }
			);
			const [{ pid }] = await sql()<{ pid: number }[]>`select pid from worker_processes where ${lockedBy} = any(worker_ids)`;
			const victim = workers.find((w) => w.pid === pid)!;
			expect(victim).toBeDefined();
			victim.child.kill('SIGKILL');
			expect((await victim.exited).signal).toBe('SIGKILL');
			expect(await runsOf(s.id)).toEqual([]);
			await held`rollback`;

			// The other worker releases the dead one's job and runs the slot; the dead one's transaction rolled back.
			const survivor = workers.find((w) => w !== victim)!;
			const [run] = await waitUntil(
				async () => {
					const rows = await runsOf(s.id);
					return rows.length && rows[0].sessionId ? rows : null;
				},
				() => `the surviving worker to run the slot:\n${survivor.log.out}`,
				{ timeoutMs: 90_000, intervalMs: 200 }
			);
			expect(run).toMatchObject({ slot: s.slot.toISOString(), outcome: 'started' });
			const next = new Date(s.slot.getTime() + 3_600_000).toISOString();
			await waitUntil(
				async () => {
					const queued = await tickJobs(s.id);
					return queued.length === 1 && queued[0].payload.slot === next;
				},
				'only the next slot to be queued',
				{ timeoutMs: 30_000, intervalMs: 100 }
			);

			// The same slot's job again (a retry after a crash that came after the commit): nothing more.
			await sql()`select graphile_worker.add_job(${TICK_TASK}, ${JSON.stringify({ scheduleId: s.id, slot: s.slot.toISOString() })}::text::json, job_key => ${`rerun:${s.id}`})`;
			await waitUntil(
				async () => (await sql()`select 1 from graphile_worker._private_jobs where key = ${`rerun:${s.id}`}`).length === 0,
				'the re-run to finish',
				{
					timeoutMs: 30_000,
					intervalMs: 100
				}
			);
			expect(await runsOf(s.id)).toHaveLength(1);
			expect(await sessionsOf(s.id)).toHaveLength(1);
			expect(iso((await sql()<{ nextAt: string }[]>`select next_at as "nextAt" from schedules where id = ${s.id}`)[0].nextAt)).toBe(next);
		} finally {
			await held`rollback`.catch(() => undefined);
			held.release();
			for (const w of workers) w.child.kill('SIGKILL');
			await Promise.all(workers.map((w) => w.exited));
		}
	});
});

describe('a run', () => {
	it('is a chat of its own: the prompt as a note (no operator words), read-only by itself, its plan waits and the notice names the schedule', async () => {
		await sql()`insert into hosts (name, address, port, username, key_path, host_key_fingerprint) values ('pve1', '127.0.0.1', 1, 'root', '/nonexistent', 'SHA256:test') on conflict do nothing`;
		await sql()`insert into webhooks (name, kind, url) values ('phone', 'json', 'http://127.0.0.1:9/hook')`;
		const s = await scheduleDueSince('upgrades', 1, 'Check every CT for pending upgrades and propose a plan.');
		const r = await tickSchedule({ scheduleId: s.id, slot: s.slot.toISOString() });
		if (r.outcome !== 'done') throw new Error('not run');
		const [session] = await sessionsOf(s.id);
		expect(r.started).toEqual([session.id]);
		expect(session.title).toMatch(/^upgrades · \d{4}-\d\d-\d\d \d\d:\d\d$/);
		const [{ startedBy, startedByKind }] = await sql()<{ startedBy: string; startedByKind: string }[]>`
			select coalesce(h.name, sc.name) as "startedBy", case when sc.id is not null then 'schedule' end as "startedByKind"
			from chat_sessions s left join alert_hooks h on h.id = s.started_by_hook left join schedules sc on sc.id = s.started_by_schedule where s.id = ${session.id}`;
		expect({ startedBy, startedByKind }).toEqual({ startedBy: 'upgrades', startedByKind: 'schedule' });
		expect((await listMessages(sql(), session.id)).filter((m) => m.role === 'user')).toHaveLength(0);

		const [job] = await jobs('agent__run_turn');
		expect(job.payload).toMatchObject({ sessionId: session.id, origin: 'schedule' });
		llm.push({
			toolCalls: [
				{
					name: 'propose_plan',
					args: {
						title: 'Upgrade CT packages',
						steps: [
							{
								action: 'pveam_download',
								target: 'pve1',
								params: { storage: 'local', template: 'debian-12-standard_12.7-1_amd64.tar.zst' },
								why: 'example step'
							}
						]
					}
				}
			]
		});
		await agent__run_turn(job.payload, {} as never);
		const first = llm.requests[0].body!;
		expect(JSON.stringify(first.messages)).toContain('Check every CT for pending upgrades and propose a plan.');
		expect((first.tools ?? []).map((t) => t.function.name)).not.toContain('http_get');
		const reply = (await listMessages(sql(), session.id)).find((m) => m.role === 'assistant')!;
		expect(reply.origin).toBe('schedule');
		expect(JSON.stringify(reply.parts)).toContain('awaiting_approval');
		const notice = (await jobs('notify__webhook')).map((j) => j.payload.notice as { kind: string; text: string }).find((n) => n.kind === 'plan');
		expect(notice?.text).toContain('Proposed by the schedule "upgrades"');
		await sql()`delete from webhooks`;
	});

	it('approves nothing when an operator types "yes" in it (it does in an operator\'s chat)', async () => {
		const operatorId = await newOperator('typist');
		const typeYes = async (sessionId: string) => {
			const [e] = await sql()<{ id: string }[]>`
				insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
				values (${sessionId}, 'strong', 'lxc:strong/105', 'restart', '{}'::jsonb, 'config_mutation', ${'h-' + Math.random()}, 'pct reboot 105', 'r', 'awaiting_approval', now() + interval '1 hour')
				returning id`;
			await sql()`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
			return sql().begin(async (tx) => {
				const part = { type: 'tool-request_execution', toolCallId: 'c1', state: 'output-available', input: {}, output: { executionId: e.id } };
				await insertMessage(tx, { sessionId, role: 'assistant', parts: [part] as never, status: 'complete', origin: 'continuation' });
				const m = await insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'yes' }], status: 'complete', origin: 'chat' });
				return approveByTyping(tx, { sessionId, messageId: m.id, text: 'yes', shownIds: [e.id], operatorId, credential: freshSession() });
			});
		};
		expect(await typeYes(await sql().begin((tx) => createSession(tx, operatorId, 'mine')))).toHaveLength(1);
		const s = await scheduleDueSince('typed', 1);
		await tickSchedule({ scheduleId: s.id, slot: s.slot.toISOString() });
		const [session] = await sessionsOf(s.id);
		expect(await typeYes(session.id)).toEqual([]);
		const notes = (await listMessages(sql(), session.id)).filter((m) => m.role === 'system').map((m) => JSON.stringify(m.parts));
		expect(notes.at(-1)).toContain('typing approves nothing in a chat a schedule opened');
	});
});
