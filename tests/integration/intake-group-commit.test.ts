// Issue #48 item 1: the intake answers in milliseconds under a storm. A delivery costs no hook
// lookup (the hooks this process read are cached while it follows `hooks.changed` on the event
// log) and shares its commit with the deliveries that arrived alongside (group commit: one WAL
// flush and one NOTIFY lock for all). What must still hold: a change of a hook is seen by the
// next delivery, one bad delivery in a group refuses no other, a retry within a group is still
// recognised, and every stored delivery has its job.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { emitEvent } from '../../src/lib/server/db/queries/events';
import { writeDelivery } from '../../src/lib/server/watches/delivery-writer';
import { installHookCache } from '../../src/lib/server/watches/hook-cache';
import { createHook, removeHook, rotateHook } from '../../src/lib/server/watches/hooks';
import { INTAKE_TASK, receiveDelivery } from '../../src/lib/server/watches/intake';
import { jobs, newOperator } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { hub } = useStage();
let actor: { id: string; username: string };
let stopCache: () => void;
beforeAll(async () => {
	actor = { id: await newOperator('intake-admin'), username: 'intake-admin' };
	stopCache = installHookCache(hub());
});
afterAll(() => stopCache());
beforeEach(async () => {
	await sql()`delete from graphile_worker._private_jobs`;
});

const post = (id: string, secret: string, body: object) =>
	receiveDelivery(id, new Headers({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' }), Buffer.from(JSON.stringify(body)));
const alert = (n: number | string) => ({ title: `check ${n} failed on pve1`, key: `k-${n}`, severity: 'warning', labels: { node: 'pve1' } });

/** A delivery as the intake hands it to the writer; `body` names its content (the same name: the same bytes). */
function delivery(hookId: string, body: string = randomUUID()) {
	return { id: randomUUID(), hookId, body: JSON.stringify(alert(body)), bodySha: createHash('sha256').update(body).digest('hex') };
}

/** Polls a condition (the hub's dispatch is asynchronous); throws after the timeout. */
async function until(what: string, f: () => Promise<boolean>): Promise<void> {
	for (const end = Date.now() + scaled(10_000); ;) {
		if (await f()) return;
		if (Date.now() > end) throw new Error(`timed out: ${what}`);
		await new Promise((r) => setTimeout(r, 20));
	}
}

describe('hook cache', () => {
	it('answers from the hooks it read, and sees a change made through Settings at once and one made elsewhere by its event', async () => {
		const h = await createHook(actor, { name: 'cached', kind: 'generic' });
		expect((await post(h.id, h.secret, alert(1))).status).toBe(202);

		// Changed behind the app's back (no event): the cache still answers with what it read — the
		// proof it is used; only MAX_AGE_MS or an event makes it read again.
		await sql()`update alert_hooks set secret_hash = 'ff' where id = ${h.id}`;
		expect((await post(h.id, h.secret, alert(2))).status).toBe(202);

		// Another process's change arrives as `hooks.changed` on the event log: the next delivery reads the hook again.
		await sql().begin((tx) => emitEvent(tx, { type: 'hooks.changed', payload: {} }));
		await until('the old secret is refused', async () => (await post(h.id, h.secret, alert(3))).status === 401);

		// Through Settings in this process: the new secret works and the old one is refused at once, no waiting.
		const rotated = await rotateHook(actor, h.id);
		expect((await post(h.id, rotated.secret, alert(4))).status).toBe(202);
		expect((await post(h.id, h.secret, alert(5))).status).toBe(401);
		await removeHook(actor, h.id);
		expect((await post(h.id, rotated.secret, alert(6))).status).toBe(404);
	});
});

describe('group commit', () => {
	it('stores a storm in fewer transactions than deliveries, each with its job', async () => {
		const h = await createHook(actor, { name: 'storm', kind: 'generic' });
		const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => post(h.id, h.secret, alert(`s${i}`))));
		expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
		const ids = answers.map((a) => String(a.body.deliveryId));
		const rows = await sql()<{ id: string; tx: string }[]>`select id, xmin::text as tx from alert_deliveries where id = any(${ids}::uuid[])`;
		expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
		expect(new Set(rows.map((r) => r.tx)).size).toBeLessThan(ids.length);
		expect((await jobs(INTAKE_TASK)).map((j) => String(j.payload.deliveryId)).sort()).toEqual([...ids].sort());
	});

	it('recognises a retry stored in the same group as the delivery it repeats, and a retry of a retry in a later one', async () => {
		const h = await createHook(actor, { name: 'retry', kind: 'generic' });
		const first = [delivery(h.id, 'a'), delivery(h.id, 'b'), delivery(h.id, 'b'), delivery(h.id, 'b')];
		const stored = await Promise.all(first.map((x) => writeDelivery(x)));
		const b = first[1].id;
		expect(stored.map((r) => r?.duplicateOf ?? null)).toEqual([null, null, b, b]);
		// Later, alone: the same body again is still a retry of the first b; another body is not, and b after it is new.
		const later = [delivery(h.id, 'b'), delivery(h.id, 'c'), delivery(h.id, 'b')];
		const again = [];
		for (const x of later) again.push(await writeDelivery(x));
		expect(again.map((r) => r?.duplicateOf ?? null)).toEqual([b, null, null]);

		const rows = await sql()<{ id: string; tx: string; duplicateOf: string | null }[]>`
			select id, xmin::text as tx, duplicate_of as "duplicateOf" from alert_deliveries where hook_id = ${h.id} order by received_at`;
		expect(rows.map((r) => r.id)).toEqual([...first, ...later].map((x) => x.id));
		expect(new Set(rows.slice(0, 4).map((r) => r.tx)).size).toBe(1);
		expect(rows.map((r) => r.duplicateOf)).toEqual([null, null, b, b, b, null, null]);
	});

	it('refuses only the delivery that cannot be stored when its group fails', async () => {
		const h = await createHook(actor, { name: 'mixed', kind: 'generic' });
		// A hook id with no row breaks the foreign key: that statement, hence the group's transaction, fails.
		const group = [delivery(h.id), delivery(h.id), delivery(randomUUID()), delivery(h.id)];
		const results = await Promise.allSettled(group.map((x) => writeDelivery(x)));
		expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
		const stored = await sql()<{ id: string }[]>`select id from alert_deliveries where id = any(${group.map((x) => x.id)}::uuid[])`;
		expect(stored.map((r) => r.id).sort()).toEqual([group[0].id, group[1].id, group[3].id].sort());
		expect((await jobs(INTAKE_TASK)).map((j) => String(j.payload.deliveryId)).sort()).toEqual(stored.map((r) => r.id).sort());
	});
});
