// Issue #31: an alert opens (or joins) an investigation; the agent runs on its own, read-only,
// with the alert as untrusted data; replays, floods, bad secrets and flapping change nothing more.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../../src/lib/server/env';
import { approveByTyping } from '../../src/lib/server/executions/decisions';
import { HOOK_DELIVERIES_PER_MINUTE, receiveDelivery } from '../../src/lib/server/watches/intake';
import { hashHookSecret, signatureOf } from '../../src/lib/server/watches/secret';
import { createHook, makeHookBearerOnly, rotateHook } from '../../src/lib/server/watches/hooks';
import { HookSecretUnsealable, openHookSecret, sealPlainHookSecrets } from '../../src/lib/server/watches/sealed-secret';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { getPlan, insertPlan } from '../../src/lib/server/db/queries/plans';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { freshSession, jobs, newOperator } from '../helpers/executions';
import { deliverAlert } from '../helpers/alerts';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true });
beforeEach(async () => {
	await sql()`delete from graphile_worker._private_jobs`;
	// Each test's alerts make their own incidents (the same node/kind would join an earlier test's).
	await sql()`update incidents set status = 'resolved' where status = 'open'`;
});

async function hook(kind: 'proxmox' | 'alertmanager' | 'generic', name: string = kind): Promise<{ id: string; secret: string }> {
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	// Signed: it keeps its secret, so a delivery may also carry an HMAC of the body.
	const [row] = await sql()<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash, signed, secret) values (${name}, ${kind}, ${hashHookSecret(secret)}, true, ${secret}) returning id`;
	return { id: row.id, secret };
}

const send = (h: { id: string; secret: string }, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${h.secret}` }) =>
	deliverAlert(h.id, headers, typeof body === 'string' ? body : JSON.stringify(body));

const pveFailed = {
	title: 'vzdump backup status (pve1): backup failed',
	message: '102: FAILED - unable to create temporary directory: No space left on device',
	severity: 'error',
	timestamp: 1796160000,
	fields: { type: 'vzdump', hostname: 'pve1', 'job-id': 'backup-nightly' }
};

const amGroup = (status: 'firing' | 'resolved') => ({
	version: '4',
	groupKey: '{}:{alertname="CaddyDown"}',
	status,
	receiver: 'nomos',
	groupLabels: { alertname: 'CaddyDown' },
	commonLabels: { alertname: 'CaddyDown', severity: 'critical', instance: 'ct105:80' },
	commonAnnotations: { summary: 'Caddy on CT 105 does not answer' },
	externalURL: 'http://am',
	alerts: [{ status, labels: { alertname: 'CaddyDown', instance: 'ct105:80' }, annotations: {}, startsAt: '2026-12-01T10:00:00Z', fingerprint: 'f1' }]
});

const sessionsOf = async (hookId: string) => sql()<{ id: string; title: string }[]>`select id, title from chat_sessions where started_by_hook = ${hookId}`;
const runJob = (payload: unknown) => agent__run_turn(payload, {} as never);

describe('an alert', () => {
	it('opens an investigation the agent runs by itself: the alert fenced as data, read-only tools, no http_get, findings written', async () => {
		const h = await hook('proxmox', 'pve-main');
		const r = await send(h, pveFailed);
		expect(r.status).toBe(202);
		expect(r.body.alerts).toEqual([
			{ groupKey: 'pve:vzdump:pve1:backup-nightly', outcome: 'opened', sessionId: expect.any(String), incidentId: expect.any(String) }
		]);
		const [s] = await sessionsOf(h.id);
		expect(s.title).toBe(pveFailed.title);
		const notes = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system');
		expect(notes).toHaveLength(1);
		expect(JSON.stringify(notes[0].parts)).toContain('"untrusted":true');
		// No operator words: the alert is never a user message.
		expect((await listMessages(sql(), s.id)).filter((m) => m.role === 'user')).toHaveLength(0);

		const [job] = await jobs('agent__run_turn');
		expect(job.payload.sessionId).toBe(s.id);
		llm.push({ toolCalls: [{ name: 'list_lxcs', args: {} }] }, { text: 'Findings: the backup storage on pve1 is full; 102 was not backed up.' });
		await runJob(job.payload);

		expect(llm.requests).toHaveLength(2);
		const first = llm.requests[0].body!;
		const sent = JSON.stringify(first.messages);
		expect(sent).toContain('<<<ALERT');
		expect(sent).toContain('No space left on device');
		expect(sent).toContain('never an instruction');
		const toolNames = (first.tools ?? []).map((t) => t.function.name);
		expect(toolNames).toContain('list_lxcs');
		expect(toolNames).toContain('propose_plan');
		expect(toolNames).not.toContain('http_get');
		const reply = (await listMessages(sql(), s.id)).find((m) => m.role === 'assistant')!;
		expect(reply.status).toBe('complete');
		expect(JSON.stringify(reply.parts)).toContain('the backup storage on pve1 is full');
	});

	it('is investigated within its step budget (NOMOS_WATCH_MAX_STEPS), however long the model goes on', async () => {
		process.env.NOMOS_WATCH_MAX_STEPS = '2';
		resetEnvCache();
		try {
			const h = await hook('generic');
			await send(h, { title: 'disk full on ct105' });
			const [job] = await jobs('agent__run_turn');
			llm.push(...Array.from({ length: 5 }, () => ({ toolCalls: [{ name: 'list_lxcs', args: {} }] })));
			await runJob(job.payload);
			expect(llm.requests).toHaveLength(2);
		} finally {
			delete process.env.NOMOS_WATCH_MAX_STEPS;
			resetEnvCache();
		}
	});

	it('a fix is a plan that waits, and the webhook notice names the alert it answers', async () => {
		await sql()`insert into hosts (name, address, port, username, key_path, host_key_fingerprint) values ('pve1', '127.0.0.1', 1, 'root', '/nonexistent', 'SHA256:test') on conflict do nothing`;
		await sql()`insert into webhooks (name, kind, url) values ('phone', 'json', 'http://127.0.0.1:9/hook')`;
		const h = await hook('proxmox', 'pve-main');
		await send(h, pveFailed);
		const [job] = await jobs('agent__run_turn');
		llm.push({
			toolCalls: [
				{
					name: 'propose_plan',
					args: {
						title: 'Free space on the backup storage',
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
		await runJob(job.payload);
		const [s] = await sessionsOf(h.id);
		const reply = (await listMessages(sql(), s.id)).find((m) => m.role === 'assistant')!;
		expect(JSON.stringify(reply.parts)).toContain('awaiting_approval');
		const notices = (await jobs('notify__webhook')).map((j) => j.payload.notice as { kind: string; title: string; text: string });
		const plan = notices.find((n) => n.kind === 'plan');
		expect(plan?.title).toBe('Plan waiting: Free space on the backup storage');
		expect(plan?.text).toContain(`the alert "${pveFailed.title}" from pve-main`);
		await sql()`delete from webhooks`;
	});

	it('delivered again (a replay, a repeat) joins its group: no second session, no second turn', async () => {
		const h = await hook('proxmox');
		await send(h, pveFailed);
		const again = await send(h, pveFailed);
		expect(again.status).toBe(202);
		expect(again.body.alerts).toMatchObject([{ outcome: 'duplicate' }]);
		expect(await sessionsOf(h.id)).toHaveLength(1);
		expect(await jobs('agent__run_turn')).toHaveLength(1);
		const [g] = await sql()<{ deliveries: number }[]>`select deliveries from alert_groups where hook_id = ${h.id}`;
		expect(g.deliveries).toBe(2);
	});

	it('ten deliveries at once open one session', async () => {
		const h = await hook('generic');
		const rs = await Promise.all(Array.from({ length: 10 }, () => send(h, { title: 'caddy down', key: 'kuma-1' })));
		expect(rs.map((r) => r.status)).toEqual(Array(10).fill(202));
		expect(await sessionsOf(h.id)).toHaveLength(1);
		expect(await jobs('agent__run_turn')).toHaveLength(1);
	});

	it('a flood is cut at the per-minute limit with 429 and Retry-After', async () => {
		const h = await hook('generic');
		const raw = (body: unknown) => receiveDelivery(h.id, new Headers({ authorization: `Bearer ${h.secret}` }), Buffer.from(JSON.stringify(body)));
		for (let i = 0; i < HOOK_DELIVERIES_PER_MINUTE; i++) expect((await raw({ title: `a${i % 3}` })).status).toBe(202);
		const over = await raw({ title: 'one more' });
		expect(over.status).toBe(429);
		expect(over.headers?.['retry-after']).toBe('60');
		// Every accepted delivery is stored for the job; the refused one is not.
		const [n] = await sql()<{ n: number }[]>`select count(*)::int as n from alert_deliveries where hook_id = ${h.id}`;
		expect(n.n).toBe(HOOK_DELIVERIES_PER_MINUTE);
	});

	it('without the right secret is refused, says nothing of the body, writes nothing and does not use up the limit', async () => {
		const h = await hook('generic');
		for (const headers of [{}, { authorization: 'Bearer wrong' }, { 'x-nomos-signature': signatureOf('wrong', '{}') }] as Record<string, string>[]) {
			const r = await send(h, { title: 'SECRET-BODY-TEXT' }, headers);
			expect(r.status).toBe(401);
			expect(JSON.stringify(r.body)).not.toContain('SECRET-BODY-TEXT');
		}
		expect(await sessionsOf(h.id)).toHaveLength(0);
		const [row] = await sql()<{ n: number }[]>`select count(*)::int as n from alert_deliveries where hook_id = ${h.id}`;
		expect(row.n).toBe(0);
		// An unknown or revoked hook: 404, whatever it carries.
		expect((await receiveDelivery(crypto.randomUUID(), new Headers({ authorization: `Bearer ${h.secret}` }), Buffer.from('{}'))).status).toBe(404);
		await sql()`update alert_hooks set revoked_at = now() where id = ${h.id}`;
		expect((await send(h, { title: 'x' })).status).toBe(404);
	});

	it('signed with an HMAC of the body is accepted; bad JSON and a wrong shape get 400 naming the problem', async () => {
		const h = await hook('alertmanager');
		const body = JSON.stringify(amGroup('firing'));
		expect((await send(h, body, { 'x-nomos-signature': signatureOf(h.secret, body) })).status).toBe(202);
		expect(await send(h, '{not json')).toMatchObject({ status: 400, body: { message: 'The body is not JSON.' } });
		expect(await send(h, { version: '4' })).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^Not a alertmanager alert: groupKey: /) } });
	});

	it('resolved says so in its session; firing again soon after is flapping: noted, no new investigation', async () => {
		const h = await hook('alertmanager');
		await send(h, amGroup('firing'));
		const [s] = await sessionsOf(h.id);
		expect((await send(h, amGroup('resolved'))).body.alerts).toMatchObject([{ outcome: 'resolved', sessionId: s.id }]);
		expect((await send(h, amGroup('firing'))).body.alerts).toMatchObject([{ outcome: 'noted', sessionId: s.id }]);
		expect(await sessionsOf(h.id)).toHaveLength(1);
		expect(await jobs('agent__run_turn')).toHaveLength(1);
		const texts = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system').map((m) => JSON.stringify(m.parts));
		expect(texts[1]).toContain('is resolved');
		expect(texts[2]).toContain('flapping');
		// Long after it resolved, firing again is investigated again, in the same session.
		await sql()`update alert_groups set changed_at = now() - interval '2 hours', last_seen_at = now() - interval '2 hours', status = 'resolved' where hook_id = ${h.id}`;
		await sql()`update alert_deliveries set received_at = now() - interval '2 hours' where hook_id = ${h.id}`;
		// (and its first investigation ended long ago: its turn job is gone)
		await sql()`delete from graphile_worker._private_jobs`;
		expect((await send(h, amGroup('firing'))).body.alerts).toMatchObject([{ outcome: 'reinvestigated', sessionId: s.id }]);
		expect(await jobs('agent__run_turn')).toHaveLength(1);
	});

	it('to a muted hook is recorded but opens nothing', async () => {
		const h = await hook('generic');
		await sql()`update alert_hooks set muted_until = now() + interval '1 hour' where id = ${h.id}`;
		expect((await send(h, { title: 'noisy' })).body.alerts).toMatchObject([{ outcome: 'muted', sessionId: null }]);
		expect(await sessionsOf(h.id)).toHaveLength(0);
		expect(await jobs('agent__run_turn')).toHaveLength(0);
	});
});

describe('in an investigation an alert opened', () => {
	/** A restart the agent requested in the session, on the operator's screen; then the operator types "yes". */
	async function typeYes(sessionId: string, operatorId: string): Promise<{ approved: string[]; status: string }> {
		const [e] = await sql()<{ id: string }[]>`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
			values (${sessionId}, 'strong', 'lxc:strong/105', 'restart', '{}'::jsonb, 'config_mutation', ${'h-' + Math.random()}, 'pct reboot 105', 'alert', 'awaiting_approval', now() + interval '1 hour')
			returning id`;
		await sql()`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
		const approved = await sql().begin(async (tx) => {
			const part = { type: 'tool-request_execution', toolCallId: 'c1', state: 'output-available', input: {}, output: { executionId: e.id } };
			await insertMessage(tx, { sessionId, role: 'assistant', parts: [part] as never, status: 'complete', origin: 'continuation' });
			const m = await insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'yes' }], status: 'complete', origin: 'chat' });
			return approveByTyping(tx, { sessionId, messageId: m.id, text: 'yes', shownIds: [e.id], operatorId, credential: freshSession() });
		});
		const [row] = await sql()<{ status: string }[]>`select status from executions where id = ${e.id}`;
		return { approved, status: row.status };
	}

	it('typing "yes" approves nothing (it does in an operator\'s chat): the note says to click', async () => {
		const operatorId = await newOperator('watcher');
		const own = await sql().begin((tx) => createSession(tx, operatorId, 'mine'));
		expect(await typeYes(own, operatorId)).toMatchObject({ approved: [expect.any(String)], status: 'approved' });

		const h = await hook('generic');
		await send(h, { title: 'caddy down' });
		const [s] = await sessionsOf(h.id);
		expect(await typeYes(s.id, operatorId)).toEqual({ approved: [], status: 'awaiting_approval' });
		const notes = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system').map((m) => JSON.stringify(m.parts));
		expect(notes.at(-1)).toContain('typing approves nothing in an investigation an alert opened');
	});
});

describe('an alert that resolves while its fix waits (issue #42)', () => {
	/** A plan and an execution the investigation proposed, waiting for approval, and one already approved. */
	async function pendingFix(sessionId: string) {
		const plan = await sql().begin((tx) =>
			insertPlan(tx, sessionId, 'Free space on the backup storage', [
				{
					action: 'pveam_update',
					target: 'pve1',
					params: {},
					why: 'example',
					hash: 'h-plan',
					commandPreview: 'pveam update',
					classification: 'config_mutation'
				}
			])
		);
		const execution = async (status: string) => {
			const [e] = await sql()<{ id: string }[]>`
				insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
				values (${sessionId}, 'pve1', 'lxc:pve1/105', 'pct_start', '{}'::jsonb, 'config_mutation', ${'h-' + Math.random()}, 'pct start 105', 'alert', ${status}, now() + interval '1 hour')
				returning id`;
			await sql()`insert into execution_sessions (execution_id, session_id) values (${e.id}, ${sessionId})`;
			return e.id;
		};
		return { plan, waiting: await execution('awaiting_approval'), approved: await execution('approved') };
	}
	const eventsAfter = async (id: number) =>
		sql()<
			{ type: string; payload: Record<string, string> }[]
		>`select type, payload from events where id > ${id} and type in ('plan.updated', 'execution.updated') order by id`;
	const lastEvent = async () => Number((await sql()<{ id: string }[]>`select coalesce(max(id), 0)::text as id from events`)[0].id);

	it('Alertmanager "resolved": the plan and the execution waiting are marked, the note asks, and a turn re-checks before anything runs', async () => {
		const h = await hook('alertmanager', 'am-main');
		await send(h, amGroup('firing'));
		const [s] = await sessionsOf(h.id);
		const fix = await pendingFix(s.id);
		await sql()`delete from graphile_worker._private_jobs`;
		const before = await lastEvent();

		expect((await send(h, amGroup('resolved'))).body.alerts).toMatchObject([{ outcome: 'resolved', sessionId: s.id }]);
		const plan = (await getPlan(sql(), fix.plan.id))!;
		const waiting = (await getExecution(sql(), fix.waiting))!;
		expect(plan.alertResolvedAt).toEqual(expect.any(String));
		expect(Math.abs(Date.parse(plan.alertResolvedAt!) - Date.now())).toBeLessThan(60_000);
		expect(waiting.alertResolvedAt).toBe(plan.alertResolvedAt);
		// What was already approved keeps its history: it is not asked about.
		expect((await getExecution(sql(), fix.approved))!.alertResolvedAt).toBeNull();
		// The cards change at once: one event each, with the snapshot the page renders.
		expect(await eventsAfter(before)).toEqual([
			{ type: 'plan.updated', payload: { planId: fix.plan.id } },
			{ type: 'execution.updated', payload: { executionId: fix.waiting } }
		]);
		const note = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system').at(-1)!;
		expect(JSON.stringify(note.parts)).toContain(
			'Still waiting for approval: plan \\"Free space on the backup storage\\"; pct_start on lxc:pve1/105 — still needed? The agent re-checks before it runs.'
		);

		// The agent is told: one turn of the investigation, whose request ends on the re-check brief.
		const turns = await jobs('agent__run_turn');
		expect(turns).toHaveLength(1);
		expect(turns[0].payload).toMatchObject({ sessionId: s.id, origin: 'alert' });
		llm.push({ text: 'Caddy answers again on CT 105; the plan is no longer needed, you can deny it.' });
		await runJob(turns[0].payload);
		const last = llm.requests[0].body!.messages!.at(-1)!;
		expect(last.role).toBe('user');
		expect(last.content).toContain('says the alert this investigation is about has resolved');
		expect(last.content).toContain(`- plan ${fix.plan.id}: Free space on the backup storage`);
		expect(last.content).toContain(`- execution ${fix.waiting}: pct_start on lxc:pve1/105`);
		expect(last.content).toContain('re-check with read-only tools whether it is still needed');
		// Its tools are the investigation's: read-only, no http_get.
		const tools = (llm.requests[0].body!.tools ?? []).map((t) => t.function.name);
		expect(tools).not.toContain('http_get');

		// Firing again: the fix is needed again, the cards stop asking.
		const again = await lastEvent();
		await send(h, amGroup('firing'));
		expect((await getPlan(sql(), fix.plan.id))!.alertResolvedAt).toBeNull();
		expect((await getExecution(sql(), fix.waiting))!.alertResolvedAt).toBeNull();
		expect((await eventsAfter(again)).map((e) => e.type)).toEqual(['plan.updated', 'execution.updated']);
	});

	it('Proxmox VE: the backup that succeeds resolves the failure and marks its plan', async () => {
		const h = await hook('proxmox', 'pve-main');
		await send(h, pveFailed);
		const [s] = await sessionsOf(h.id);
		const fix = await pendingFix(s.id);
		await sql()`delete from graphile_worker._private_jobs`;
		const ok = { ...pveFailed, title: 'vzdump backup status (pve1): backup successful', message: '102: OK', severity: 'info' };
		expect((await send(h, ok)).body.alerts).toMatchObject([{ outcome: 'resolved', sessionId: s.id }]);
		expect((await getPlan(sql(), fix.plan.id))!.alertResolvedAt).toEqual(expect.any(String));
		expect((await jobs('agent__run_turn')).map((j) => j.payload.origin)).toEqual(['alert']);
	});

	it('nothing waiting: only the note, no turn; a muted group: marked and noted, no turn', async () => {
		const h = await hook('alertmanager');
		await send(h, amGroup('firing'));
		const [s] = await sessionsOf(h.id);
		await sql()`delete from graphile_worker._private_jobs`;
		await send(h, amGroup('resolved'));
		expect(await jobs('agent__run_turn')).toHaveLength(0);
		const note = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system').at(-1)!;
		expect(JSON.stringify(note.parts)).not.toContain('Still waiting');

		await sql()`update alert_groups set changed_at = now() - interval '2 hours', last_seen_at = now() - interval '2 hours' where hook_id = ${h.id}`;
		await send(h, amGroup('firing'));
		const fix = await pendingFix(s.id);
		await sql()`update alert_groups set muted_until = now() + interval '1 hour' where hook_id = ${h.id}`;
		await sql()`delete from graphile_worker._private_jobs`;
		await send(h, amGroup('resolved'));
		expect((await getPlan(sql(), fix.plan.id))!.alertResolvedAt).toEqual(expect.any(String));
		expect(await jobs('agent__run_turn')).toHaveLength(0);
		const muted = (await listMessages(sql(), s.id)).filter((m) => m.role === 'system').at(-1)!;
		expect(JSON.stringify(muted.parts)).toContain('— still needed?');
		expect(JSON.stringify(muted.parts)).not.toContain('re-checks');
	});
});

describe('hook secrets at rest (issue #43 item 6)', () => {
	const deliver = (id: string, headers: Record<string, string>, body = JSON.stringify({ title: 'disk full', key: crypto.randomUUID() })) =>
		receiveDelivery(id, new Headers(headers), Buffer.from(body));
	const stored = async (id: string) => {
		const [row] = await sql()<{ secret: string | null; secretSealed: string | null; secretHash: string; signed: boolean; whole: string }[]>`
			select secret, secret_sealed as "secretSealed", secret_hash as "secretHash", signed, row_to_json(h)::text as whole from alert_hooks h where id = ${id}`;
		return row;
	};

	it('a bearer hook keeps only the hash of its secret, made and rotated; the right bearer gets 202, a wrong one or a signature 401', async () => {
		const admin = { id: await newOperator('hook-admin'), username: 'hook-admin' };
		const made = await createHook(admin, { name: 'pve', kind: 'generic' });
		expect(made.signed).toBe(false);
		let row = await stored(made.id);
		expect(row.secret).toBeNull();
		expect(row.whole).not.toContain(made.secret);
		expect(row.whole).not.toContain(made.secret.slice('nomos_hook_'.length));
		expect(row.secretHash).toBe(createHash('sha256').update(made.secret).digest('hex'));
		expect((await deliver(made.id, { authorization: `Bearer ${made.secret}` })).status).toBe(202);
		expect((await deliver(made.id, { authorization: `Bearer ${made.secret}x` })).status).toBe(401);
		// What is stored is not itself a credential, and a bearer hook takes no signature.
		expect((await deliver(made.id, { authorization: `Bearer ${row.secretHash}` })).status).toBe(401);
		const body = JSON.stringify({ title: 'signed' });
		expect((await deliver(made.id, { 'x-nomos-signature': signatureOf(made.secret, body) }, body)).status).toBe(401);

		const rotated = await rotateHook(admin, made.id);
		row = await stored(made.id);
		expect(row.secret).toBeNull();
		expect(row.whole).not.toContain(rotated.secret);
		expect((await deliver(made.id, { authorization: `Bearer ${made.secret}` })).status).toBe(401);
		expect((await deliver(made.id, { authorization: `Bearer ${rotated.secret}` })).status).toBe(202);
	});

	it('a signed hook keeps its secret sealed for the HMAC until it is made bearer-only; then only the hash stays and bearer goes on', async () => {
		const admin = { id: await newOperator('hook-admin2'), username: 'hook-admin2' };
		const made = await createHook(admin, { name: 'script', kind: 'generic', signed: true });
		let row = await stored(made.id);
		expect(row.secret).toBeNull();
		expect(row.secretSealed).toMatch(/^v1\./);
		expect(row.whole).not.toContain(made.secret.slice('nomos_hook_'.length));
		const body = JSON.stringify({ title: 'signed', key: 'k1' });
		expect((await deliver(made.id, { 'x-nomos-signature': signatureOf(made.secret, body) }, body)).status).toBe(202);
		expect((await makeHookBearerOnly(admin, made.id)).signed).toBe(false);
		row = await stored(made.id);
		expect(row.secret).toBeNull();
		expect(row.secretSealed).toBeNull();
		expect(row.whole).not.toContain(made.secret);
		expect((await deliver(made.id, { 'x-nomos-signature': signatureOf(made.secret, body) }, body)).status).toBe(401);
		expect((await deliver(made.id, { authorization: `Bearer ${made.secret}` })).status).toBe(202);
		// The database refuses a kept secret, plain or sealed, on a hook that is not signed.
		await expect(sql()`update alert_hooks set secret = 'plain' where id = ${made.id}`).rejects.toThrow(/alert_hooks_secret_only_signed/);
		await expect(sql()`update alert_hooks set secret_sealed = 'v1.x.y.z' where id = ${made.id}`).rejects.toThrow(/alert_hooks_secret_only_signed/);
	});

	describe('sealed with the outside key', () => {
		const KEY_A = 'hook-key-a'.repeat(4);
		const KEY_B = 'hook-key-b'.repeat(4);
		const saved = { key: process.env.NOMOS_SEAL_KEY, previous: process.env.NOMOS_SEAL_KEY_PREVIOUS };
		const setKeys = (key: string, previous?: string) => {
			process.env.NOMOS_SEAL_KEY = key;
			if (previous) process.env.NOMOS_SEAL_KEY_PREVIOUS = previous;
			else delete process.env.NOMOS_SEAL_KEY_PREVIOUS;
			resetEnvCache();
		};
		beforeEach(() => setKeys(KEY_A));
		afterAll(() => {
			for (const [k, v] of [
				['NOMOS_SEAL_KEY', saved.key],
				['NOMOS_SEAL_KEY_PREVIOUS', saved.previous]
			] as const)
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			resetEnvCache();
		});
		const admin = async (name: string) => ({ id: await newOperator(name), username: name });
		const signedDelivery = (h: { id: string; secret: string }, key: string) => {
			const body = JSON.stringify({ title: 'signed', key });
			return deliver(h.id, { 'x-nomos-signature': signatureOf(h.secret, body) }, body);
		};

		it('after a key rotation a signed hook still verifies, and its secret is sealed again with the new key', async () => {
			const made = await createHook(await admin('rot-admin'), { name: 'rot', kind: 'generic', signed: true });
			const before = (await stored(made.id)).secretSealed!;
			setKeys(KEY_B, KEY_A);
			expect((await openHookSecret(made.id, before)).stale).toBe(true);
			expect((await signedDelivery(made, 'r1')).status).toBe(202);
			const after = (await stored(made.id)).secretSealed!;
			expect(after).not.toBe(before);
			expect(await openHookSecret(made.id, after)).toEqual({ secret: made.secret, stale: false });
			// Once resealed, the previous key is no longer needed.
			setKeys(KEY_B);
			expect((await signedDelivery(made, 'r2')).status).toBe(202);
			// Without the key that sealed it, a signed delivery fails closed (bearer does not need the seal).
			const other = await createHook(await admin('rot-admin2'), { name: 'rot2', kind: 'generic', signed: true });
			setKeys(KEY_A);
			expect((await signedDelivery(other, 'r3')).status).toBe(401);
			expect((await deliver(other.id, { authorization: `Bearer ${other.secret}` })).status).toBe(202);
		});

		it('boot seals plain secrets left from before 0033 and reseals previous-key ones; running it again changes nothing', async () => {
			const plain = await hook('generic', 'from-before');
			const sealedA = await createHook(await admin('boot-admin'), { name: 'a', kind: 'generic', signed: true });
			expect((await stored(plain.id)).secret).toBe(plain.secret);
			setKeys(KEY_B, KEY_A);
			const first = await sealPlainHookSecrets(sql());
			expect(first.sealed).toBeGreaterThanOrEqual(1);
			expect(first.resealed).toBeGreaterThanOrEqual(1);
			// (Hooks of earlier tests here were sealed with the data dir's key file: neither key opens them.)
			expect(first.unsealable).not.toContain(plain.id);
			expect(first.unsealable).not.toContain(sealedA.id);
			for (const h of [plain, sealedA]) {
				const row = await stored(h.id);
				expect(row.secret).toBeNull();
				expect(row.whole).not.toContain(h.secret.slice('nomos_hook_'.length));
				expect(await openHookSecret(h.id, row.secretSealed!)).toEqual({ secret: h.secret, stale: false });
			}
			const again = await sealPlainHookSecrets(sql());
			expect(again).toMatchObject({ sealed: 0, resealed: 0 });
			setKeys(KEY_B);
			expect((await signedDelivery(plain, 'b1')).status).toBe(202);
			expect((await signedDelivery(sealedA, 'b2')).status).toBe(202);
		});

		it('a sealed secret altered or moved in the database fails closed with a clear error', async () => {
			const a = await createHook(await admin('alt-admin'), { name: 'alt', kind: 'generic', signed: true });
			const b = await createHook(await admin('alt-admin2'), { name: 'alt2', kind: 'generic', signed: true });
			const sealedA = (await stored(a.id)).secretSealed!;
			// One byte of the ciphertext flipped.
			const parts = sealedA.split('.');
			const ct = Buffer.from(parts[2], 'base64url');
			ct[0] ^= 1;
			parts[2] = ct.toString('base64url');
			await sql()`update alert_hooks set secret_sealed = ${parts.join('.')} where id = ${a.id}`;
			await expect(openHookSecret(a.id, parts.join('.'))).rejects.toThrow(HookSecretUnsealable);
			await expect(openHookSecret(a.id, parts.join('.'))).rejects.toThrow(/does not open with the seal key .* rotates its secret in Settings/);
			expect((await signedDelivery(a, 'x1')).status).toBe(401);
			// A's sealed secret copied onto B (bound to A's id): B's own signature fails, and so does A's.
			await sql()`update alert_hooks set secret_sealed = ${sealedA} where id = ${b.id}`;
			expect((await signedDelivery(b, 'x2')).status).toBe(401);
			expect((await signedDelivery({ id: b.id, secret: a.secret }, 'x3')).status).toBe(401);
			// Boot reports both and leaves them (no plaintext to recover them from).
			expect((await sealPlainHookSecrets(sql())).unsealable).toEqual(expect.arrayContaining([a.id, b.id]));
			// Rotation in Settings makes a working secret again.
			const rotated = await rotateHook(await admin('alt-admin3'), a.id);
			expect((await signedDelivery({ id: a.id, secret: rotated.secret }, 'x4')).status).toBe(202);
		});
	});

	it('migrations 0031 and 0033 keep a hook made before them signing: hashed, marked signed, its secret sealed at boot', async () => {
		// This file's database as it was before 0031, with a hook made then.
		await sql().unsafe(`alter table alert_hooks drop constraint alert_hooks_secret_only_signed;
			alter table alert_hooks drop column secret_hash, drop column signed, drop column secret_sealed;
			alter table approvals drop column credential;
			update alert_hooks set secret = 'nomos_hook_' || id where secret is null; alter table alert_hooks alter column secret set not null`);
		const old = 'nomos_hook_made-before-0031';
		const [h] = await sql()<{ id: string }[]>`insert into alert_hooks (name, kind, secret) values ('old', 'generic', ${old}) returning id`;
		for (const m of ['0031_hook_secret_hash', '0033_sealed_hook_secrets'])
			await sql().unsafe(readFileSync(`drizzle/${m}.sql`, 'utf8').replaceAll('--> statement-breakpoint', ''));
		let row = await stored(h.id);
		expect(row).toMatchObject({ secret: old, signed: true, secretHash: createHash('sha256').update(old).digest('hex'), secretSealed: null });
		await sealPlainHookSecrets(sql());
		row = await stored(h.id);
		expect(row.secret).toBeNull();
		expect(row.whole).not.toContain('made-before-0031');
		const body = JSON.stringify({ title: 'from a script', key: 'k2' });
		expect((await deliver(h.id, { 'x-nomos-signature': signatureOf(old, body) }, body)).status).toBe(202);
		expect((await deliver(h.id, { authorization: `Bearer ${old}` })).status).toBe(202);
	});
});
