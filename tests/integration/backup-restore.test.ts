// Backup and restore between two real embedded Postgres instances: rows of every kind Nomos keeps
// (operators, sessions, messages, executions, approvals, audit, knowledge, hosts), the SSH key a
// host names, a file under the data dir; then a restore into a fresh data dir and a start.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/lib/server/db/embedded';
import { runMigrations } from '../../src/lib/server/db/migrate';
import { createBackup, partialName } from '../../src/lib/server/backup/backup';
import { restoreBackup, RestoreRefused } from '../../src/lib/server/backup/restore';
import { freePort } from '../helpers/ports';
import { createTestDatabase } from '../helpers/db';
import { scaled } from '../helpers/time';

const root = path.resolve('tests/.tmp', `backup-${process.pid}`);
const dirA = path.join(root, 'a');
const dirB = path.join(root, 'b');
const keyPath = path.join(root, 'keys', 'id_ed25519');
const archive = path.join(root, 'nomos.tar.gz');
const running: EmbeddedPostgres[] = [];

async function withSql<T>(url: string, fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
	const sql = postgres(url, { max: 1, onnotice: () => undefined });
	try {
		return await fn(sql);
	} finally {
		await sql.end();
	}
}

const TABLES = ['operators', 'auth_sessions', 'chat_sessions', 'messages', 'executions', 'approvals', 'audit_log', 'knowledge', 'hosts', 'settings'];

/** Every row of the tables above, as text, in a stable order. */
async function snapshot(url: string): Promise<Record<string, string[]>> {
	return withSql(url, async (sql) => {
		const out: Record<string, string[]> = {};
		for (const t of TABLES) {
			const rows = await sql.unsafe<{ r: string }[]>(`select to_jsonb(t)::text as r from ${t} t order by 1`);
			out[t] = rows.map((x) => x.r);
		}
		return out;
	});
}

let a: EmbeddedPostgres;
let portA = 0;
let before: Record<string, string[]>;

beforeAll(async () => {
	await fs.rm(root, { recursive: true, force: true });
	await fs.mkdir(path.dirname(keyPath), { recursive: true });
	await fs.chmod(root, 0o755);
	await fs.writeFile(keyPath, '-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n-----END OPENSSH PRIVATE KEY-----\n', { mode: 0o600 });
	portA = await freePort();
	a = await startEmbeddedPostgres({ dataDir: dirA, port: portA });
	running.push(a);
	await runMigrations(a.url);
	await fs.writeFile(path.join(dirA, 'extra.json'), '{"kept":true}\n');
	await withSql(a.url, async (sql) => {
		const [op] = await sql<{ id: string }[]>`insert into operators (username, password_hash, role) values ('alice', '$argon2id$fake', 'admin') returning id`;
		await sql`insert into auth_sessions (token_hash, operator_id, expires_at) values ('abc', ${op.id}, now() + interval '1 day')`;
		const [s] = await sql<{ id: string }[]>`insert into chat_sessions (title, operator_id) values ('restart caddy', ${op.id}) returning id`;
		const parts = [{ type: 'text', text: 'line one\nline two\ttab \\ backslash ünïcødé' }];
		await sql`insert into messages (session_id, role, parts) values (${s.id}, 'user', ${sql.json(parts)})`;
		await sql`insert into messages (session_id, role, parts, status) values (${s.id}, 'assistant', ${sql.json([{ type: 'text', text: 'ok' }])}, 'complete')`;
		const [e] = await sql<{ id: string }[]>`
			insert into executions (requested_by_session, host_name, target, action, params, classification, hash, status)
			values (${s.id}, 'strong', 'lxc:strong/101', 'restart', ${sql.json({ vmid: 101 })}, 'config_mutation', 'h1', 'succeeded') returning id`;
		await sql`insert into approvals (execution_id, hash, decision, route, decided_by) values (${e.id}, 'h1', 'approved', 'button', ${op.id})`;
		await sql`insert into audit_log (actor_id, actor_name, action, route, subject_type, subject_id, session_id) values (${op.id}, 'alice', 'execution.approved', 'button', 'execution', ${e.id}, ${s.id})`;
		await sql`insert into audit_log (actor_name, action, route) values ('alice', 'login.succeeded', 'login')`;
		await sql`insert into knowledge (title, body) values ('caddy', 'Caddy runs in CT 101')`;
		await sql`insert into hosts (name, address, key_path, host_key_fingerprint) values ('strong', '192.0.2.10', ${keyPath}, ${'SHA256:' + 'A'.repeat(43)})`;
		await sql`insert into settings (key, value) values ('example', ${sql.json({ on: true })})`;
	});
	before = await snapshot(a.url);
}, scaled(120_000));

afterAll(async () => {
	for (const pg of running) await pg.stop().catch(() => undefined);
	await fs.rm(root, { recursive: true, force: true });
});

describe('backup and restore', () => {
	it(
		'round-trips every row, the SSH key and the data dir files into a fresh data dir',
		async () => {
			// Nomos keeps running (a is up) while the backup reads one consistent snapshot.
			const b = await createBackup({ dataDir: dirA, pgPort: portA }, archive);
			expect(b.manifest.tables.find((t) => t.name === 'messages')?.rows).toBe(2);
			expect(b.manifest.tables.find((t) => t.name === 'audit_log')?.rows).toBe(2);
			expect(b.manifest.tables.map((t) => t.name)).not.toContain('worker_processes');
			expect((await fs.stat(archive)).mode & 0o777).toBe(0o600);
			// a plain gzipped tar that the system's tar reads
			const { stdout } = await promisify(execFile)('tar', ['tzf', archive]);
			expect(stdout.split('\n')).toEqual(expect.arrayContaining(['manifest.json', 'db/messages.copy', 'keys/0-id_ed25519', 'data/extra.json']));
			// the running server was reused, not stopped
			expect(await withSql(a.url, async (sql) => (await sql`select 1 as one`)[0].one)).toBe(1);

			// The machine is lost: the key goes with it.
			await fs.rm(keyPath);
			const port = await freePort();
			const r = await restoreBackup(archive, { dataDir: dirB, pgPort: port });
			expect(r.keys).toEqual([{ path: keyPath, outcome: 'written' }]);
			expect(await fs.readFile(keyPath, 'utf8')).toContain('not a real key');
			expect(await fs.readFile(path.join(dirB, 'extra.json'), 'utf8')).toBe('{"kept":true}\n');
			// restore left its server stopped; start it as Nomos would
			expect(existsSync(path.join(dirB, 'pg', 'postmaster.pid'))).toBe(false);
			const bPg = await startEmbeddedPostgres({ dataDir: dirB, port });
			running.push(bPg);
			await runMigrations(bPg.url);
			expect(await snapshot(bPg.url)).toEqual(before);
			// generated columns were recomputed, sequences continue after the restored ids
			await withSql(bPg.url, async (sql) => {
				expect(await sql`select title from knowledge where search @@ to_tsquery('english', 'caddy')`).toEqual([{ title: 'caddy' }]);
				const [{ id }] = await sql<{ id: string }[]>`insert into audit_log (action, route) values ('backup.test', 'system') returning id::text`;
				expect(Number(id)).toBe(3);
				// the append-only trigger is back in force
				await expect(sql`delete from audit_log`).rejects.toThrow();
			});
		},
		scaled(120_000)
	);

	it(
		'with DATABASE_URL: backs up that database and restores into an empty one, refusing a used one',
		async () => {
			const ext = path.join(root, 'external.tar.gz');
			const b = await createBackup({ databaseUrl: a.url, dataDir: path.join(root, 'unused'), pgPort: 1 }, ext);
			expect(b.manifest.source).toBe('external');
			expect(b.manifest.dataFiles).toEqual([]);
			const empty = await createTestDatabase({ empty: true });
			await restoreBackup(ext, { databaseUrl: empty, dataDir: path.join(root, 'unused'), pgPort: 1 });
			expect(await snapshot(empty)).toEqual(before);
			// a database with Nomos's tables in it is not overwritten
			await expect(restoreBackup(ext, { databaseUrl: empty, dataDir: path.join(root, 'unused'), pgPort: 1 })).rejects.toThrow(
				/DATABASE_URL names is not empty/
			);
			expect(existsSync(path.join(root, 'unused'))).toBe(false);
		},
		scaled(120_000)
	);

	it(
		'with DATABASE_URL as a role that is no superuser (a managed Postgres): loads with triggers on, every row there',
		async () => {
			const ext = path.join(root, 'for-owner.tar.gz');
			await createBackup({ databaseUrl: a.url, dataDir: path.join(root, 'unused'), pgPort: 1 }, ext);
			await withSql(a.url, async (sql) => {
				await sql.unsafe(`create role nomos_owner login password 'owner-pw' nosuperuser nocreatedb nocreaterole`);
				await sql.unsafe('create database owned_by_nomos owner nomos_owner');
			});
			const owner = new URL(a.url);
			owner.username = 'nomos_owner';
			owner.password = 'owner-pw';
			owner.pathname = '/owned_by_nomos';
			const lines: string[] = [];
			await restoreBackup(ext, { databaseUrl: owner.href, dataDir: path.join(root, 'unused'), pgPort: 1 }, (l) => lines.push(l));
			expect(lines.join('\n')).toContain('not a superuser');
			expect(await snapshot(owner.href)).toEqual(before);
			await withSql(owner.href, async (sql) => {
				const [{ superuser }] = await sql<{ superuser: boolean }[]>`select rolsuper as superuser from pg_roles where rolname = current_user`;
				expect(superuser).toBe(false);
				// the append-only audit trail is in force for the owner too
				await expect(sql`delete from audit_log`).rejects.toThrow();
			});
		},
		scaled(120_000)
	);

	it('refuses a data dir that is not empty, and says so', async () => {
		await expect(restoreBackup(archive, { dataDir: dirA, pgPort: 1 })).rejects.toThrow(RestoreRefused);
		await expect(restoreBackup(archive, { dataDir: dirA, pgPort: 1 })).rejects.toThrow(/is not empty: restore loads into an empty data dir/);
		// nothing in it was touched
		expect(existsSync(path.join(dirA, 'pg', 'PG_VERSION'))).toBe(true);
	});

	it('refuses a backup from a newer Nomos (a migration this code does not have)', async () => {
		const { extractTarGz, writeTarGz } = await import('../../src/lib/server/backup/tar');
		const unpacked = path.join(root, 'unpacked');
		const names = await extractTarGz(archive, unpacked);
		const m = JSON.parse(await fs.readFile(path.join(unpacked, 'manifest.json'), 'utf8')) as { migrations: Array<{ hash: string; createdAt: string }> };
		m.migrations.push({ hash: 'future', createdAt: String(Date.now() + 1e12) });
		await fs.writeFile(path.join(unpacked, 'manifest.json'), JSON.stringify(m));
		const newer = path.join(root, 'newer.tar.gz');
		await writeTarGz(
			newer,
			names.map((n) => ({ name: n, file: path.join(unpacked, n) }))
		);
		await expect(restoreBackup(newer, { dataDir: path.join(root, 'c'), pgPort: 1 })).rejects.toThrow(/made by a newer Nomos/);
		expect(existsSync(path.join(root, 'c'))).toBe(false);
	});
});

describe('a table bigger than one archive entry', () => {
	it(
		'is cut into parts (a version 2 archive) and restores row for row',
		async () => {
			const src = await createTestDatabase();
			await withSql(
				src,
				(sql) => sql`insert into knowledge (title, body) select 'page ' || g, repeat('ünïcødé \\ tab	', g % 40) from generate_series(1, 2000) g`
			);
			const file = path.join(root, 'parts.tar.gz');
			const b = await createBackup({ databaseUrl: src, dataDir: path.join(root, 'unused'), pgPort: 1 }, file, undefined, { partBytes: 16 * 1024 });
			const k = b.manifest.tables.find((t) => t.name === 'knowledge')!;
			expect(k.rows).toBe(2000);
			expect(k.parts?.length).toBeGreaterThan(3);
			expect(b.manifest.version).toBe(2);
			const { stdout } = await promisify(execFile)('tar', ['tzf', file]);
			expect(stdout.split('\n')).toEqual(expect.arrayContaining(['db/knowledge.copy', 'db/knowledge.2.copy', 'manifest.json']));
			const dest = await createTestDatabase({ empty: true });
			await restoreBackup(file, { databaseUrl: dest, dataDir: path.join(root, 'unused'), pgPort: 1 });
			const rows = (url: string) => withSql(url, (sql) => sql<{ r: string }[]>`select to_jsonb(k)::text as r from knowledge k order by id`);
			expect(await rows(dest)).toEqual(await rows(src));
		},
		scaled(120_000)
	);

	it(
		'stops when aborted and leaves no partial file',
		async () => {
			const src = await createTestDatabase();
			await withSql(src, (sql) => sql`insert into knowledge (title, body) select 'page ' || g, repeat('x', 500) from generate_series(1, 2000) g`);
			const file = path.join(root, 'aborted.tar.gz');
			const aborter = new AbortController();
			let entries = 0;
			const backup = createBackup({ databaseUrl: src, dataDir: path.join(root, 'unused'), pgPort: 1 }, file, undefined, {
				signal: aborter.signal,
				partBytes: 4096,
				// the first parts are in the archive: stop in the middle of the biggest table
				onEntry: (name) => {
					if (name.startsWith('db/knowledge') && ++entries === 3) aborter.abort(new Error('stop'));
				}
			});
			await expect(backup).rejects.toThrow('stop');
			expect(existsSync(file)).toBe(false);
			expect(existsSync(partialName(file))).toBe(false);
		},
		scaled(60_000)
	);

	it(
		'a failure while writing mid-COPY is the error reported, and no partial file stays',
		async () => {
			const src = await createTestDatabase();
			await withSql(src, (sql) => sql`insert into knowledge (title, body) select 'page ' || g, repeat('x', 500) from generate_series(1, 2000) g`);
			const file = path.join(root, 'failed.tar.gz');
			let entries = 0;
			const backup = createBackup({ databaseUrl: src, dataDir: path.join(root, 'unused'), pgPort: 1 }, file, undefined, {
				partBytes: 4096,
				onEntry: (name) => {
					if (name.startsWith('db/knowledge') && ++entries === 3) throw new Error('ENOSPC: no space left on device (simulated)');
				}
			});
			await expect(backup).rejects.toThrow('ENOSPC');
			expect(existsSync(partialName(file))).toBe(false);
		},
		scaled(60_000)
	);
});
