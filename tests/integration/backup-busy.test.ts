// `npm run backup` against a running, busy Nomos, as real processes: a worker serving turns, a
// writer committing rows into copied tables, and the backup script itself. The backup finishes,
// holds one consistent snapshot, and a SIGTERM or SIGINT in the middle leaves nothing behind.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { RequestEvent } from '@sveltejs/kit';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreBackup } from '../../src/lib/server/backup/restore';
import { sql } from '../../src/lib/server/db/index';
import { countLiveWorkers } from '../../src/lib/server/db/queries/workers';
import { chatRouter } from '../../src/lib/server/trpc/routers/chat';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { createTestDatabase, useTestDatabase } from '../helpers/db';
import { newOperator, waitUntil } from '../helpers/executions';
import { QUIET_WORKER_ENV, startTs, type ChildExit } from '../helpers/spawn';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
const root = path.resolve('tests/.tmp', `backup-busy-${process.pid}`);
/** The backup's TMPDIR: whatever it would stage there is visible to the test. */
const tmp = path.join(root, 'tmp');
const out = path.join(root, 'out');
const SECRET = 'tokenhash-that-must-not-leak-0123456789abcdef';
let llm: ScriptedLlm;
const children: ChildProcess[] = [];

function start(file: string, args: string[], env: Record<string, string>) {
	const c = startTs(file, args, { DATABASE_URL: dbUrl(), ...env });
	children.push(c.child);
	return c;
}

const startBackup = (file: string) => start('scripts/backup.ts', [file], { NOMOS_DATA_DIR: path.join(root, 'unused'), TMPDIR: tmp });

/** What the backup's connection is doing, for a failure message. */
async function backupActivity(): Promise<string> {
	const rows = await sql()<{ state: string; wait: string | null; query: string }[]>`
		select state, wait_event_type || ':' || wait_event as wait, left(query, 120) as query
		from pg_stat_activity where application_name = 'nomos-backup'`;
	return JSON.stringify(rows);
}

async function exitWithin(p: { exited: Promise<ChildExit>; log: { out: string } }, ms: number) {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
	const r = await Promise.race([p.exited, late]).finally(() => clearTimeout(timer));
	if (!r) throw new Error(`the backup did not finish within ${ms} ms; its connection: ${await backupActivity()}\n${p.log.out}`);
	return r;
}

/** Anything a backup left under `dir`: a nomos-backup-* entry, a partial archive, a file holding the secret. */
async function leftovers(dir: string): Promise<string[]> {
	const found: string[] = [];
	for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
		const full = path.join(e.parentPath, e.name);
		if (e.name.startsWith('nomos-backup-') || e.name.endsWith('.partial')) found.push(full);
		else if (e.isFile() && (await fs.readFile(full)).includes(SECRET)) found.push(full);
	}
	return found;
}

beforeAll(async () => {
	await fs.rm(root, { recursive: true, force: true });
	await fs.mkdir(tmp, { recursive: true });
	await fs.mkdir(out, { recursive: true });
	llm = await startScriptedLlm();
	llm.setFallback(() => ({ text: 'Caddy restarts nightly at 03:00.', chunkSize: 4 }));
	// Tables of a few dozen to a few hundred KiB: a COPY's last rows and its end then arrive in
	// one read, the case that wedged postgres.js's connection.
	const s = sql();
	const [op] = await s<{ id: string }[]>`insert into operators (username, password_hash, role) values ('busy', '$argon2id$fake', 'admin') returning id`;
	await s`insert into auth_sessions (token_hash, operator_id, expires_at) values (${SECRET}, ${op.id}, now() + interval '1 day')`;
	await s`insert into api_tokens (operator_id, name, scope, token_hash, hint) values (${op.id}, 'ci', 'read', ${SECRET + '-pat'}, 'nomos_pat_ab')`;
	await s`insert into webhooks (name, kind, url) values ('phone', 'ntfy', ${'https://ntfy.example/' + SECRET})`;
	await s`insert into events (type, payload) select 'seed', jsonb_build_object('i', g, 'pad', repeat('e', 120)) from generate_series(1, 3000) g`;
	await s`insert into audit_log (action, route, detail) select 'seed', 'system', jsonb_build_object('i', g, 'pad', repeat('a', 80)) from generate_series(1, 1000) g`;
	await s`insert into knowledge (title, body) select 'page ' || g, repeat('knowledge ', 30) from generate_series(1, 600) g`;
	await s`insert into chat_sessions (title, operator_id) select 'chat ' || g, ${op.id} from generate_series(1, 800) g`;
}, scaled(60_000));

afterAll(async () => {
	for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
	await llm?.close();
	await fs.rm(root, { recursive: true, force: true });
});

describe('npm run backup against a busy instance', () => {
	it(
		'finishes while a worker serves turns and a writer commits, with one consistent snapshot',
		async () => {
			const operatorId = await newOperator('busy-admin');
			const chat = createCallerFactory(chatRouter)({ user: { id: operatorId, username: 'busy-admin', role: 'admin' }, event: {} as RequestEvent } as never);
			const worker = start('tests/helpers/worker-child.ts', [], {
				...QUIET_WORKER_ENV,
				OPENAI_BASE_URL: llm.baseURL,
				OPENAI_API_KEY: 'test',
				NOMOS_MODEL: 'scripted'
			});
			await waitUntil(
				async () => (await countLiveWorkers(sql())) === 1,
				() => `the worker to announce itself:\n${worker.log.out}`,
				{ timeoutMs: 30_000 }
			);
			const writer = start('tests/helpers/backup-writer-child.ts', [], {});
			await waitUntil(
				async () => writer.log.out.includes('writing'),
				() => `the writer to start:\n${writer.log.out}`,
				{ timeoutMs: 30_000 }
			);

			// Turns one after another until the backup is over.
			let serving = true;
			let turns = 0;
			let sessionId: string | undefined;
			const answered = async () => {
				const [{ n }] = await sql()<{ n: number }[]>`
				select count(*)::int as n from messages where session_id = ${sessionId!} and role = 'assistant' and status = 'complete'`;
				return n;
			};
			const turnLoop = (async () => {
				while (serving) {
					const before = sessionId ? await answered() : 0;
					sessionId = (await chat.send({ sessionId, text: `when does caddy restart? (${turns})` })).sessionId;
					await waitUntil(
						async () => (await answered()) > before,
						() => `turn ${turns} to be answered:\n${worker.log.out}`,
						{ timeoutMs: 30_000 }
					);
					turns++;
				}
			})();
			await waitUntil(
				async () => turns >= 1,
				() => `a first turn:\n${worker.log.out}`,
				{ timeoutMs: 60_000 }
			);

			const [{ at: startedAt }] = await sql()<{ at: Date }[]>`select clock_timestamp() as at`;
			const archive = path.join(out, 'busy.tar.gz');
			const backup = startBackup(archive);
			let r: Awaited<ReturnType<typeof exitWithin>>;
			try {
				r = await exitWithin(backup, 60_000);
			} finally {
				serving = false;
				await turnLoop;
			}
			const [{ at: endedAt }] = await sql()<{ at: Date }[]>`select clock_timestamp() as at`;
			writer.child.kill('SIGTERM');
			await writer.exited;
			worker.child.kill('SIGTERM');
			await worker.exited;

			expect(r, backup.log.out).toEqual({ code: 0, signal: null });
			expect((await fs.stat(archive)).mode & 0o777).toBe(0o600);
			expect((await fs.readdir(out)).filter((n) => n.endsWith('.partial'))).toEqual([]);
			expect(await leftovers(tmp)).toEqual([]);
			// The instance really was busy: the writer committed while the backup ran.
			const [{ during }] = await sql()<{ during: number }[]>`
			select count(*)::int as during from events where type = 'assent.updated' and created_at between ${startedAt} and ${endedAt}`;
			expect(during).toBeGreaterThan(0);

			// The archive restores, and holds both rows of every writer transaction or neither.
			const restored = await createTestDatabase({ empty: true });
			await restoreBackup(archive, { databaseUrl: restored, dataDir: path.join(root, 'unused'), pgPort: 1 });
			const copy = postgres(restored, { max: 1, onnotice: () => undefined });
			try {
				const events = await copy<{ tag: string }[]>`select payload->>'by' as tag from events where type = 'assent.updated' order by 1`;
				const audits = await copy<{ tag: string }[]>`select detail->>'tag' as tag from audit_log where action = 'backup.test' order by 1`;
				expect(events.length).toBeGreaterThan(0);
				expect(audits).toEqual(events);
				const [{ seeded }] = await copy<{ seeded: number }[]>`select count(*)::int as seeded from events where type = 'seed'`;
				expect(seeded).toBe(3000);
			} finally {
				await copy.end();
			}
			const [{ live }] = await sql()<{ live: number }[]>`select count(*)::int as live from events where type = 'assent.updated'`;
			expect(live).toBeGreaterThan(0);
		},
		scaled(180_000)
	);

	it.each([
		['SIGTERM', 143],
		['SIGINT', 130]
	] as const)(
		'%s in the middle of a COPY: no archive, no partial file, nothing in the temp folder',
		async (signal, code) => {
			// A table copied after auth_sessions, api_tokens and webhooks (it references them), held
			// under an exclusive lock: the backup waits in its COPY, with the secret tables read.
			const gate = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
			try {
				await gate.unsafe(`create table if not exists zz_backup_gate (
				token_hash text references auth_sessions(token_hash),
				token_id uuid references api_tokens(id),
				webhook_id uuid references webhooks(id))`);
				const dir = path.join(out, signal);
				await fs.mkdir(dir);
				const archive = path.join(dir, 'stopped.tar.gz');
				let backup: ReturnType<typeof startBackup> | undefined;
				let exit: Awaited<ReturnType<typeof exitWithin>> | undefined;
				await gate.begin(async (tx) => {
					await tx`lock table zz_backup_gate in access exclusive mode`;
					backup = startBackup(archive);
					await waitUntil(
						async () => {
							// (another connection: inside a transaction pg_stat_activity is read once)
							const [row] = await sql()<{ n: number }[]>`
							select count(*)::int as n from pg_stat_activity
							where application_name = 'nomos-backup' and wait_event_type = 'Lock' and query ilike 'copy "zz_backup_gate"%'`;
							return row.n === 1;
						},
						() => `the backup to wait on the gate:\n${backup?.log.out}`,
						{ timeoutMs: 30_000 }
					);
					backup.child.kill(signal);
					exit = await exitWithin(backup, 30_000);
				});
				const left = [...(await leftovers(dir)), ...(await leftovers(tmp))];
				expect({ exit, left, archive: existsSync(archive) }, backup!.log.out).toEqual({ exit: { code, signal: null }, left: [], archive: false });
				// Its connection is gone too: nothing holds a snapshot on the instance.
				await waitUntil(async () => {
					const [row] = await gate<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where application_name = 'nomos-backup'`;
					return row.n === 0;
				}, 'the backup connection to close');
			} finally {
				await gate.unsafe('drop table if exists zz_backup_gate');
				await gate.end();
			}
		},
		90_000
	);

	it(
		'SIGKILL in the middle of a COPY leaves a partial file; the next backup into that folder removes it',
		async () => {
			const gate = postgres(dbUrl(), { max: 1, onnotice: () => undefined });
			try {
				await gate.unsafe(`create table if not exists zz_backup_gate (token_hash text references auth_sessions(token_hash))`);
				const dir = path.join(out, 'SIGKILL');
				await fs.mkdir(dir);
				let killed: ReturnType<typeof startBackup> | undefined;
				await gate.begin(async (tx) => {
					await tx`lock table zz_backup_gate in access exclusive mode`;
					killed = startBackup(dir);
					await waitUntil(
						async () => {
							const [row] = await sql()<{ n: number }[]>`
						select count(*)::int as n from pg_stat_activity
						where application_name = 'nomos-backup' and wait_event_type = 'Lock' and query ilike 'copy "zz_backup_gate"%'`;
							return row.n === 1;
						},
						() => `the backup to wait on the gate:\n${killed?.log.out}`,
						{ timeoutMs: 30_000 }
					);
					killed.child.kill('SIGKILL');
					expect((await exitWithin(killed, 30_000)).signal).toBe('SIGKILL');
				});
				// No handler ran: the partial archive, with the secret tables in it, stays behind.
				const stale = (await fs.readdir(dir)).filter((n) => n.endsWith('.partial'));
				expect(stale).toEqual([expect.stringMatching(new RegExp(`\\.${killed!.pid}\\.partial$`))]);
				const next = startBackup(dir);
				expect(await exitWithin(next, 60_000), next.log.out).toEqual({ code: 0, signal: null });
				expect(next.log.out).toContain('a partial archive whose backup was killed');
				const names = await fs.readdir(dir);
				expect(names.filter((n) => n.endsWith('.partial'))).toEqual([]);
				expect(names).toEqual([expect.stringMatching(/^nomos-backup-.+\.tar\.gz$/)]);
			} finally {
				await gate.unsafe('drop table if exists zz_backup_gate');
				await gate.end();
			}
		},
		scaled(120_000)
	);
});
