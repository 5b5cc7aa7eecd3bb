// Issue #48 items 1, 2 and 5: the intake stores the delivery and answers 202 before anything else;
// the alerts__intake job groups alerts into incidents (node/guest/kind within a window, one
// Alertmanager group), bounds a storm at NOMOS_MAX_INVESTIGATIONS investigations, drops nothing,
// recognises a sender's retry, and titles the session after the node with the decisive line first.
import { beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { resetEnvCache } from '../../src/lib/server/env';
import { receiveDelivery } from '../../src/lib/server/watches/intake';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { alerts__intake } from '../../tasks/alerts__intake';
import { deliverAlert } from '../helpers/alerts';
import { jobs } from '../helpers/executions';
import { useStage } from '../helpers/stage';

useStage({ model: true });
beforeEach(async () => {
	await sql()`delete from graphile_worker._private_jobs`;
	await sql()`update incidents set status = 'resolved' where status = 'open'`;
});

type Hook = { id: string; secret: string };
async function hook(kind: 'proxmox' | 'alertmanager' | 'generic', name: string = kind): Promise<Hook> {
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [row] = await sql()<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash) values (${name}, ${kind}, ${hashHookSecret(secret)}) returning id`;
	return { id: row.id, secret };
}
const bearer = (h: Hook) => ({ authorization: `Bearer ${h.secret}` });
const post = (h: Hook, body: unknown) => deliverAlert(h.id, bearer(h), body as object);

const vzdump = (node: string, job: string, message = `102: ERROR: vzdump failed (${job})`) => ({
	title: `vzdump backup status (${node}): backup failed`,
	message,
	severity: 'error',
	fields: { type: 'vzdump', hostname: node, 'job-id': job }
});
const amGroup = (groupKey: string, labels: Record<string, string>, summary = 'Guest does not answer') => ({
	version: '4',
	groupKey,
	status: 'firing',
	receiver: 'nomos',
	groupLabels: { alertname: labels.alertname },
	commonLabels: { severity: 'critical', ...labels },
	commonAnnotations: { summary },
	externalURL: 'http://am',
	alerts: [{ status: 'firing', labels, annotations: {}, startsAt: '2026-12-06T10:00:00Z', fingerprint: 'f1' }]
});

const incidentsOf = (ids: string[]) =>
	sql()<{ id: string; key: string; status: string; alertCount: number; sessionId: string; title: string }[]>`
		select id, key, status, alert_count as "alertCount", session_id as "sessionId", title from incidents where id = any(${ids}::uuid[]) order by first_seen_at`;
const turnJobs = async () => (await jobs('agent__run_turn')).map((j) => j.payload.sessionId as string);

describe('the intake', () => {
	it('answers 202 once the body is stored, before any session or turn; the job then opens the session; a rerun of the job changes nothing', async () => {
		const h = await hook('proxmox');
		const r = await receiveDelivery(h.id, new Headers(bearer(h)), Buffer.from(JSON.stringify(vzdump('pve1', 'nightly'))));
		expect(r).toMatchObject({ status: 202, body: { accepted: 1, deliveryId: expect.any(String), duplicate: false } });
		const deliveryId = r.body.deliveryId as string;
		const [stored] = await sql()<
			{ body: string; processedAt: string | null }[]
		>`select body, processed_at as "processedAt" from alert_deliveries where id = ${deliveryId}`;
		expect(JSON.parse(stored.body)).toEqual(vzdump('pve1', 'nightly'));
		expect(stored.processedAt).toBeNull();
		// Answered with nothing done yet: no session, no turn; only the intake job.
		expect(await sql()`select 1 from chat_sessions where started_by_hook = ${h.id}`).toHaveLength(0);
		expect(await jobs('agent__run_turn')).toHaveLength(0);
		const [job] = await jobs('alerts__intake');
		expect(job.payload).toEqual({ deliveryId });

		await alerts__intake(job.payload, {} as never);
		const sessions = await sql()<{ id: string; title: string }[]>`select id, title from chat_sessions where started_by_hook = ${h.id}`;
		expect(sessions).toHaveLength(1);
		expect(await turnJobs()).toEqual([sessions[0].id]);
		const [row] = await sql()<
			{ outcome: { outcome: string; sessionId: string; incidentId: string }[] }[]
		>`select outcome from alert_deliveries where id = ${deliveryId}`;
		expect(row.outcome).toEqual([{ groupKey: 'pve:vzdump:pve1:nightly', outcome: 'opened', sessionId: sessions[0].id, incidentId: expect.any(String) }]);

		// A job that runs again (a retry after its process died at the end) finds it applied.
		await alerts__intake(job.payload, {} as never);
		expect(await sql()`select 1 from chat_sessions where started_by_hook = ${h.id}`).toHaveLength(1);
		expect(await turnJobs()).toHaveLength(1);
	});

	it('refuses a forged POST at once with 401 and stores nothing', async () => {
		const h = await hook('generic');
		const r = await receiveDelivery(h.id, new Headers({ authorization: 'Bearer forged' }), Buffer.from('{"title":"x"}'));
		expect(r.status).toBe(401);
		expect(await sql()`select 1 from alert_deliveries where hook_id = ${h.id}`).toHaveLength(0);
		expect(await jobs('alerts__intake')).toHaveLength(0);
	});

	it("recognises a sender's retry (the same body again): marked a duplicate, counted once, no second turn", async () => {
		const h = await hook('proxmox');
		const first = await post(h, vzdump('pve7', 'weekly'));
		const again = await post(h, vzdump('pve7', 'weekly'));
		expect(again.body).toMatchObject({ duplicate: true, alerts: [{ outcome: 'duplicate', incidentId: first.body.alerts![0].incidentId }] });
		const [dup] = await sql()<
			{ duplicateOf: string }[]
		>`select duplicate_of as "duplicateOf" from alert_deliveries where id = ${again.body.deliveryId as string}`;
		expect(dup.duplicateOf).toBe(first.body.deliveryId);
		const [inc] = await incidentsOf([first.body.alerts![0].incidentId!]);
		expect(inc.alertCount).toBe(1);
		expect(await turnJobs()).toHaveLength(1);
	});
});

describe('grouping', () => {
	it('alerts about the same node and kind within the window join one incident; another node opens its own', async () => {
		const h = await hook('proxmox');
		const a = await post(h, vzdump('pve2', 'job-a'));
		const b = await post(h, vzdump('pve2', 'job-b'));
		const c = await post(h, vzdump('pve3', 'job-a'));
		expect(a.body.alerts![0].outcome).toBe('opened');
		expect(b.body.alerts![0]).toMatchObject({ outcome: 'joined', incidentId: a.body.alerts![0].incidentId, sessionId: a.body.alerts![0].sessionId });
		expect(c.body.alerts![0]).toMatchObject({ outcome: 'opened' });
		expect(c.body.alerts![0].incidentId).not.toBe(a.body.alerts![0].incidentId);
		const [pve2, pve3] = await incidentsOf([a.body.alerts![0].incidentId!, c.body.alerts![0].incidentId!]);
		expect(pve2).toMatchObject({ key: 'pve2/-/vzdump', status: 'open', alertCount: 2 });
		expect(pve3).toMatchObject({ key: 'pve3/-/vzdump', alertCount: 1 });
		// The second alert of pve2 is a card in the same session (the first turn is still queued, so no second one).
		const cards = (await listMessages(sql(), pve2.sessionId)).filter((m) => JSON.stringify(m.parts).includes('"untrusted":true'));
		expect(cards).toHaveLength(2);
		expect(await turnJobs()).toEqual([pve2.sessionId, pve3.sessionId]);

		// Past the window the same key opens a new incident.
		await sql()`update incidents set last_seen_at = now() - interval '2 hours' where id = ${pve2.id}`;
		const d = await post(h, vzdump('pve2', 'job-c'));
		expect(d.body.alerts![0].outcome).toBe('opened');
		expect(d.body.alerts![0].incidentId).not.toBe(pve2.id);
	});

	it('one Alertmanager groupKey is one incident, even from two Alertmanagers and about different nodes', async () => {
		const am1 = await hook('alertmanager', 'am-1');
		const am2 = await hook('alertmanager', 'am-2');
		const key = '{}:{alertname="GuestDown"}';
		const a = await post(am1, amGroup(key, { alertname: 'GuestDown', node: 'pve4' }));
		const b = await post(am2, amGroup(key, { alertname: 'GuestDown', node: 'pve5' }));
		expect(b.body.alerts![0]).toMatchObject({ outcome: 'joined', incidentId: a.body.alerts![0].incidentId });
		const [inc] = await incidentsOf([a.body.alerts![0].incidentId!]);
		expect(inc.alertCount).toBe(2);
	});

	it('an incident resolves when every alert group in it resolved', async () => {
		const h = await hook('generic');
		const a = await post(h, { title: 'disk full on pve6', key: 'disk', labels: { node: 'pve6', kind: 'disk' } });
		const b = await post(h, { title: 'disk almost full on pve6', key: 'disk-2', labels: { node: 'pve6', kind: 'disk' } });
		const id = a.body.alerts![0].incidentId!;
		expect(b.body.alerts![0].incidentId).toBe(id);
		await post(h, { title: 'disk full on pve6', key: 'disk', status: 'resolved' });
		expect((await incidentsOf([id]))[0].status).toBe('open');
		await post(h, { title: 'disk almost full on pve6', key: 'disk-2', status: 'resolved' });
		expect((await incidentsOf([id]))[0].status).toBe('resolved');
	});
});

describe('a storm', () => {
	it('N+5 distinct alerts: at most N investigations, the rest joined open incidents with a note, none dropped', async () => {
		const N = 3;
		process.env.NOMOS_MAX_INVESTIGATIONS = String(N);
		resetEnvCache();
		try {
			const h = await hook('generic');
			const rs = [];
			for (let i = 0; i < N + 5; i++) rs.push(await post(h, { title: `service ${i} down`, key: `svc-${i}`, labels: { node: `node-${i}`, kind: 'down' } }));
			const outs = rs.map((r) => r.body.alerts![0]);
			expect(outs.filter((o) => o.outcome === 'opened')).toHaveLength(N);
			expect(outs.filter((o) => o.outcome === 'joined')).toHaveLength(5);
			// None dropped: every alert is stored, applied and in an incident.
			expect(outs.every((o) => o.incidentId && o.sessionId)).toBe(true);
			const ids = [...new Set(outs.map((o) => o.incidentId!))];
			expect(ids).toHaveLength(N);
			const incs = await incidentsOf(ids);
			expect(incs.reduce((n, i) => n + i.alertCount, 0)).toBe(N + 5);
			expect(new Set(await turnJobs()).size).toBe(N);
			// Each joined alert is a card in the incident's session that says why it was not investigated.
			const notes = (await Promise.all(incs.map((i) => listMessages(sql(), i.sessionId)))).flat().map((m) => JSON.stringify(m.parts));
			const storm = notes.filter((t) => t.includes('investigations are running (at most 3)'));
			expect(storm).toHaveLength(5);
			expect(storm.every((t) => t.includes('"untrusted":true') && t.includes('"joined":"storm"'))).toBe(true);

			// Once an investigation is done (its turn job gone), a new alert opens its own again.
			await sql()`delete from graphile_worker._private_jobs`;
			const after = await post(h, { title: 'service 99 down', key: 'svc-99', labels: { node: 'node-99', kind: 'down' } });
			expect(after.body.alerts![0].outcome).toBe('opened');
		} finally {
			delete process.env.NOMOS_MAX_INVESTIGATIONS;
			resetEnvCache();
		}
	});
});

describe('titles and cards', () => {
	it("an Alertmanager alert is titled after the node or guest with its summary, never the exporter's job", async () => {
		const h = await hook('alertmanager');
		const r = await post(
			h,
			amGroup(
				'{}:{alertname="GuestDown",id="lxc/105"}',
				{ alertname: 'GuestDown', job: 'pve-exporter', instance: 'pve-exporter:9221', node: 'pve8', id: 'lxc/105' },
				'CT 105 does not answer'
			)
		);
		const [s] = await sql()<{ title: string }[]>`select title from chat_sessions where id = ${r.body.alerts![0].sessionId}`;
		expect(s.title).toBe('GuestDown on CT 105 on pve8 — CT 105 does not answer');
		expect(s.title).not.toContain('exporter');
		const [inc] = await incidentsOf([r.body.alerts![0].incidentId!]);
		expect(inc.key).toBe('pve8/CT 105/GuestDown');
	});

	it('a Proxmox notification: the node in the title, the decisive line stored first for the card and the brief', async () => {
		const h = await hook('proxmox');
		const message = [
			'INFO: starting new backup job: vzdump 102 --storage backup',
			'INFO: Starting Backup of VM 102 (lxc)',
			'INFO: status = running',
			'ERROR: Backup of VM 102 failed - vma_queue_write: write error - No space left on device',
			'INFO: Failed at 2026-12-06 03:00:12',
			'INFO: Backup job finished with errors'
		].join('\n');
		const r = await post(h, { ...vzdump('pve9', 'nightly', message), title: 'vzdump backup status: backup failed' });
		const sessionId = r.body.alerts![0].sessionId!;
		const [s] = await sql()<{ title: string }[]>`select title from chat_sessions where id = ${sessionId}`;
		expect(s.title).toBe('pve9: vzdump backup status: backup failed');
		const [card] = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'system');
		const note = (card.parts[0] as unknown as { data: { model: string; data: { decisive: string; node: string } } }).data;
		expect(note.data.decisive).toBe('ERROR: Backup of VM 102 failed - vma_queue_write: write error - No space left on device');
		expect(note.data.node).toBe('pve9');
		// The brief is what the model reads for the card (kept in the history, not a note of one turn).
		expect(note.model).toContain('decisive line: ERROR: Backup of VM 102 failed');
		const [job] = await jobs('agent__run_turn');
		expect(job.payload.sessionId).toBe(sessionId);
	});
});
