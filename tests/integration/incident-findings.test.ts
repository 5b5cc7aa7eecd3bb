// Issue #48 item 3: findings with a lifecycle. In an incident's session each hypothesis the agent
// presents is a finding of the incident (uncertain), its check's verdict makes it present
// (confirmed) or resolved (refuted); the incident closes only when its alerts are quiet, every
// finding is resolved and the fix (if one ran) is verified. A resolved alert marks the pending
// fix and asks a re-check naming the findings not resolved; a cooldown per finding stops repeats.
import { beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import type { RunTurnPayload } from '../../src/lib/server/conversation/turn-queue';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { deliverAlert } from '../helpers/alerts';
import { decide, jobs, newOperator } from '../helpers/executions';
import { requestExecution } from '../../src/lib/server/executions/request';
import { executions__run } from '../../tasks/executions__run';
import { useStage } from '../helpers/stage';

const { llm } = useStage({
	model: true,
	sync: false,
	env: { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'on', NOMOS_HOST_WAIT_MIN: '0.05' },
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped' },
				{ vmid: 102, hostname: 'cache', status: 'stopped' }
			]
		}
	]
});
beforeEach(async () => {
	await sql()`delete from graphile_worker._private_jobs`;
	// Each test's alert opens its own incident (the same node and kind would join one an earlier test left open).
	await sql()`update incidents set status = 'resolved' where status = 'open'`;
});

const CT = 'lxc:strong/100';
const hypotheses = [
	{ id: 'h1', statement: 'The container is stopped', evidence: ['c-list'], check: { action: 'pct_status', target: CT }, confidence: 'high' },
	{
		id: 'h2',
		statement: 'The caddy unit failed',
		evidence: ['c-state'],
		check: { action: 'service_status', target: CT, params: { unit: 'caddy' } },
		confidence: 'medium'
	},
	{
		id: 'h3',
		statement: 'The container ran out of memory',
		evidence: ['c-state'],
		check: { action: 'get_lxc_state', params: { name: 'caddy' } },
		confidence: 'low'
	}
];
/** The investigation: looks, presents three hypotheses, checks two, marks h1 refuted and h2 confirmed; h3 stays unchecked. */
const investigation = [
	{
		toolCalls: [
			{ id: 'c-list', name: 'list_lxcs', args: {} },
			{ id: 'c-state', name: 'get_lxc_state', args: { name: 'caddy' } }
		]
	},
	{ toolCalls: [{ id: 'c-hyp', name: 'present_hypotheses', args: { hypotheses } }] },
	{
		toolCalls: [
			{ id: 'c-chk1', name: 'request_execution', args: { target: CT, action: 'pct_status', params: {}, reason: 'check h1' } },
			{ id: 'c-chk2', name: 'request_execution', args: { target: CT, action: 'service_status', params: { unit: 'caddy' }, reason: 'check h2' } }
		]
	},
	{
		toolCalls: [
			{ id: 'c-m1', name: 'mark_hypothesis', args: { id: 'h1', verdict: 'refuted', result: 'pct status says running', evidence: ['c-chk1'] } },
			{ id: 'c-m2', name: 'mark_hypothesis', args: { id: 'h2', verdict: 'confirmed', result: 'the unit is not active', evidence: ['c-chk2'] } }
		]
	},
	{ text: 'The caddy unit failed; I propose to restart it.' }
];

async function alertHook(): Promise<{ id: string; secret: string }> {
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [row] = await sql()<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash) values ('am', 'alertmanager', ${hashHookSecret(secret)}) returning id`;
	return { id: row.id, secret };
}
const group = (key: string, status: 'firing' | 'resolved') => ({
	version: '4',
	groupKey: `{}:{alertname="CaddyDown",k="${key}"}`,
	status,
	receiver: 'nomos',
	groupLabels: { alertname: 'CaddyDown' },
	commonLabels: { alertname: 'CaddyDown', severity: 'critical', instance: 'strong' },
	commonAnnotations: { summary: 'caddy does not answer' },
	externalURL: 'http://am',
	alerts: [{ status, labels: { alertname: 'CaddyDown', instance: 'strong', k: key }, annotations: {}, startsAt: '2026-12-06T10:00:00Z', fingerprint: key }]
});

/** Opens an incident by a firing alert and runs its investigation (the queued turn, as the worker would). */
async function investigated(key: string) {
	const h = await alertHook();
	const send = async (status: 'firing' | 'resolved') => (await deliverAlert(h.id, { authorization: `Bearer ${h.secret}` }, group(key, status))).body.alerts![0];
	const opened = await send('firing');
	expect(opened.outcome).toBe('opened');
	const sessionId = opened.sessionId!;
	const incidentId = opened.incidentId!;
	await runQueuedTurn(sessionId, investigation);
	return { send, sessionId, incidentId };
}

async function runQueuedTurn(sessionId: string, script: object[]): Promise<void> {
	const turn = (await jobs('agent__run_turn')).find((j) => j.payload.sessionId === sessionId);
	expect(turn).toBeDefined();
	await sql()`delete from graphile_worker._private_jobs`;
	llm.push(...(script as never[]));
	expect((await runTurn(turn!.payload as unknown as RunTurnPayload)).status).toBe('complete');
}

const findingsOf = async (incidentId: string) =>
	Object.fromEntries(
		(await sql()<{ what: string; verdict: string }[]>`select what, verdict from findings where incident_id = ${incidentId}`).map((f) => [f.what, f.verdict])
	);
const statusOf = async (incidentId: string) => (await sql()<{ status: string }[]>`select status from incidents where id = ${incidentId}`)[0].status;
const recheckJobs = async (sessionId: string) => (await jobs('agent__run_turn')).filter((j) => j.payload.sessionId === sessionId);

describe('findings with a lifecycle', () => {
	it('gives each finding a verdict; a resolved alert marks the pending fix, the incident stays open and a re-check names what is not resolved; it closes when all are resolved', async () => {
		const { send, sessionId, incidentId } = await investigated('a');
		expect(await findingsOf(incidentId)).toEqual({
			'The container is stopped': 'resolved',
			'The caddy unit failed': 'present',
			'The container ran out of memory': 'uncertain'
		});
		// The fix it proposed waits for approval.
		const [fix] = await sql()<{ id: string }[]>`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
			values (${sessionId}, 'strong', ${CT}, 'service_restart', '{"unit":"caddy"}'::jsonb, 'service_restart', ${'h-' + crypto.randomUUID()}, 'systemctl restart caddy', 'restart caddy', 'awaiting_approval', now() + interval '1 hour')
			returning id`;

		// The alert resolves: the fix is marked, the incident is not closed (one finding present, one uncertain), a re-check is asked.
		expect((await send('resolved')).outcome).toBe('resolved');
		const [marked] = await sql()<{ alertResolvedAt: string | null }[]>`select alert_resolved_at as "alertResolvedAt" from executions where id = ${fix.id}`;
		expect(marked.alertResolvedAt).not.toBeNull();
		expect(await statusOf(incidentId)).toBe('open');
		expect(await recheckJobs(sessionId)).toHaveLength(1);
		const sentBefore = llm.requests.length;

		// The re-check settles both: the incident closes (its alert is quiet, no fix ran that failed).
		await runQueuedTurn(sessionId, [
			{
				toolCalls: [
					{ id: 'c-chk3', name: 'request_execution', args: { target: CT, action: 'service_status', params: { unit: 'caddy' }, reason: 'recheck h2' } },
					{ id: 'c-state2', name: 'get_lxc_state', args: { name: 'caddy' } }
				]
			},
			{
				toolCalls: [
					{ id: 'c-m3', name: 'mark_hypothesis', args: { id: 'h2', verdict: 'refuted', result: 'the unit is active again', evidence: ['c-chk3'] } },
					{ id: 'c-m4', name: 'mark_hypothesis', args: { id: 'h3', verdict: 'refuted', result: 'memory is at 20%', evidence: ['c-state2'] } }
				]
			},
			{ text: 'Both findings are resolved: the restart is no longer needed.' }
		]);
		// What the re-check's first request told the model, after the investigation's own brief (still
		// there, where it was first sent: the request starts with the ones before it).
		const sent = llm.requests[sentBefore].body!.messages!.map((m) => JSON.stringify(m));
		const investigation = sent.findIndex((m) => m.includes('Find the cause with read-only tools'));
		const recheck = sent.findIndex((m) => m.includes('has resolved'));
		expect(investigation).toBeGreaterThan(-1);
		expect(recheck).toBeGreaterThan(investigation);
		const brief = sent[recheck];
		expect(brief).toContain('service_restart on lxc:strong/100');
		expect(brief).toContain('- present: The caddy unit failed');
		expect(brief).toContain('- uncertain: The container ran out of memory');
		expect(brief).not.toContain('The container is stopped');
		expect(brief).toContain('Do not say all clear while any of them is uncertain');
		expect(Object.values(await findingsOf(incidentId))).toEqual(['resolved', 'resolved', 'resolved']);
		expect(await statusOf(incidentId)).toBe('resolved');
	});

	it('does not close while the fix that ran is not verified, even with every finding resolved and the alert quiet', async () => {
		const { send, sessionId, incidentId } = await investigated('b');
		await sql()`update findings set verdict = 'resolved' where incident_id = ${incidentId}`;
		await sql()`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, verdict, finished_at)
			values (${sessionId}, 'strong', ${CT}, 'service_restart', '{"unit":"caddy"}'::jsonb, 'service_restart', ${'h-' + crypto.randomUUID()}, 'systemctl restart caddy', 'restart caddy', 'succeeded', 'still_failing', now())`;
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await statusOf(incidentId)).toBe('open');
		await sql()`update executions set verdict = 'verified' where requested_by_session = ${sessionId}`;
		await send('firing');
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await statusOf(incidentId)).toBe('resolved');
	});

	it('closes when a fix is verified after the alert went quiet and every finding resolved, with no further alert', async () => {
		const { send, sessionId, incidentId } = await investigated('d');
		await sql()`update findings set verdict = 'resolved' where incident_id = ${incidentId}`;
		// An earlier fix did not verify: the alert's resolve leaves the incident open.
		await sql()`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, verdict, finished_at)
			values (${sessionId}, 'strong', ${CT}, 'service_restart', '{"unit":"caddy"}'::jsonb, 'service_restart', ${'h-' + crypto.randomUUID()}, 'systemctl restart caddy', 'restart caddy', 'succeeded', 'still_failing', now() - interval '1 minute')`;
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await statusOf(incidentId)).toBe('open');

		// The next fix runs on the host double and its read-back verifies it: that closes the incident.
		const r = await requestExecution(sessionId, { target: 'strong/101', action: 'pct_start', params: {}, reason: 'start the db' });
		if ('error' in r) throw new Error(r.error);
		expect((await decide(r.execution.id, await newOperator('fixer'), 'approved')).ok).toBe(true);
		await executions__run({ executionId: r.execution.id }, {} as never);
		const [e] = await sql()<{ status: string; verdict: string | null; detail: string | null; error: string | null }[]>`
			select status, verdict, verdict_detail as detail, error from executions where id = ${r.execution.id}`;
		expect(e).toMatchObject({ status: 'succeeded', verdict: 'verified' });
		expect(await statusOf(incidentId)).toBe('resolved');
		const [ev] = await sql()<{ n: number }[]>`
			select count(*)::int as n from events where type = 'incident.updated' and payload->>'incidentId' = ${incidentId}
				and created_at >= (select finished_at from executions where id = ${r.execution.id})`;
		expect(ev.n).toBeGreaterThan(0);
	});

	it('stays open when the fix verified later leaves a finding present', async () => {
		const { send, sessionId, incidentId } = await investigated('e');
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await findingsOf(incidentId)).toMatchObject({ 'The caddy unit failed': 'present' });
		const r = await requestExecution(sessionId, { target: 'strong/102', action: 'pct_start', params: {}, reason: 'start the cache' });
		if ('error' in r) throw new Error(r.error);
		expect((await decide(r.execution.id, await newOperator('fixer2'), 'approved')).ok).toBe(true);
		await executions__run({ executionId: r.execution.id }, {} as never);
		const [e] = await sql()<{ verdict: string | null }[]>`select verdict from executions where id = ${r.execution.id}`;
		expect(e.verdict).toBe('verified');
		expect(await statusOf(incidentId)).toBe('open');
	});

	it('re-checks a finding at most once per cooldown, however often the alert flaps', async () => {
		const { send, sessionId, incidentId } = await investigated('c');
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await recheckJobs(sessionId)).toHaveLength(1);
		await sql()`delete from graphile_worker._private_jobs`;

		// It fires and resolves again within the cooldown: noted, no second re-check of the same findings.
		await send('firing');
		await sql()`delete from graphile_worker._private_jobs`;
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await recheckJobs(sessionId)).toHaveLength(0);
		expect(await statusOf(incidentId)).toBe('open');

		// Past the cooldown the findings not resolved are asked about again.
		await sql()`update findings set rechecked_at = now() - interval '16 minutes' where incident_id = ${incidentId}`;
		await send('firing');
		await sql()`delete from graphile_worker._private_jobs`;
		expect((await send('resolved')).outcome).toBe('resolved');
		expect(await recheckJobs(sessionId)).toHaveLength(1);
	});
});
