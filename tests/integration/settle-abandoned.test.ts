// A worker SIGKILLed while its pct creates run: like sshd, the double stops nothing when the
// connection dies, so the creates run on without anyone watching. Once the executions are marked
// interrupted, settleAbandoned stops each one's process group on the host, waits until it is
// gone and reads the target back; a host that does not answer is said so and read back (and the
// command stopped) when it does, with a late note to the session.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { sweep } from '../../src/lib/server/executions/lifecycle';
import { recheckLeftovers, settleAbandoned } from '../../src/lib/server/executions/remote-stop';
import { processRunning } from '../doubles/proxmox/server';
import { DEBIAN, requestApproved, newOperator, newSession, waitUntil } from '../helpers/executions';
import { STRONG_CADDY, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { pve, spawnWorker } = useStage({ spawned: true, sync: false, hosts: [STRONG_CADDY] });
beforeAll(() => pve.setFault('create', { slow: 300_000 }));

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

describe('settleAbandoned', () => {
	it(
		'stops what a SIGKILLed worker left running on the host, or says it could not and does it when the host answers',
		async () => {
			const operatorId = await newOperator();
			const sessionId = await newSession(operatorId);
			const ids: string[] = [];
			for (const vmid of ['108', '109']) {
				const e = await requestApproved(sessionId, operatorId, {
					target: 'strong',
					action: 'pct_create',
					params: { vmid, hostname: `ct${vmid}`, template: DEBIAN },
					reason: 'r'
				});
				ids.push(e.id);
			}
			const { child, log, exited } = spawnWorker();
			// Both creates run in the child, each with its process group recorded on its step.
			await waitUntil(
				async () => (await Promise.all(ids.map(load))).every((e) => e.status === 'running' && e.steps[0]?.pgid),
				() => `the worker to run both:\n${log.out}`,
				{ timeoutMs: 40_000, intervalMs: 100 }
			);
			const tasks = await waitUntil(async () => {
				const t = (await pve.tasks()).filter((x) => x.argv.includes('108') || x.argv.includes('109'));
				return t.length === 2 ? t : null;
			}, 'both creates to fork their workers');
			const [t108, t109] = ['108', '109'].map((v) => tasks.find((t) => t.argv.includes(v))!);
			child.kill('SIGKILL');
			expect((await exited).signal).toBe('SIGKILL');
			// As the lead's recovery would: the lease given up, the sweeper marks them interrupted.
			await sql()`update executions set lease_until = now() - interval '1 second' where id = any(${ids}::uuid[])`;
			expect((await sweep(sql())).lost).toBe(2);
			// The worker's connection is gone, its creates are not: the ghosts.
			expect(await processRunning(t108.worker)).toBe(true);
			expect(await processRunning(t109.worker)).toBe(true);

			await settleAbandoned(await load(ids[0]));
			expect(await processRunning(t108.worker)).toBe(false);
			expect(await processRunning(t108.pid)).toBe(false);
			const e108 = await load(ids[0]);
			expect(e108.leftovers).toBe('CT 108 exists on strong, stopped, locked: create');
			expect(e108.steps[0].pgid).toBe(t108.pid);

			pve.setReachable(false);
			await settleAbandoned(await load(ids[1]));
			const e109 = await load(ids[1]);
			expect(e109.leftovers).toBe(
				'strong could not be reached to stop the command and read CT 109 back: it may still be running (Nomos reads it back when the host answers)'
			);
			expect(await processRunning(t109.worker)).toBe(true);
			expect(await recheckLeftovers()).toBe(0); // still away: nothing read, nothing said

			pve.setReachable(true);
			await sql()`update executions set leftovers_recheck_at = now() where id = ${ids[1]}`; // its retry due
			expect(await recheckLeftovers()).toBe(1);
			expect(await processRunning(t109.worker)).toBe(false);
			expect((await load(ids[1])).leftovers).toBe('CT 109 exists on strong, stopped, locked: create');
			const said = await sql()<{ text: string }[]>`
				select p->'data'->>'text' as text from messages m, jsonb_array_elements(m.parts) p
				where m.session_id = ${sessionId} and p->'data'->>'kind' = 'leftovers'`;
			expect(said.map((n) => n.text)).toEqual([
				`Late read-back of execution ${ids[1]} (pct_create on host:strong): its command was still running on the host and was stopped now; CT 109 exists on strong, stopped, locked: create.`
			]);
			// Neither create ever finished.
			expect((await pve.tasks()).filter((t) => t.done)).toEqual([]);
		},
		scaled(120_000)
	);
});
