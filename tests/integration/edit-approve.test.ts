// Edit before approving, against the SSH Proxmox double and the scripted model: the edited
// request is re-prepared like a fresh one, the approval names its new hash, the double runs the
// edited command, the audit keeps both versions, and the agent hears exactly what changed.
// Stale or crafted approvals and invalid edits write nothing.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { approveEdited, checkEdit, editForm, type EditApproval } from '../../src/lib/server/executions/edit';
import { executionHash } from '../../src/lib/server/executions/prepare';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { paramErrors } from '../../src/lib/schemas/action-params';
import { view } from '../helpers/message-view';
import { DEBIAN, decide, freshSession, newOperator, newSession } from '../helpers/executions';
import { STRONG, useStage } from '../helpers/stage';

const { llm, pve } = useStage({ model: true, hosts: [STRONG] });
let alice: { id: string; username: string };
let bob: { id: string; username: string };
let sessionId: string;

beforeAll(async () => {
	alice = { id: await newOperator('alice'), username: 'alice' };
	bob = { id: await newOperator('bob'), username: 'bob' };
	sessionId = await newSession(alice.id, 'deploy typetype');
});

async function pending(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	expect(r.execution.status).toBe('awaiting_approval');
	return r.execution;
}

const load = async (id: string) => (await getExecution(sql(), id))!;
const approvals = (id: string) => sql()`select hash, decision, route, decided_by as "decidedBy" from approvals where execution_id = ${id}`;
const audits = (id: string) =>
	sql()<{ action: string; actorName: string; route: string; detail: Record<string, unknown> }[]>`
		select action, actor_name as "actorName", route, detail from audit_log where subject_id = ${id} order by id`;

/** What the browser does: check the edit, then approve with the hash the check showed. */
async function editAndApprove(e: ExecutionRow, params: Record<string, unknown>, who = alice): Promise<EditApproval> {
	const c = await checkEdit(e, params);
	if (!c.ok) throw new Error(`edit refused: ${c.error} ${JSON.stringify(c.fieldErrors)}`);
	return approveEdited({ executionId: e.id, baseHash: e.hash, params, hash: c.hash, route: 'button', operator: who, credential: freshSession() });
}

const typetype = { hostname: 'typetype', template: DEBIAN, memory: 2048, cores: 2 };

describe('edit before approving', () => {
	it('runs the edited pct_create, keeps both versions in the audit and tells the agent what changed', async () => {
		const e = await pending({ target: 'strong', action: 'pct_create', params: typetype, reason: 'deploy TypeType' });
		const vmid = String(e.params.vmid);

		const form = editForm(e)!;
		expect(form.params).toEqual(e.params);
		expect(form.hash).toBe(e.hash);
		expect(form.locked).toContain('vmid');
		expect(form.schema.properties!.memory).toMatchObject({ type: 'integer', minimum: 16 });

		const edited = { ...e.params, memory: 4096 };
		const check = await checkEdit(e, edited);
		expect(check).toMatchObject({ ok: true, changes: [{ field: 'memory', from: 2048, to: 4096 }] });
		if (!check.ok) return;
		expect(check.commandPreview).toContain(`'--memory' '4096'`);
		expect(check.hash).toBe(executionHash('pct_create', 'host:strong', { ...e.params, memory: 4096 }));
		expect(check.hash).not.toBe(e.hash);

		const r = await approveEdited({
			executionId: e.id,
			baseHash: e.hash,
			params: edited,
			hash: check.hash,
			route: 'button',
			operator: alice,
			credential: freshSession()
		});
		expect(r.ok).toBe(true);
		const after = await load(e.id);
		expect(after).toMatchObject({ status: 'approved', hash: check.hash, commandPreview: check.commandPreview, params: { memory: 4096, hostname: 'typetype' } });
		expect(after.edit).toMatchObject({
			by: alice.id,
			byName: 'alice',
			original: { hash: e.hash, commandPreview: e.commandPreview, params: { memory: 2048 } },
			changes: [{ field: 'memory', from: 2048, to: 4096 }]
		});
		// The approval names exactly the edited command.
		expect(await approvals(e.id)).toEqual([{ hash: check.hash, decision: 'approved', route: 'button', decidedBy: alice.id }]);
		const trail = await audits(e.id);
		expect(trail.map((a) => a.action)).toEqual(['execution.edited', 'execution.approved']);
		expect(trail[0]).toMatchObject({
			actorName: 'alice',
			route: 'button',
			detail: {
				original: { hash: e.hash, command: e.commandPreview, params: { memory: 2048 } },
				edited: { hash: check.hash, command: check.commandPreview, params: { memory: 4096 } },
				changes: [{ field: 'memory', from: 2048, to: 4096 }]
			}
		});
		expect(trail[1].detail).toMatchObject({ hash: check.hash, command: check.commandPreview });

		// The agent is told at once, in the session…
		const notes = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system').flatMap((m) => view(m.parts));
		expect(notes).toContainEqual(expect.objectContaining({ type: 'note', kind: 'edit', text: expect.stringContaining('memory 2048 → 4096') }));

		// …the double runs the edited command…
		const before = (await pve.argvLog()).length;
		await runExecution(e.id);
		expect((await load(e.id)).status).toBe('succeeded');
		const ran = (await pve.argvLog()).slice(before).find((a) => a[0] === 'pct' && a[1] === 'create')!;
		expect(ran.slice(ran.indexOf('--memory'), ran.indexOf('--memory') + 2)).toEqual(['--memory', '4096']);
		expect((await pve.containers()).find((c) => String(c.vmid) === vmid)).toMatchObject({ hostname: 'typetype', memory: 4096 });

		// …and the continuation's result names the change so it does not re-request 2048.
		llm.push({ text: 'CT created with 4096 MiB as you set.' });
		expect(await continueSession(sessionId)).toBe('turn');
		const sent = JSON.stringify(llm.requests.at(-1)!.body);
		expect(sent).toContain('The operator changed memory 2048 → 4096 before approving, so it ran with those values');
	});

	it('edits a string list (pct_exec argv) and an enum (systemctl op) inside a container', async () => {
		const exec = await pending({ target: 'lxc:strong/100', action: 'pct_exec', params: { argv: ['echo', 'hello'] }, reason: 'say hi' });
		expect(exec.params).toEqual({ argv: ['echo', 'hello'] });
		expect((await editAndApprove(exec, { argv: ['echo', 'hello; rm -rf /', 'there'] })).ok).toBe(true);
		const sys = await pending({ target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'cron', op: 'restart' }, reason: 'reload cron' });
		expect((await editAndApprove(sys, { unit: 'cron', op: 'stop' })).ok).toBe(true);
		const before = (await pve.argvLog()).length;
		await runExecution(exec.id);
		await runExecution(sys.id);
		const log = (await pve.argvLog()).slice(before);
		expect(log).toContainEqual(['pct', 'exec', '100', '--', 'echo', 'hello; rm -rf /', 'there']);
		expect(log).toContainEqual(['pct', 'exec', '100', '--', 'systemctl', 'stop', 'cron']);
		expect((await load(exec.id)).steps[0].stdoutTail).toContain('hello; rm -rf / there');
		expect((await load(sys.id)).edit!.changes).toEqual([{ field: 'op', from: 'restart', to: 'stop' }]);
	});

	it('refuses a crafted or stale approval and writes nothing', async () => {
		const e = await pending({ target: 'strong', action: 'pct_create', params: { ...typetype, hostname: 'crafted' }, reason: 'r' });
		const edited = { ...e.params, memory: 8192 };
		const ok = await checkEdit(e, edited);
		if (!ok.ok) throw new Error('unexpected');
		// Params other than the ones the screen's hash names (here: the original command's hash).
		expect(
			await approveEdited({ executionId: e.id, baseHash: e.hash, params: edited, hash: e.hash, route: 'ops', operator: alice, credential: freshSession() })
		).toEqual({ ok: false, reason: 'stale' });
		// A hash for other params than those sent.
		const other = await checkEdit(e, { ...e.params, memory: 1024 });
		if (!other.ok) throw new Error('unexpected');
		expect(
			await approveEdited({ executionId: e.id, baseHash: e.hash, params: edited, hash: other.hash, route: 'ops', operator: alice, credential: freshSession() })
		).toEqual({ ok: false, reason: 'stale' });
		// An edit of a request the screen no longer shows (another base hash).
		expect(
			await approveEdited({
				executionId: e.id,
				baseHash: 'f'.repeat(64),
				params: edited,
				hash: ok.hash,
				route: 'ops',
				operator: alice,
				credential: freshSession()
			})
		).toEqual({ ok: false, reason: 'stale' });

		const row = await load(e.id);
		expect(row).toMatchObject({ status: 'awaiting_approval', hash: e.hash, commandPreview: e.commandPreview, params: e.params, edit: null });
		expect(await approvals(e.id)).toEqual([]);
		expect(await audits(e.id)).toEqual([]);
	});

	it('gives an error per field for invalid edits and a locked target, and writes nothing', async () => {
		const e = await pending({ target: 'strong', action: 'pct_create', params: { ...typetype, hostname: 'invalid' }, reason: 'r' });
		const bad = { ...e.params, memory: 8, hostname: 'Bad_Name', bridge: 'eth0', cores: 'two', surprise: 1 };
		const c = await checkEdit(e, bad);
		expect(c).toMatchObject({
			ok: false,
			fieldErrors: {
				memory: 'at least 16',
				hostname: expect.stringContaining('lowercase letters'),
				bridge: 'a bridge such as vmbr0',
				cores: 'must be a number',
				surprise: 'not a field of this action'
			}
		});
		const r = await approveEdited({
			executionId: e.id,
			baseHash: e.hash,
			params: bad,
			hash: e.hash,
			route: 'button',
			operator: alice,
			credential: freshSession()
		});
		expect(r).toMatchObject({ ok: false, reason: 'invalid', fieldErrors: { memory: expect.any(String), hostname: expect.any(String) } });
		// The browser's check (the same zod schema, for the action the form names) says exactly what the server said.
		expect(paramErrors(editForm(e)!.action, bad)).toEqual(c.ok ? null : c.fieldErrors);

		// The target is not editable: another vmid (even 'auto') is refused, not treated as a new target.
		for (const vmid of ['999', 'auto']) {
			const moved = await checkEdit(e, { ...e.params, vmid });
			expect(moved).toMatchObject({ ok: false, fieldErrors: { vmid: expect.stringContaining('cannot be changed') } });
		}
		const ct = await pending({ target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'cron', op: 'restart' }, reason: 'r' });
		expect(await checkEdit(ct, { unit: 'cron', op: 'restart', vmid: '101' })).toMatchObject({ ok: false, fieldErrors: { vmid: expect.any(String) } });

		expect(await load(e.id)).toMatchObject({ status: 'awaiting_approval', hash: e.hash, edit: null });
		expect(await approvals(e.id)).toEqual([]);
		expect(await audits(e.id)).toEqual([]);
	});

	it('two operators editing at once: the first decision wins, the second is told', async () => {
		const e = await pending({ target: 'strong', action: 'pct_create', params: { ...typetype, hostname: 'race' }, reason: 'r' });
		const results = await Promise.all([
			editAndApprove(e, { ...e.params, memory: 4096 }, alice),
			editAndApprove(e, { ...e.params, memory: 1024 }, bob),
			editAndApprove(e, { ...e.params, memory: 1024 }, bob)
		]);
		expect(results.filter((r) => r.ok)).toHaveLength(1);
		for (const r of results.filter((x) => !x.ok)) expect(['already_decided', 'stale']).toContain((r as { reason: string }).reason);
		expect(await approvals(e.id)).toHaveLength(1);
		const row = await load(e.id);
		expect((await approvals(e.id))[0].hash).toBe(row.hash);
		expect((await audits(e.id)).map((a) => a.action)).toEqual(['execution.edited', 'execution.approved']);
		// A plain Approve from a screen that still shows the original comes too late as well.
		expect(await decide(e.id, bob.id, 'approved')).toMatchObject({ ok: false, reason: 'already_decided' });
		// And an edit after a plain approval.
		const f = await pending({ target: 'strong', action: 'pct_create', params: { ...typetype, hostname: 'plain' }, reason: 'r' });
		expect((await decide(f.id, alice.id, 'approved')).ok).toBe(true);
		expect(await editAndApprove(f, { ...f.params, memory: 4096 }, bob)).toEqual({ ok: false, reason: 'already_decided' });
	});

	it('approving unchanged params is a plain approval', async () => {
		const e = await pending({ target: 'lxc:strong/100', action: 'systemctl', params: { unit: 'ssh', op: 'restart' }, reason: 'r' });
		expect((await editAndApprove(e, { ...e.params })).ok).toBe(true);
		expect(await load(e.id)).toMatchObject({ status: 'approved', hash: e.hash, edit: null });
		expect((await audits(e.id)).map((a) => a.action)).toEqual(['execution.approved']);
	});
});
