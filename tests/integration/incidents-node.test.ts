// Issue #45 item 3, incidents (b)–(e) end to end: from an alert (a Proxmox VE webhook, an
// Alertmanager POST) or one chat message, the scripted model reads what the catalogue reads, proposes
// one plan, the operator approves it once, and the plan runs by itself. The oracle is the SSH
// double's final state (a CT running without its lock, no updates pending after snapshots, a unit
// active again), never the agent's words; what the model was sent shows it had the cause in hand.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { getPlan } from '../../src/lib/server/db/queries/plans';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { deliverAlert } from '../helpers/alerts';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { plans__advance } from '../../tasks/plans__advance';
import { executions__run } from '../../tasks/executions__run';
import { agent__continue_session } from '../../tasks/agent__continue_session';
import { freshSession, jobs, newOperator, newSession, onDouble, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';
import { promptParts } from '../../src/lib/server/agent/prompt-tokens';
import { INCIDENT_B, INCIDENT_C, INCIDENT_D, INCIDENT_E, type Incident } from '../helpers/incidents';

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'on' },
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'stopped', lock: 'backup' },
				{ vmid: 102, hostname: 'media', status: 'running', diskGb: 64 },
				{ vmid: 103, hostname: 'nextcloud', status: 'running', diskGb: 32 },
				{ vmid: 104, hostname: 'oldmedia', status: 'stopped', diskGb: 500 },
				{ vmid: 105, hostname: 'web', status: 'running' }
			]
		}
	],
	worker: { concurrency: 3, taskList: { plans__advance, executions__run, agent__continue_session } }
});
let operatorId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
});
beforeEach(async () => {
	// Each alert's first turn is run by the test itself (this worker does not take agent__run_turn).
	await sql()`delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t where t.id = j.task_id and t.identifier = 'agent__run_turn'`;
});

async function hook(kind: 'proxmox' | 'alertmanager'): Promise<{ id: string; secret: string }> {
	const secret = `nomos_hook_${crypto.randomUUID()}`;
	const [row] = await sql()<{ id: string }[]>`
		insert into alert_hooks (name, kind, secret_hash, signed, secret) values (${`${kind}-${crypto.randomUUID().slice(0, 8)}`}, ${kind}, ${hashHookSecret(secret)}, true, ${secret}) returning id`;
	return { id: row.id, secret };
}

/** An alert delivered as its sender POSTs it; the investigation's first turn runs (the model scripted before). */
async function alerted(kind: 'proxmox' | 'alertmanager', body: unknown): Promise<string> {
	const h = await hook(kind);
	const r = await deliverAlert(h.id, new Headers({ authorization: `Bearer ${h.secret}` }), Buffer.from(JSON.stringify(body)));
	expect(r.status).toBe(202);
	const [job] = await jobs('agent__run_turn');
	await agent__run_turn(job.payload, {} as never);
	return String(job.payload.sessionId);
}

/** One operator message in a new chat; its turn runs. */
async function asked(text: string): Promise<string> {
	const sessionId = await newSession(operatorId, text.slice(0, 40));
	await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' }));
	expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
	return sessionId;
}

/** The incident's fault on the double, its script for the model (the reply after the plan included), and its start: the session. */
async function begin(incident: Incident): Promise<string> {
	llm.push(...incident.script(await incident.setup(pve)), incident.reply);
	return 'chat' in incident.start ? asked(incident.start.chat) : alerted(incident.start.hook, incident.start.alert);
}

/** The session's one proposed plan, approved with one click; waits for it to end and for the reply after it. */
async function approveAndFinish(sessionId: string): Promise<{ planId: string; runs: ExecutionRow[] }> {
	const plans = await sql()<{ id: string; status: string }[]>`select id, status from plans where session_id = ${sessionId}`;
	expect(plans).toHaveLength(1);
	expect(plans[0].status).toBe('proposed');
	const planId = plans[0].id;
	await sql().begin((tx) => operatorDecidesPlan(tx, planId, { decision: 'approved', operatorId, credential: freshSession() }));
	await waitUntil(async () => ['succeeded', 'failed'].includes((await getPlan(sql(), planId))!.status), 'the plan to end', {
		timeoutMs: scaled(60_000),
		intervalMs: 100
	});
	await waitUntil(
		async () => (await listMessages(sql(), sessionId)).find((m) => m.role === 'assistant' && m.origin === 'plan' && m.status === 'complete'),
		'the reply after the plan',
		{ timeoutMs: scaled(30_000), intervalMs: 100 }
	);
	const plan = (await getPlan(sql(), planId))!;
	const runs = await Promise.all(plan.steps.map(async (s) => (await getExecution(sql(), s.executionId!))!));
	return { planId, runs };
}

/** What the operator did in the session: their messages, and every execution that was not read-only outside the plan. */
async function operatorFootprint(sessionId: string, planId: string) {
	const users = (await listMessages(sql(), sessionId)).filter((m) => m.role === 'user').length;
	const [{ n }] = await sql()<{ n: number }[]>`
		select count(*)::int as n from executions
		where requested_by_session = ${sessionId} and classification <> 'read_only' and plan_id is distinct from ${planId}`;
	return { users, outsideThePlan: n };
}

/** What an incident cost in model requests and prompt tokens (o200k, as a server counts them), printed for the report; the first request fits in 2,000. */
function tokensSince(label: string, from: number): void {
	const reqs = llm.requests.slice(from).map((r) => promptParts(r.body as never));
	const total = reqs.reduce((n, p) => n + p.total, 0);
	console.log(`[incidents] ${label}: ${reqs.length} model requests, first ${reqs[0]?.total ?? 0} tokens, ${total} prompt tokens in all`);
	expect(reqs[0].total).toBeLessThanOrEqual(2000);
}

/** Everything the model was sent, as one string. */
const sentToModel = () => llm.requests.map((r) => JSON.stringify(r.body)).join('\n');

describe('incidents on the node, end to end', () => {
	it(
		'(c) a CT that does not start: the failed task, its log, the lock it left → unlock + start in one plan → running, no lock',
		async () => {
			const from = llm.requests.length;
			const sessionId = await begin(INCIDENT_C);
			// The cause was in hand before the plan: the task's error line and the lock in the config.
			const sent = sentToModel();
			expect(sent).toContain('interrupted by signal');
			expect(sent).toContain('lock: backup');

			const { planId, runs } = await approveAndFinish(sessionId);
			expect(runs.map((e) => [e.action, e.status, e.verdict])).toEqual([
				['pct_unlock', 'succeeded', 'verified'],
				['pct_start', 'succeeded', 'verified']
			]);
			// The oracle: the double's CT.
			const ct = (await pve.containers()).find((c) => c.vmid === 101)!;
			expect(ct.status).toBe('running');
			expect(ct.lock).toBeUndefined();
			expect(await operatorFootprint(sessionId, planId)).toEqual({ users: 1, outsideThePlan: 0 });
			tokensSince('(c) CT does not start', from);
		},
		scaled(120_000)
	);

	it(
		'(d) updates pending (PVE webhook): refresh, what they are, a plan with snapshots first → nothing pending, reboot flagged',
		async () => {
			const before = (await pve.argvLog()).length;
			const from = llm.requests.length;
			const sessionId = await begin(INCIDENT_D);
			// The refresh found the kernel the daily list did not show yet, and flagged it.
			expect(sentToModel()).toMatch(/3 pending updates .*a new kernel \(proxmox-kernel-6\.8\): reboot needed/);
			// The plan's card says it before approval, on the upgrade's step.
			const [proposed] = await sql()<{ id: string }[]>`select id from plans where session_id = ${sessionId}`;
			expect((await getPlan(sql(), proposed.id))!.steps.map((s) => s.beforeApproval?.outcome ?? null)).toEqual([null, null, 'note']);
			expect((await getPlan(sql(), proposed.id))!.steps[2].beforeApproval?.why).toBe(
				'reboot needed afterwards: a new kernel (proxmox-kernel-6.8) is among the 3 pending updates'
			);

			const { planId, runs } = await approveAndFinish(sessionId);
			expect(runs.map((e) => [e.action, e.status])).toEqual([
				['pct_snapshot', 'succeeded'],
				['pct_snapshot', 'succeeded'],
				['apt_upgrade', 'succeeded']
			]);
			const upgrade = runs[2];
			expect(upgrade.verdict).toBe('verified');
			expect(upgrade.result).toMatch(/reboot needed: a new kernel \(proxmox-kernel-6\.8\)/);
			// The reply after the plan was told the reboot.
			expect(JSON.stringify(llm.requests.at(-1)!.body)).toContain('reboot needed');
			// The oracle: nothing pending, each snapshot there, and both taken before the upgrade ran.
			expect((await pve.health()).apt).toEqual([]);
			const cts = await pve.containers();
			for (const vmid of [100, 105]) expect(Object.keys(cts.find((c) => c.vmid === vmid)!.snapshots ?? {})).toContain('preupgrade');
			const ran = (await pve.argvLog()).slice(before).map((a) => a.join(' '));
			const upgradeAt = ran.findIndex((l) => l.includes('apt-get -y -o Dpkg::Options::=--force-confold dist-upgrade'));
			expect(upgradeAt).toBeGreaterThan(ran.map((l) => l.startsWith('pct snapshot')).lastIndexOf(true));
			expect(await operatorFootprint(sessionId, planId)).toEqual({ users: 0, outsideThePlan: 0 });
			tokensSince('(d) updates pending', from);
		},
		scaled(120_000)
	);

	it(
		'(e) a service in a CT down (Alertmanager): status and journal → restart + a check in one plan → active again',
		async () => {
			const from = llm.requests.length;
			const sessionId = await begin(INCIDENT_E);
			const sent = sentToModel();
			expect(sent).toContain('Active: inactive (dead)');
			expect(sent).toContain("Failed with result 'oom-kill'");

			const { planId, runs } = await approveAndFinish(sessionId);
			expect(runs.map((e) => [e.action, e.status])).toEqual([
				['systemctl', 'succeeded'],
				['ct_service_active', 'succeeded']
			]);
			expect(runs[0].verdict).toBe('verified');
			// The oracle: the unit inside the CT, and systemd's own journal of the restart.
			expect(await pve.service('caddy', 105)).toMatchObject({ active: true });
			const journal = await onDouble(pve, 'pct exec 105 -- journalctl -u caddy -n 5 --no-pager');
			expect(journal.stdout).toMatch(/systemd\[1\]: Started caddy\.service/);
			expect(await operatorFootprint(sessionId, planId)).toEqual({ users: 0, outsideThePlan: 0 });
			tokensSince('(e) service in a CT down', from);
		},
		scaled(120_000)
	);

	it(
		'(b) a storage over 90 % (Alertmanager): its use, its largest volumes → a backup then the stale CT destroyed, one plan → under 90 %',
		async () => {
			const from = llm.requests.length;
			const sessionId = await begin(INCIDENT_B);
			// The use and the largest consumer were in hand before the plan.
			const sent = sentToModel();
			expect(sent).toMatch(/local-lvm: 93% used/);
			expect(sent).toContain('local-lvm:vm-104-disk-0 (CT 104, rootdir): 90.0 GiB of 500.0 GiB');

			const { planId, runs } = await approveAndFinish(sessionId);
			expect(runs.map((e) => [e.action, e.status])).toEqual([
				['vzdump', 'succeeded'],
				['pct_destroy', 'succeeded']
			]);
			// The oracle: the node's own figure, the CT gone, its backup there, the others untouched.
			const storages = JSON.parse((await onDouble(pve, 'pvesh get /nodes/strong/storage --output-format json')).stdout) as {
				storage: string;
				used_fraction: number;
			}[];
			expect(storages.find((x) => x.storage === 'local-lvm')!.used_fraction).toBeLessThan(0.9);
			expect((await pve.containers()).map((c) => c.vmid)).toEqual([100, 101, 102, 103, 105]);
			expect((await pve.health()).backups?.local?.some((v) => v.vmid === 104)).toBe(true);
			expect(await operatorFootprint(sessionId, planId)).toEqual({ users: 0, outsideThePlan: 0 });
			tokensSince('(b) storage over 90 %', from);
		},
		scaled(120_000)
	);
});
