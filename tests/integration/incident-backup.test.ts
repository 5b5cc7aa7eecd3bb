// Issue #45 incident (a), end to end: a Proxmox VE webhook says a backup of CT 101 failed for lack
// of space; with no operator message, the agent (the scripted model, through the real
// @ai-sdk/openai client) reads the storage's use, lists the guest's backups and a prune's dry run,
// and proposes ONE plan — the prune of exactly what the dry run listed, then the backup again. One
// plan approval runs both (a real graphile worker, the SSH double); the backup is verified present
// by its read-back. The oracle is the double's final state: the backups on the storage.
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { getPlan } from '../../src/lib/server/db/queries/plans';
import { operatorDecidesPlan } from '../../src/lib/server/executions/decisions';
import { promptParts } from '../../src/lib/server/agent/prompt-tokens';
import { deliverAlert } from '../helpers/alerts';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { agent__run_turn } from '../../tasks/agent__run_turn';
import { agent__continue_session } from '../../tasks/agent__continue_session';
import { executions__run } from '../../tasks/executions__run';
import { plans__advance } from '../../tasks/plans__advance';
import { backupVolid, INCIDENT_A } from '../helpers/incidents';
import { freshSession, newOperator, waitUntil } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_HEALTH_AFTER: 'on', NOMOS_SNAPSHOT_BEFORE: 'off' },
	hosts: [{ nodeName: 'strong', seed: [{ vmid: 101, hostname: 'media', status: 'running' }] }],
	worker: { concurrency: 3, taskList: { agent__run_turn, agent__continue_session, executions__run, plans__advance } }
});

const volid = backupVolid;

describe('incident (a): a backup failed for lack of space', () => {
	it('webhook → usage, backups, dry run → one plan, one approval → the new backup is verified on the storage', async () => {
		const operatorId = await newOperator('alice');
		await INCIDENT_A.setup(pve);
		const secret = `nomos_hook_${crypto.randomUUID()}`;
		const [hook] = await sql()<{ id: string }[]>`
			insert into alert_hooks (name, kind, secret_hash) values ('pve-strong', 'proxmox', ${hashHookSecret(secret)}) returning id`;

		// The agent's side: three reads, then one plan (the prune the dry run listed, and the backup again).
		llm.push(...INCIDENT_A.script());
		const alert = INCIDENT_A.start.alert;
		const r = await deliverAlert(hook.id, new Headers({ authorization: `Bearer ${secret}` }), Buffer.from(JSON.stringify(alert)));
		expect(r.status).toBe(202);
		const sessionId = (r.body as { alerts: { sessionId: string }[] }).alerts[0].sessionId;

		const plan = await waitUntil(
			async () => (await sql()<{ id: string; status: string }[]>`select id, status from plans where session_id = ${sessionId}`)[0],
			'the plan',
			{ timeoutMs: 60_000, intervalMs: 100 }
		);
		expect(plan.status).toBe('proposed');
		// The card lists exactly what the dry run marked for removal, and the backup after it.
		const proposed = (await getPlan(sql(), plan.id))!;
		expect(proposed.steps.map((s) => [s.action, s.commandPreview])).toEqual([
			['backup_prune', "'pvesm' 'prune-backups' 'local' '--vmid' '101' '--prune-backups' 'keep-last=2'"],
			['vzdump', "'vzdump' '101' '--storage' 'local' '--mode' 'snapshot' '--compress' 'zstd'"]
		]);
		expect(proposed.steps[0].params.remove).toEqual([volid(1), volid(2)]);
		// What the agent read before: the storage full, the dry run naming those two.
		const sent = JSON.stringify(llm.requests.at(-1)!.body!.messages);
		expect(sent).toMatch(/local: 100% used/);
		expect(sent).toContain(`remove ${volid(1)}`);
		expect(sent).toContain(`keep ${volid(4)}`);

		// One approval (a person: the prune removes backups), and the summary turn afterwards.
		llm.push(INCIDENT_A.reply);
		await sql().begin((tx) => operatorDecidesPlan(tx, plan.id, { decision: 'approved', operatorId, credential: freshSession() }));
		await waitUntil(async () => ['succeeded', 'failed'].includes((await getPlan(sql(), plan.id))!.status), 'the plan to end', {
			timeoutMs: 90_000,
			intervalMs: 100
		});
		const done = (await getPlan(sql(), plan.id))!;
		const runs = await Promise.all(done.steps.map((s) => getExecution(sql(), s.executionId!)));
		expect(runs.map((e) => [e!.action, e!.status, e!.verdict])).toEqual([
			['backup_prune', 'succeeded', 'verified'],
			['vzdump', 'succeeded', 'verified']
		]);

		// The oracle: the storage now holds 3, 4 and one new backup of CT 101 — and nothing else changed.
		const after = ((await pve.health()).backups?.local ?? []).map((v) => v.volid);
		const fresh = after.filter((v) => ![1, 2, 3, 4].map(volid).includes(v));
		expect(fresh).toHaveLength(1);
		expect(fresh[0]).toMatch(/^local:backup\/vzdump-lxc-101-\d{4}_\d{2}_\d{2}-\d{2}_\d{2}_\d{2}\.tar\.zst$/);
		expect(after.sort()).toEqual([volid(3), volid(4), fresh[0]].sort());
		expect(runs[1]!.verdictDetail).toContain(fresh[0]);

		// No operator message at all: the alert started it, one click approved it.
		await waitUntil(
			async () => (await listMessages(sql(), sessionId)).some((m) => m.role === 'assistant' && m.origin === 'plan' && m.status === 'complete'),
			'the summary',
			{
				timeoutMs: 30_000,
				intervalMs: 100
			}
		);
		expect((await listMessages(sql(), sessionId)).filter((m) => m.role === 'user')).toHaveLength(0);
		expect(llm.state().pending).toBe(0);

		const bodies = llm.requests.filter((q) => q.path.endsWith('/chat/completions')).map((q) => promptParts(q.body ?? {}));
		console.log(
			`[incident a] model requests ${bodies.length}; first request ${bodies[0].total} tokens; prompt tokens in all ${bodies.reduce((n, b) => n + b.total, 0)}`
		);
		// The investigation's first request (instructions, tools, the alert's card and brief) fits in 2,000 tokens (issue #45).
		expect(bodies[0].total).toBeLessThanOrEqual(2000);
	});
});
