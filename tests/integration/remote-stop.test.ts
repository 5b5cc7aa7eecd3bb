// Cancel means the host stopped too. The SSH double behaves like sshd: a signal reaches only the
// top process and a closed channel stops nothing, and `create: { slow }` forks a worker that
// finishes the create later unless killed — the ghost of issue #27. A cancel must stop the
// command's whole process group on the host before the outcome is written and read the target
// back after; a host that cannot be reached is said so, and read back when it answers again.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getHostByName } from '../../src/lib/server/db/queries/hosts';
import { recheckLeftovers } from '../../src/lib/server/executions/remote-stop';
import { execArgv } from '../../src/lib/server/ssh/client';
import { withHost } from '../../src/lib/server/ssh/pool';
import { groupedArgv, stopGroupArgv } from '../../src/lib/server/ssh/quote';
import { executions__sweep } from '../../tasks/executions__sweep';
import { hostileValues } from '../helpers/hostile';
import { runExecution } from '../../src/lib/server/executions/runner';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { requestCancel } from '../../src/lib/server/executions/lifecycle';
import { TERMINAL } from '../../src/lib/types/executions';
import { processRunning } from '../doubles/proxmox/server';
import { view } from '../helpers/message-view';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { agent__continue_session } from '../../tasks/agent__continue_session';
import { DEBIAN, jobsFor, newOperator, newSession, requestApproved, waitUntil } from '../helpers/executions';
import { STRONG_CADDY, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

// The scripted model answers the late read-back's continuation (the last describe).
const { llm, pve } = useStage({ model: { keep: true }, hosts: [STRONG_CADDY] });
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('stop-admin');
	sessionId = await newSession(operatorId, 'remote stop');
});
beforeEach(async () => {
	await pve.setFault('create', null);
});

const approved = (input: Record<string, unknown>, session = sessionId): Promise<ExecutionRow> => requestApproved(session, operatorId, input);
const load = async (id: string) => (await getExecution(sql(), id))!;
const cancel = (id: string) => sql().begin((tx) => requestCancel(tx, id, operatorId));
const createOf = (vmid: string) => ({ target: 'strong', action: 'pct_create', params: { vmid, hostname: `ct${vmid}`, template: DEBIAN }, reason: 'r' });
const recheckAt = async (id: string) => (await sql()<{ at: Date | null }[]>`select leftovers_recheck_at as at from executions where id = ${id}`)[0].at;
const notes = (id: string) =>
	sql()<{ messageId: string; text: string }[]>`
		select m.id as "messageId", p->'data'->>'text' as text from messages m, jsonb_array_elements(m.parts) p
		where m.session_id = ${sessionId} and m.role = 'system' and p->'data'->>'kind' = 'leftovers' and p->'data'->'data'->>'executionId' = ${id}`;
const taskFor = (vmid: string) => waitUntil(async () => (await pve.tasks()).find((t) => t.argv.includes(vmid)), `pct create ${vmid} to fork its worker`);

describe('cancel stops the command on the host', () => {
	it('a slow pct create: its process group is gone before the outcome is written, it never completes, and the target is read after the kill', async () => {
		await pve.setFault('create', { slow: 5_000 });
		const e = await approved(createOf('105'));
		const run = runExecution(e.id);
		const task = await taskFor('105');
		expect(await cancel(e.id)).toBe('requested');
		await waitUntil(async () => TERMINAL.includes((await load(e.id)).status), 'the outcome', { intervalMs: 5 });
		// The moment the outcome is there, neither pct nor the worker it forked runs any more: a
		// dead worker can never finish the create (the fake's own record says it did not).
		expect(await processRunning(task.pid)).toBe(false);
		expect(await processRunning(task.worker)).toBe(false);
		await run;
		expect((await pve.tasks()).find((t) => t.worker === task.worker)?.done).toBe(false);
		const done = await load(e.id);
		expect(done.status).toBe('interrupted');
		expect(done.error).toMatch(/^cancelled by the operator while pct create .* was running; it was stopped on the host and may have partly run$/);
		expect(done.leftovers).toBe('CT 105 exists on strong, stopped, locked: create');
		expect((await pve.containers()).find((c) => c.vmid === 105)).toMatchObject({ lock: 'create' });
		// The group the runner recorded is the one pct led (the wrapper exec'd into it).
		expect(done.steps[0].pgid).toBe(task.pid);
		// Read back after the kill: the stop had ended on the host before `pct status 105` arrived.
		const times = pve.execTimes();
		const stop = times.find((t) => t.command.includes('nomos-stop') && t.command.includes(`'${task.pid}'`));
		const readBack = times.findLast((t) => t.command.endsWith(`'pct' 'status' '105'`));
		expect(stop?.endedAt).toBeTypeOf('number');
		expect(readBack!.at).toBeGreaterThanOrEqual(stop!.endedAt!);
	});
});

describe('a host that cannot be reached', () => {
	it(
		'cancel: the outcome says the command may still run; when the host answers again, the sweep reads it back and the session hears what was found',
		async () => {
			await pve.setFault('create', { slow: 1_500 });
			const e = await approved(createOf('106'));
			const run = runExecution(e.id);
			const task = await taskFor('106');
			await waitUntil(async () => (await load(e.id)).steps[0]?.pgid, 'the group to be recorded');
			pve.setReachable(false);
			expect(await cancel(e.id)).toBe('requested');
			await run;
			const done = await load(e.id);
			expect(done.status).toBe('interrupted');
			expect(done.error).toMatch(
				/^cancelled by the operator while pct create .* was running; the host could not be reached to stop it: the command may still be running$/
			);
			expect(done.steps[0].stop).toBe('unreachable');
			expect(done.leftovers).toMatch(/^could not read CT 106 back from strong: /);
			expect(await recheckAt(e.id)).not.toBeNull();
			// The create nobody could stop finishes on the host (the fake's own record says so).
			await waitUntil(async () => (await pve.tasks()).find((t) => t.worker === task.worker)?.done, 'the create to finish on the host');
			// A sweep while the host is still away reads nothing and tells nobody.
			await executions__sweep({}, {} as never);
			expect(await notes(e.id)).toEqual([]);
			expect((await load(e.id)).leftovers).toMatch(/^could not read CT 106 back/);

			pve.setReachable(true);
			await sql()`update executions set leftovers_recheck_at = now() where id = ${e.id}`; // as if its retry were due
			const [{ last }] = await sql()<{ last: string }[]>`select coalesce(max(id), 0)::text as last from events`;
			await executions__sweep({}, {} as never);
			const late = await load(e.id);
			expect(late.leftovers).toBe('CT 106 exists on strong, running');
			expect(await recheckAt(e.id)).toBeNull();
			const [note] = await notes(e.id);
			expect(note.text).toBe(`Late read-back of execution ${e.id} (pct_create on host:strong): CT 106 exists on strong, running.`);
			// Announced: the chat shows it live, and the card its new leftovers.
			const events = await sql()<{ type: string; payload: Record<string, string> }[]>`select type, payload from events where id > ${last}::bigint order by id`;
			expect(events).toContainEqual(expect.objectContaining({ type: 'message.updated', payload: { messageId: note.messageId } }));
			expect(events.some((ev) => ev.type === 'execution.updated' && ev.payload.executionId === e.id)).toBe(true);
			// Once read, never again.
			await executions__sweep({}, {} as never);
			expect(await notes(e.id)).toHaveLength(1);
		},
		scaled(60_000)
	);

	it(
		'a late read-back stops the command first when it still runs on the host',
		async () => {
			await pve.setFault('create', { slow: 120_000 });
			const e = await approved(createOf('107'));
			const run = runExecution(e.id);
			const task = await taskFor('107');
			await waitUntil(async () => (await load(e.id)).steps[0]?.pgid, 'the group to be recorded');
			pve.setReachable(false);
			await cancel(e.id);
			await run;
			expect((await load(e.id)).error).toMatch(/the command may still be running$/);
			// The ghost: what the cancel could not stop still runs on the host.
			expect(await processRunning(task.worker)).toBe(true);
			pve.setReachable(true);
			expect(await recheckLeftovers()).toBe(1);
			expect(await processRunning(task.worker)).toBe(false);
			expect(await processRunning(task.pid)).toBe(false);
			expect((await pve.tasks()).find((t) => t.worker === task.worker)?.done).toBe(false);
			expect((await load(e.id)).leftovers).toBe('CT 107 exists on strong, stopped, locked: create');
			const [note] = await notes(e.id);
			expect(note.text).toBe(
				`Late read-back of execution ${e.id} (pct_create on host:strong): its command was still running on the host and was stopped now; CT 107 exists on strong, stopped, locked: create.`
			);
		},
		scaled(60_000)
	);
});

describe('a late read-back re-invokes the agent', () => {
	it(
		'once, through the continuation: no "continue" from the operator, no second run when the job is retried',
		async () => {
			const late = await newSession(operatorId, 'late read-back');
			await pve.setFault('create', { slow: 1_500 });
			const e = await approved(createOf('108'), late);
			const run = runExecution(e.id);
			const task = await taskFor('108');
			await waitUntil(async () => (await load(e.id)).steps[0]?.pgid, 'the group to be recorded');
			pve.setReachable(false);
			await cancel(e.id);
			await run;
			expect((await load(e.id)).leftovers).toMatch(/^could not read CT 108 back from strong: /);
			// The outcome's continuation runs as usual: the agent hears "could not read it back". A
			// worker deletes a job it ran; so does this test (no worker runs here).
			const [outcome] = (await jobsFor(e.id)).filter((j) => j.task === 'agent__continue_session' && j.payload.sessionId === late);
			llm.push({ text: 'The host is away; CT 108 could not be read back yet.' });
			await agent__continue_session(outcome.payload, {} as never);
			expect(llm.requests).toHaveLength(1);
			await sql()`delete from graphile_worker._private_jobs where payload->>'executionId' = ${e.id}`;
			await waitUntil(async () => (await pve.tasks()).find((t) => t.worker === task.worker)?.done, 'the create to finish on the host');

			pve.setReachable(true);
			await sql()`update executions set leftovers_recheck_at = now() where id = ${e.id}`;
			await executions__sweep({}, {} as never);
			const queued = (await jobsFor(e.id)).filter((j) => j.task === 'agent__continue_session' && j.payload.sessionId === late);
			expect(queued).toHaveLength(1);
			llm.push({ text: 'CT 108 was created after all: it exists and runs.' });
			await agent__continue_session(queued[0].payload, {} as never);
			expect(llm.requests).toHaveLength(2);
			const sent = JSON.stringify(llm.requests[1].body);
			const said = `Late read-back of execution ${e.id} (pct_create on host:strong): CT 108 exists on strong, running.`;
			expect(sent.split(said)).toHaveLength(2); // told once, in the turn of its own
			const msgs = await listMessages(sql(), late);
			expect(msgs.filter((m) => m.role === 'user')).toHaveLength(0);
			expect(msgs.filter((m) => m.role === 'assistant' && m.origin === 'continuation').map((m) => m.status)).toEqual(['complete', 'complete']);
			// The outcome note is not written again: the late note says what is new.
			const outcomeNotes = msgs.flatMap((m) => (m.role === 'system' ? view(m.parts) : [])).filter((p) => p.type === 'note' && p.kind === 'execution');
			expect(outcomeNotes).toHaveLength(1);
			// A retried job (or a second worker) finds it claimed: the agent is not invoked again.
			expect(await continueSession(late)).toBe('nothing');
			await agent__continue_session(queued[0].payload, {} as never);
			expect(llm.requests).toHaveLength(2);
		},
		scaled(60_000)
	);
});

describe('grouped commands', () => {
	it(
		'carry hostile words byte-exact through setsid and sh, hide the marker, and still feed stdin',
		async () => {
			const canaryDir = mkdtempSync(join(tmpdir(), 'nomos-canary-'));
			try {
				const words = hostileValues(1_500, 0x27_0005, canaryDir);
				const host = (await getHostByName(sql(), 'strong'))!;
				const groups: number[] = [];
				await withHost(host, async (client) => {
					// Batches under ssh2's packet limit (~32 KB per exec request).
					for (let i = 0; i < words.length; i += 30) {
						const batch = words.slice(i, i + 30);
						const r = await execArgv(client, ['printf', '%s\\0', ...batch], { timeoutMs: 30_000, onGroup: (g) => groups.push(g.pgid) });
						expect(r.exitCode).toBe(0);
						expect(r.stdout.split('\0').slice(0, -1)).toEqual(batch);
						expect(r.group?.pgid).toBe(groups.at(-1));
					}
					const cat = await execArgv(client, ['cat'], { group: true, timeoutMs: 10_000, stdin: 'nomos-pgid 12\nfed through\n' });
					expect(cat).toMatchObject({ exitCode: 0, stdout: 'nomos-pgid 12\nfed through\n' });
					expect((await execArgv(client, ['sh', '-c', 'exit 7'], { group: true, timeoutMs: 10_000 })).exitCode).toBe(7);
				});
				expect(groups).toHaveLength(50);
				expect(readdirSync(canaryDir)).toEqual([]);
			} finally {
				rmSync(canaryDir, { recursive: true, force: true });
			}
		},
		scaled(60_000)
	);

	it('refuse a pgid kill would read as "every process", and malformed tags', () => {
		expect(() => stopGroupArgv({ pgid: 1, tag: 'abcdef0123456789' })).toThrow();
		expect(() => stopGroupArgv({ pgid: 0, tag: 'abcdef0123456789' })).toThrow();
		expect(() => stopGroupArgv({ pgid: 123, tag: "x'; reboot" })).toThrow();
		expect(() => groupedArgv(['true'], 'NOT-HEX')).toThrow();
		expect(stopGroupArgv({ pgid: 123, tag: 'abcdef0123456789' }).slice(-2)).toEqual(['123', 'abcdef0123456789']);
	});

	it('a stop leaves alone a group that does not carry its tag', async () => {
		const host = (await getHostByName(sql(), 'strong'))!;
		await withHost(host, async (client) => {
			let pgid = 0;
			const running = execArgv(client, ['sleep', '30'], { onGroup: (g) => (pgid = g.pgid), timeoutMs: 60_000 });
			await waitUntil(async () => pgid, 'the group');
			const wrong = await execArgv(client, stopGroupArgv({ pgid, tag: '0123456789abcdef' }), { timeoutMs: 20_000 });
			expect(wrong.exitCode).toBe(0); // nothing of "its" group there
			expect(await processRunning(pgid)).toBe(true);
			process.kill(-pgid, 'SIGKILL');
			await running;
		});
	});
});
