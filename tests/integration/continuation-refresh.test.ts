// After a mutation succeeds, the continuation shows the agent the container it touched as it is
// now — two commands on that container, not a whole-host sync, read while the agent's turn starts
// (its tools wait for them) — and the host's follow-up syncs collapse into one job, so a burst of
// finishes does not queue a sync each.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { getEntity } from '../../src/lib/server/db/queries/entities';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { decide, jobs, newOperator, newSession, onDouble } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm, pve } = useStage({
	model: true,
	hosts: [
		{
			nodeName: 'strong',
			seed: [
				{ vmid: 100, hostname: 'caddy', status: 'running' },
				{ vmid: 101, hostname: 'db', status: 'running' },
				{ vmid: 102, hostname: 'media', status: 'running' },
				{ vmid: 103, hostname: 'cache', status: 'running' }
			]
		}
	]
});
let operatorId: string;

beforeAll(async () => {
	operatorId = await newOperator('refresh-admin');
});

async function stopApprovedAndRun(sessionId: string, vmid: number): Promise<string> {
	const r = await requestExecution(sessionId, { target: `lxc:strong/${vmid}`, action: 'pct_stop', params: {}, reason: 'maintenance' });
	if ('error' in r) throw new Error(r.error);
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	expect((await getExecution(sql(), r.execution.id))?.status).toBe('succeeded');
	return r.execution.id;
}

const stored = async (vmid: number) => (await getEntity(sql(), `lxc:strong/${vmid}`))?.attributes.status;

describe('continuation refresh', () => {
	it('reads back only the container the action touched before the agent runs', async () => {
		const sessionId = await newSession(operatorId, 'refresh');
		await stopApprovedAndRun(sessionId, 100);
		expect(await stored(100)).toBe('running'); // the stored inventory still says what the last sync saw

		llm.push({ text: 'CT 100 is stopped.' });
		const before = (await pve.argvLog()).length;
		expect(await continueSession(sessionId)).toBe('turn');
		const during = (await pve.argvLog()).slice(before);

		// The two reads run at once, so in either order.
		expect([...during].sort()).toEqual([
			['pct', 'config', '100'],
			['pct', 'status', '100', '--verbose']
		]);
		expect(await stored(100)).toBe('stopped');
		expect(await stored(101)).toBe('running');
		// The turn ran once, with the note of the stop.
		expect(llm.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
	});

	it('the agent starts talking while the read-back runs; its tools wait for it', async () => {
		const sessionId = await newSession(operatorId, 'overlap');
		await stopApprovedAndRun(sessionId, 103);
		expect(await stored(103)).toBe('running');
		// A slow host: reading the config back takes 1.5 s.
		await pve.setFault('slow', { tool: 'pct', match: 'config 103', ms: 1500 });
		try {
			llm.push({ text: 'Checking CT 103.', toolCalls: [{ name: 'get_entity', args: { id: 'lxc:strong/103' } }] }, { text: 'CT 103 is stopped.' });
			const before = pve.execTimes().length;
			expect(await continueSession(sessionId)).toBe('turn');
			const config = pve
				.execTimes()
				.slice(before)
				.find((t) => t.command === "'pct' 'config' '103'");
			expect(config?.endedAt).toBeTypeOf('number');
			const [first, second] = llm.requests.filter((r) => r.path.endsWith('/chat/completions'));
			// The model was asked before the read-back ended …
			expect(first.receivedAt).toBeLessThan(config!.endedAt!);
			// … and the tool it called answered from the container as it is now, after the read-back.
			expect(second.receivedAt).toBeGreaterThanOrEqual(config!.endedAt!);
			const toolResult = second.body?.messages?.findLast((m) => m.role === 'tool');
			const content = toolResult?.content;
			expect(typeof content === 'string' ? content : JSON.stringify(content)).toContain('"status":"stopped"');
			expect(await stored(103)).toBe('stopped');
		} finally {
			await pve.setFault('slow', null);
		}
	});

	it('a container that is gone is removed from the inventory, not left as it was', async () => {
		const sessionId = await newSession(operatorId, 'gone');
		await stopApprovedAndRun(sessionId, 102);
		const r = await onDouble(pve, 'pct destroy 102');
		expect(r.code, r.stderr).toBe(0);
		llm.push({ text: 'Checked.' });
		expect(await continueSession(sessionId)).toBe('turn');
		expect(await getEntity(sql(), 'lxc:strong/102')).toBeNull();
	});

	it('follow-up syncs of one host collapse into one pending job in the inventory queue', async () => {
		await sql()`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = 'inventory__sync')`;
		const sessionId = await newSession(operatorId, 'burst');
		await stopApprovedAndRun(sessionId, 101);
		const start = await requestExecution(sessionId, { target: 'lxc:strong/101', action: 'pct_start', params: {}, reason: 'back up' });
		if ('error' in start) throw new Error(start.error);
		expect((await decide(start.execution.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(start.execution.id);

		expect(await jobs('inventory__sync')).toEqual([
			{ task: 'inventory__sync', payload: { host: 'strong' }, key: 'inventory__sync:strong', queue: 'inventory' }
		]);
	});
});
