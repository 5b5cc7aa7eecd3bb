import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { runMigrations } from '../../src/lib/server/db/migrate';
import { createTestDatabase } from '../helpers/db';
import { spawnTs } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const EXPECTED_TABLES = [
	'alert_deliveries',
	'alert_groups',
	'alert_hooks',
	'allow_rules',
	'api_tokens',
	'approvals',
	'assent_windows',
	'audit_log',
	'auth_sessions',
	'chat_sessions',
	'entities',
	'entity_gone',
	'events',
	'execution_sessions',
	'executions',
	'findings',
	'history_summaries',
	'hosts',
	'incidents',
	'knowledge',
	'login_throttle',
	'message_facts',
	'messages',
	'operators',
	'plans',
	'qualifications',
	'replay_cases',
	'schedule_runs',
	'schedules',
	'session_activity',
	'session_facts',
	'session_questions',
	'settings',
	'storage_samples',
	'tasks',
	'webhook_deliveries',
	'webhooks',
	'worker_processes'
];

async function tables(url: string): Promise<string[]> {
	const sql = postgres(url, { max: 1 });
	try {
		const rows = await sql<{ table_name: string }[]>`
			select table_name from information_schema.tables where table_schema = 'public' order by 1`;
		return rows.map((r) => r.table_name);
	} finally {
		await sql.end();
	}
}

async function appliedCount(url: string): Promise<number> {
	const sql = postgres(url, { max: 1 });
	try {
		const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
		return row.n;
	} finally {
		await sql.end();
	}
}

function migrateInChild(url: string): Promise<{ code: number | null; out: string }> {
	return new Promise((resolve) => {
		const child = spawnTs('tests/helpers/migrate-child.ts', [url]);
		let out = '';
		child.stdout!.on('data', (d) => (out += d));
		child.stderr!.on('data', (d) => (out += d));
		child.on('exit', (code) => resolve({ code, out }));
	});
}

describe('migrations', () => {
	it('create the whole schema on an empty database', async () => {
		const url = await createTestDatabase({ empty: true });
		expect(await tables(url)).toEqual([]);
		await runMigrations(url);
		expect(await tables(url)).toEqual(EXPECTED_TABLES);
		const sql = postgres(url, { max: 1 });
		const triggers = await sql`select tgname from pg_trigger where tgname = 'events_commit_order'`;
		await sql.end();
		expect(triggers).toHaveLength(1);
	});

	it('are a no-op on an existing, migrated database and keep its data', async () => {
		const url = await createTestDatabase();
		const sql = postgres(url, { max: 1 });
		await sql`insert into knowledge (title, body) values ('kept', 'survives a re-run')`;
		const before = await appliedCount(url);
		await runMigrations(url);
		expect(await appliedCount(url)).toBe(before);
		const rows = await sql`select title from knowledge`;
		await sql.end();
		expect(rows.map((r) => r.title)).toEqual(['kept']);
	});

	it('recognise an up-to-date database with one read: no lock, no migrator; one new migration still runs', async () => {
		const url = await createTestDatabase();
		const holder = postgres(url, { max: 1 });
		// Another process mid-migration holds the lock; a start on an up-to-date database does not wait for it.
		await holder`select pg_advisory_lock(7140202611)`;
		try {
			const quick = await Promise.race([runMigrations(url).then(() => 'done'), new Promise((r) => setTimeout(() => r('waited for the lock'), 3000))]);
			expect(quick).toBe('done');
		} finally {
			await holder`select pg_advisory_unlock(7140202611)`;
		}
		// The newest migration not yet applied (as after an upgrade): the migrator runs it again.
		const [last] = await holder<{ id: number }[]>`select id from drizzle.__drizzle_migrations order by created_at desc limit 1`;
		await holder`delete from drizzle.__drizzle_migrations where id = ${last.id}`;
		const before = await appliedCount(url);
		// Its DDL already exists here, so the migrator either fails on it or (idempotent DDL) records it again.
		const outcome = await runMigrations(url).then(
			() => 'ran',
			(e: Error) => (/already exists/.test(`${e.message} ${(e.cause as Error | undefined)?.message}`) ? 'ran' : e.message)
		);
		const after = await appliedCount(url);
		await holder.end();
		expect(outcome).toBe('ran');
		if (after !== before) expect(after).toBe(before + 1);
	});

	it(
		'serialise when two processes migrate the same empty database at once',
		async () => {
			const url = await createTestDatabase({ empty: true });
			const [a, b] = await Promise.all([migrateInChild(url), migrateInChild(url)]);
			expect(a.code, a.out).toBe(0);
			expect(b.code, b.out).toBe(0);
			expect(await tables(url)).toEqual(EXPECTED_TABLES);
			const count = await appliedCount(url);
			const sql = postgres(url, { max: 1 });
			const [{ n }] = await sql<{ n: number }[]>`select count(distinct hash)::int as n from drizzle.__drizzle_migrations`;
			await sql.end();
			expect(count).toBe(n);
		},
		scaled(60_000)
	);
});
