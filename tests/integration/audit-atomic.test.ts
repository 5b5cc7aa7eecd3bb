// An audited change and its audit entry commit together or not at all: with the audit insert
// made to fail (a trigger, in the real Postgres), host changes and an operator's Retry / Roll back
// request leave nothing behind; without it, each is there with its entry, naming the token when
// one was used.
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertApiToken, type ApiTokenAuth } from '../../src/lib/server/db/queries/api-tokens';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { appRouter } from '../../src/lib/server/trpc/router';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

type Who = { id: string; username: string; role: 'admin' | 'operator' };
let admin: Who;
let pve: ProxmoxDouble;
const caller = (user: Who, apiToken: ApiTokenAuth | null = null) =>
	createCallerFactory(appRouter)({ user, apiToken, event: { locals: { sessionToken: null } } as unknown as RequestEvent });

beforeAll(async () => {
	admin = { id: await newOperator('root-admin'), username: 'root-admin', role: 'admin' };
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'web', status: 'running' }] });
	await addHost(pve);
	await syncAllHosts();
});

afterAll(async () => {
	await pve?.close();
});

/** Makes every audit insert of `action` fail, as a full disk or a crash at that moment would. */
async function failAudits(action: string) {
	await sql().unsafe(`
		create or replace function test_fail_audit() returns trigger language plpgsql as $$
		begin raise exception 'audit refused (test)'; end $$`);
	await sql().unsafe(
		`create trigger test_fail_audit before insert on audit_log for each row when (new.action = '${action}') execute function test_fail_audit()`
	);
}
afterEach(async () => {
	await sql().unsafe('drop trigger if exists test_fail_audit on audit_log');
});

const audits = async (action: string) =>
	await sql()<
		{ subjectId: string; detail: Record<string, unknown> }[]
	>`select subject_id as "subjectId", detail from audit_log where action = ${action} order by id`;
const hostNames = async () => (await sql()<{ name: string }[]>`select name from hosts order by name`).map((h) => h.name);

describe('audited changes commit with their audit entry', () => {
	it('adding, changing and removing a host', async () => {
		const hosts = caller(admin).hosts;
		const input = { name: 'spare', address: '10.0.0.9', port: 22, username: 'root', keyPath: '/keys/spare' };

		await failAudits('host.created');
		await expect(hosts.create(input)).rejects.toThrow();
		expect(await hostNames()).toEqual(['strong']);
		await sql().unsafe('drop trigger test_fail_audit on audit_log');
		const row = await hosts.create(input);
		expect(await hostNames()).toEqual(['spare', 'strong']);
		expect((await audits('host.created')).map((a) => a.subjectId)).toEqual(['spare']);

		await failAudits('host.updated');
		await expect(hosts.update({ id: row.id, host: { ...input, address: '10.0.0.10' } })).rejects.toThrow();
		const [still] = await sql()<{ address: string }[]>`select address from hosts where id = ${row.id}`;
		expect(still.address).toBe('10.0.0.9');
		await sql().unsafe('drop trigger test_fail_audit on audit_log');

		await failAudits('host.removed');
		await expect(hosts.remove({ id: row.id })).rejects.toThrow();
		expect(await hostNames()).toEqual(['spare', 'strong']);
		await sql().unsafe('drop trigger test_fail_audit on audit_log');
		await hosts.remove({ id: row.id });
		expect(await hostNames()).toEqual(['strong']);
		expect((await audits('host.removed')).map((a) => a.subjectId)).toEqual(['spare']);

		// Two admins remove the same host at the same moment: one removes it, the other is told it is gone; one entry.
		const twice = await hosts.create({ ...input, name: 'twice' });
		const outcomes = await Promise.allSettled([hosts.remove({ id: twice.id }), caller(admin).hosts.remove({ id: twice.id })]);
		expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
		expect(String((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason)).toContain('No such host.');
		expect((await audits('host.removed')).map((a) => a.subjectId)).toEqual(['spare', 'twice']);
	});

	it('a Retry: no retry without its entry; with it, the entry names the new execution and the token', async () => {
		const sessionId = await newSession(admin.id, 'retry');
		// pct_start of a running CT fails its precondition: a failed execution, nothing touched.
		const r = await requestExecution(sessionId, { target: 'lxc:strong/100', action: 'pct_start', params: {}, reason: 'start web' });
		if ('error' in r) throw new Error(r.error);
		expect((await decide(r.execution.id, admin.id, 'approved')).ok).toBe(true);
		await runExecution(r.execution.id);
		const [failed] = await sql()<{ status: string }[]>`select status from executions where id = ${r.execution.id}`;
		expect(failed.status).toBe('failed');

		const laptop = await insertApiToken(sql(), admin.id, { name: 'laptop', scope: 'operate', days: 7 });
		const viaToken = caller(admin, { id: laptop.listing.id, name: 'laptop', scope: 'operate' }).executions;
		await failAudits('execution.retry_requested');
		await expect(viaToken.retry({ executionId: r.execution.id })).rejects.toThrow();
		const retries = async () => sql()<{ id: string }[]>`select id from executions where retry_of = ${r.execution.id}`;
		expect(await retries()).toEqual([]);
		await sql().unsafe('drop trigger test_fail_audit on audit_log');

		const retry = await viaToken.retry({ executionId: r.execution.id });
		expect((await retries()).map((x) => x.id)).toEqual([retry.id]);
		const [entry] = await audits('execution.retry_requested');
		expect(entry.subjectId).toBe(retry.id);
		expect(entry.detail).toMatchObject({ retryOf: r.execution.id, action: 'pct_start', target: 'lxc:strong/100', token: { name: 'laptop' } });
	});
});
