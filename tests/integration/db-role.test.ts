// Least privilege in the database (#28): Nomos's own processes connect as a role that owns
// nothing, so their connection cannot switch off or get around the audit trail's append-only
// protection. Real processes (the app's boot, its worker) on a real embedded data dir.
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBackup } from '../../src/lib/server/backup/backup';
import { restoreBackup } from '../../src/lib/server/backup/restore';
import { startEmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { runMigrations } from '../../src/lib/server/db/migrate';
import { APP_PASSWORD_FILE, APP_ROLE, ensureAppRole, grantAppRole, roleUrl } from '../../src/lib/server/db/roles';
import { ConfigError, parseEnv } from '../../src/lib/server/env';
import { migrateWorkerSchema } from '../../src/lib/server/jobs/worker';
import { createTestDatabase } from '../helpers/db';
import { waitUntil } from '../helpers/executions';
import { freePort } from '../helpers/ports';
import { spawnTs } from '../helpers/spawn';
import type { ChildProcess } from 'node:child_process';
import { scaled } from '../helpers/time';

const root = path.resolve('tests/.tmp', `db-role-${process.pid}`);
const dataDir = path.join(root, 'data');
const restoredDir = path.join(root, 'restored');
let port = 0;
const procs: ChildProcess[] = [];
const clients: postgres.Sql[] = [];

const superuserUrl = (dir: string, p: number) =>
	`postgres://postgres:${encodeURIComponent(readFileSync(path.join(dir, 'pg-password'), 'utf8').trim())}@127.0.0.1:${p}/postgres`;
const appUrl = (dir: string, p: number) => roleUrl(superuserUrl(dir, p), APP_ROLE, readFileSync(path.join(dir, APP_PASSWORD_FILE), 'utf8').trim());

function connect(url: string): postgres.Sql {
	const sql = postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: 'db-role-test' } });
	clients.push(sql);
	return sql;
}

/** A Nomos worker process (the app's boot and worker) with these database settings. */
function startNomos(env: Record<string, string>) {
	const child = spawnTs('tests/helpers/worker-child.ts', [], {
		env: {
			...process.env,
			DATABASE_URL: '',
			NOMOS_OWNER_DATABASE_URL: '',
			OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
			OPENAI_API_KEY: 'test',
			NOMOS_MODEL: 'scripted',
			NOMOS_INVENTORY_SYNC: 'off',
			NOMOS_HOSTS: '',
			NOMOS_KNOWLEDGE_DIR: '',
			NOMOS_OPERATOR_PASSWORD: '',
			...env
		}
	});
	procs.push(child);
	const log = { out: '' };
	child.stdout!.on('data', (d) => (log.out += d));
	child.stderr!.on('data', (d) => (log.out += d));
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
	const ready = waitUntil(
		async () => log.out.includes('worker ready') || exitedEarly(),
		() => `the worker to boot:\n${log.out}`,
		{
			timeoutMs: 90_000,
			intervalMs: 50
		}
	);
	function exitedEarly() {
		if (child.exitCode !== null) throw new Error(`the worker exited (${child.exitCode}):\n${log.out}`);
		return false;
	}
	const stop = async () => {
		child.kill('SIGTERM');
		expect(await exited, log.out).toEqual({ code: 0, signal: null });
	};
	return { log, ready, stop };
}

const embeddedEnv = (dir: string, p: number) => ({ NOMOS_DATA_DIR: dir, NOMOS_PG_PORT: String(p) });
const backupTarget = (dir: string, p: number) => ({ dataDir: dir, pgPort: p });

/** Everything the app's connection must be refused on an append-only table, and what it may do. */
async function expectAppendOnly(app: postgres.Sql, table: 'audit_log' | 'approvals') {
	await expect(app.unsafe(`alter table ${table} disable trigger user`)).rejects.toThrow(/must be owner/);
	await expect(app.unsafe(`alter table ${table} disable trigger all`)).rejects.toThrow(/must be owner/);
	await expect(app.unsafe(`delete from ${table}`)).rejects.toThrow(/permission denied/);
	await expect(app.unsafe(`update ${table} set id = id`)).rejects.toThrow(/permission denied/);
	await expect(app.unsafe(`truncate ${table}`)).rejects.toThrow(/permission denied/);
	await expect(app.unsafe(`drop table ${table}`)).rejects.toThrow(/must be owner/);
	await expect(app.unsafe(`create trigger sneaky before insert on ${table} for each row execute function nomos_append_only()`)).rejects.toThrow(
		/permission denied/
	);
}

/** Each table's grants and row policies, and the role: what a second start must leave as it was. */
async function rightsSnapshot(su: postgres.Sql) {
	return su`
		select (select json_agg(json_build_object('t', c.oid::regclass::text, 'acl', c.relacl::text) order by c.oid::regclass::text)
		        from pg_class c join pg_namespace n on n.oid = c.relnamespace
		        where n.nspname in ('public', 'drizzle', 'graphile_worker') and c.relkind in ('r', 'p', 'v', 'S')) as acls,
		       (select json_agg(json_build_object('t', tablename, 'p', policyname, 'roles', roles) order by tablename, policyname)
		        from pg_policies where schemaname = 'graphile_worker') as policies,
		       (select rolpassword from pg_authid where rolname = ${APP_ROLE}) as verifier`;
}

beforeAll(async () => {
	await fs.rm(root, { recursive: true, force: true });
	await fs.mkdir(root, { recursive: true, mode: 0o755 });
	await fs.chmod(root, 0o755);
	port = await freePort();
	// What an older Nomos left: one superuser for everything, no app role, an audit trail.
	const old = await startEmbeddedPostgres({ dataDir, port });
	await runMigrations(old.url);
	await migrateWorkerSchema(old.url);
	const su = postgres(old.url, { max: 1, onnotice: () => undefined });
	await su`insert into audit_log (action, route, detail) values ('test.before_upgrade', 'test', '{}')`;
	await su.end();
	await old.stop();
}, scaled(120_000));

afterAll(async () => {
	for (const c of clients) await c.end({ timeout: 1 }).catch(() => undefined);
	for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
	for (const dir of [dataDir, restoredDir]) {
		try {
			const pid = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
			if (pid > 0) process.kill(pid, 'SIGINT');
		} catch {
			// not running
		}
	}
	await fs.rm(root, { recursive: true, force: true });
});

describe('the embedded data dir', () => {
	it(
		"an older data dir is upgraded at boot: the app and its worker connect as nomos_app, which owns nothing and cannot touch the audit trail's protection",
		async () => {
			const nomos = startNomos(embeddedEnv(dataDir, port));
			await nomos.ready;
			expect(nomos.log.out).toContain(`role ${APP_ROLE} created`);
			expect(nomos.log.out).not.toContain('could switch off');
			expect(statSync(path.join(dataDir, APP_PASSWORD_FILE)).mode & 0o777).toBe(0o600);

			const su = connect(superuserUrl(dataDir, port));
			// Every connection of the Nomos process but the owner lock (embedded.js) is the app role's.
			// A backend still authenticating (a pool opening a connection just now) has no role yet.
			const conns = await su<Array<{ app: string; role: string }>>`
			select application_name as app, usename as role from pg_stat_activity
			where backend_type = 'client backend' and pid <> pg_backend_pid() and application_name not in ('nomos-owner', 'db-role-test')
				and usename is not null`;
			expect(conns.length).toBeGreaterThan(3);
			expect(new Set(conns.map((c) => c.role))).toEqual(new Set([APP_ROLE]));
			expect(conns.map((c) => c.app)).toEqual(expect.arrayContaining(['nomos', 'nomos-worker-life']));

			const [role] = await su`select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls from pg_roles where rolname = ${APP_ROLE}`;
			expect(role).toEqual({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false });
			const [owned] = await su`
			select (select count(*)::int from pg_class where relowner = r.oid) + (select count(*)::int from pg_namespace where nspowner = r.oid)
			     + (select count(*)::int from pg_proc where proowner = r.oid) + (select count(*)::int from pg_type where typowner = r.oid) as n
			from pg_roles r where rolname = ${APP_ROLE}`;
			expect(owned.n).toBe(0);

			const app = connect(appUrl(dataDir, port));
			await expectAppendOnly(app, 'audit_log');
			await expectAppendOnly(app, 'approvals');
			await expect(app`set session_replication_role = replica`).rejects.toThrow(/permission denied/);
			await expect(app`create table public.mine (x int)`).rejects.toThrow(/permission denied/);
			await expect(app`insert into graphile_worker.migrations (id) values (999999)`).rejects.toThrow(/permission denied/);
			// It can add to the trail, and what the older version wrote is still there.
			await app`insert into audit_log (action, route, detail) values ('test.after_upgrade', 'test', '{}')`;
			expect((await app<Array<{ action: string }>>`select action from audit_log where route = 'test' order by id`).map((r) => r.action)).toEqual([
				'test.before_upgrade',
				'test.after_upgrade'
			]);

			// LISTEN/NOTIFY as the app role (the event hub's doorbell and graphile-worker's wake-up).
			let heard!: (payload: string) => void;
			const got = new Promise<string>((resolve) => (heard = resolve));
			await app.listen('db_role_test', (payload) => heard(payload));
			await app`select pg_notify('db_role_test', 'ding')`;
			expect(await got).toBe('ding');

			// A job added as the app role is run by the worker (as the app role) and leaves the queue.
			await app`select graphile_worker.add_job('test__slow', ${JSON.stringify({ ms: 1 })}::json)`;
			await waitUntil(
				async () => nomos.log.out.includes('slow job finished'),
				() => `the job to run:\n${nomos.log.out}`,
				{ timeoutMs: 30_000 }
			);
			await waitUntil(
				async () => (await app`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'test__slow'`)[0].n === 0,
				'the job to leave the queue'
			);
			await nomos.stop();
		},
		scaled(180_000)
	);

	it(
		'a second start changes nothing: the same password, role and grants',
		async () => {
			const password = readFileSync(path.join(dataDir, APP_PASSWORD_FILE), 'utf8');
			const pg = await startEmbeddedPostgres({ dataDir, port });
			const su = postgres(pg.url, { max: 1, onnotice: () => undefined });
			const before = await rightsSnapshot(su);
			await su.end();
			await pg.stop();

			const nomos = startNomos(embeddedEnv(dataDir, port));
			await nomos.ready;
			expect(nomos.log.out).not.toContain(`role ${APP_ROLE} created`);
			expect(nomos.log.out).not.toContain(`role ${APP_ROLE} updated`);
			expect(readFileSync(path.join(dataDir, APP_PASSWORD_FILE), 'utf8')).toBe(password);
			const su2 = connect(superuserUrl(dataDir, port));
			expect(await rightsSnapshot(su2)).toEqual(before);
			await expectAppendOnly(connect(appUrl(dataDir, port)), 'audit_log');
			await nomos.stop();
		},
		scaled(180_000)
	);

	it(
		"a backup leaves the app role's password out; restored into a new data dir, the next start makes the role anew",
		async () => {
			const file = path.join(root, 'nomos.tar.gz');
			const b = await createBackup(backupTarget(dataDir, port), file);
			expect(b.manifest.dataFiles.map((f) => f.path)).not.toContain(APP_PASSWORD_FILE);

			const port2 = await freePort();
			await restoreBackup(file, backupTarget(restoredDir, port2));
			const nomos = startNomos(embeddedEnv(restoredDir, port2));
			await nomos.ready;
			expect(nomos.log.out).toContain(`role ${APP_ROLE} created`);
			const app = connect(appUrl(restoredDir, port2));
			expect((await app<Array<{ action: string }>>`select action from audit_log where route = 'test' order by id`).map((r) => r.action)).toEqual([
				'test.before_upgrade',
				'test.after_upgrade'
			]);
			await expectAppendOnly(app, 'audit_log');
			await nomos.stop();
		},
		scaled(240_000)
	);
});

describe('DATABASE_URL', () => {
	it(
		"alone: works as before, and the start-up log says once that its role could switch off the audit trail's triggers",
		async () => {
			const url = await createTestDatabase();
			const nomos = startNomos({ DATABASE_URL: url });
			await nomos.ready;
			expect(nomos.log.out.match(/could switch off the audit trail's append-only triggers/g)).toHaveLength(1);
			expect(nomos.log.out).toContain('NOMOS_OWNER_DATABASE_URL');
			await nomos.stop();
		},
		scaled(120_000)
	);

	it(
		"with NOMOS_OWNER_DATABASE_URL: migrations run as the owner, DATABASE_URL's role is granted the app's rights and nothing more",
		async () => {
			const ownerUrl = await createTestDatabase();
			const role = `nomos_ext_${randomBytes(4).toString('hex')}`;
			const password = randomBytes(12).toString('hex');
			const su = connect(ownerUrl);
			// What an operator does once: a login role with no rights of its own.
			await su.unsafe(`create role ${role} login password '${password}'`);
			const databaseUrl = roleUrl(ownerUrl, role, password);
			const nomos = startNomos({ DATABASE_URL: databaseUrl, NOMOS_OWNER_DATABASE_URL: ownerUrl });
			await nomos.ready;
			expect(nomos.log.out).not.toContain('could switch off');
			const conns = await su<Array<{ role: string }>>`
			select distinct usename as role from pg_stat_activity
			where datname = current_database() and backend_type = 'client backend' and application_name in ('nomos', 'nomos-worker-life')`;
			expect(conns).toEqual([{ role }]);
			const app = connect(databaseUrl);
			await expectAppendOnly(app, 'audit_log');
			await app`insert into audit_log (action, route, detail) values ('test.external', 'test', '{}')`;
			await app`select graphile_worker.add_job('test__slow', ${JSON.stringify({ ms: 1 })}::json)`;
			await waitUntil(
				async () => nomos.log.out.includes('slow job finished'),
				() => `the job to run:\n${nomos.log.out}`,
				{ timeoutMs: 30_000 }
			);
			await nomos.stop();
		},
		scaled(120_000)
	);
});

describe('the role and its grants, stated whole each time', () => {
	it('a role given more than it should have is brought back at the next start; a grant added by hand is taken away', async () => {
		const role = `nomos_t_${randomBytes(4).toString('hex')}`;
		const password = randomBytes(12).toString('hex');
		const admin = inject('pgAdminUrl');
		expect(await ensureAppRole(admin, password, role)).toBe('created');
		expect(await ensureAppRole(admin, password, role)).toBe('unchanged');
		const url = await createTestDatabase();
		const su = connect(url);
		await su.unsafe(`alter role ${role} superuser createrole; grant pg_read_all_data to ${role}`);
		expect(await ensureAppRole(admin, password, role)).toBe('updated');
		const [r] = await su`
			select rolsuper, rolcreaterole, (select count(*)::int from pg_auth_members m where m.member = a.oid) as memberships
			from pg_roles a where rolname = ${role}`;
		expect(r).toEqual({ rolsuper: false, rolcreaterole: false, memberships: 0 });
		// A new password (a data dir's file was replaced) is set; the old one stops working.
		expect(await ensureAppRole(admin, password + 'x', role)).toBe('updated');
		await expect(connect(roleUrl(url, role, password))`select 1`).rejects.toThrow(/password authentication failed/);

		await grantAppRole(url, role);
		await su.unsafe(`grant truncate, update, trigger on audit_log to ${role}`);
		await grantAppRole(url, role);
		const app = connect(roleUrl(url, role, password + 'x'));
		await expectAppendOnly(app, 'audit_log');
		const [rights] = await su`
			select has_table_privilege(${role}, 'audit_log', 'INSERT') as ins, has_table_privilege(${role}, 'messages', 'UPDATE') as upd,
			       has_table_privilege(${role}, 'messages', 'TRUNCATE') as trunc`;
		expect(rights).toEqual({ ins: true, upd: true, trunc: false });
	});

	it('NOMOS_OWNER_DATABASE_URL without DATABASE_URL is refused with one line naming it', () => {
		expect(() => parseEnv({ NOMOS_OWNER_DATABASE_URL: 'postgres://nomos@db/nomos' })).toThrow(ConfigError);
		expect(() => parseEnv({ NOMOS_OWNER_DATABASE_URL: 'postgres://nomos@db/nomos' })).toThrow(/^Invalid configuration: NOMOS_OWNER_DATABASE_URL /);
		expect(parseEnv({ DATABASE_URL: 'postgres://app@db/nomos', NOMOS_OWNER_DATABASE_URL: 'postgres://nomos@db/nomos' }).NOMOS_OWNER_DATABASE_URL).toBe(
			'postgres://nomos@db/nomos'
		);
	});
});
