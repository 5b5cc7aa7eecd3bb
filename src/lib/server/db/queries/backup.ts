import type { Writable, Readable } from 'node:stream';
import type { Sql, TransactionSql } from '../index';
import type { hosts } from '../schema';

/** Tables a backup leaves out: worker heartbeats belong to processes, not to the data. */
const NOT_BACKED_UP = new Set(['worker_processes']);

export interface TableShape {
	name: string;
	/** Stored columns in order (generated columns are recomputed on load). */
	columns: string[];
}

/**
 * Nomos's tables (schema public) with their stored columns, parents before children (foreign
 * keys), so a load in this order satisfies every reference as it goes.
 */
export async function listBackupTables(tx: Sql | TransactionSql): Promise<TableShape[]> {
	const rows = await tx<{ name: string; columns: string[] }[]>`
		select c.relname as name,
		       array_agg(a.attname::text order by a.attnum) as columns
		from pg_class c
		join pg_namespace n on n.oid = c.relnamespace
		join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
		where n.nspname = 'public' and c.relkind in ('r', 'p')
		group by c.relname
		order by c.relname`;
	const edges = await tx<{ child: string; parent: string }[]>`
		select c.relname as child, p.relname as parent
		from pg_constraint k
		join pg_class c on c.oid = k.conrelid
		join pg_class p on p.oid = k.confrelid
		join pg_namespace n on n.oid = c.relnamespace
		where k.contype = 'f' and n.nspname = 'public' and c.oid <> p.oid`;
	const tables = rows.filter((r) => !NOT_BACKED_UP.has(r.name));
	const parents = new Map(tables.map((t) => [t.name, new Set<string>()]));
	for (const e of edges) parents.get(e.child)?.add(e.parent);
	const out: TableShape[] = [];
	const placed = new Set<string>();
	while (out.length < tables.length) {
		const next = tables.filter((t) => !placed.has(t.name) && [...parents.get(t.name)!].every((p) => placed.has(p) || !parents.has(p)));
		// A cycle of foreign keys (none today): take the rest in name order.
		const batch = next.length ? next : tables.filter((t) => !placed.has(t.name));
		for (const t of batch) {
			out.push(t);
			placed.add(t.name);
		}
	}
	return out;
}

export interface SequenceValue {
	name: string;
	value: string;
}

/** The sequences of schema public that have handed out a value, with their last value. */
export async function listSequenceValues(tx: Sql | TransactionSql): Promise<SequenceValue[]> {
	return tx<SequenceValue[]>`
		select sequencename as name, last_value::text as value
		from pg_sequences where schemaname = 'public' and last_value is not null order by sequencename`;
}

export async function setSequenceValue(tx: TransactionSql, s: SequenceValue): Promise<void> {
	await tx`select setval(format('public.%I', ${s.name}::text)::regclass, ${s.value}::bigint, true)`;
}

/** drizzle's record of the applied migrations (journal time and hash), oldest first. */
export async function listAppliedMigrations(tx: Sql | TransactionSql): Promise<Array<{ hash: string; createdAt: string }>> {
	return tx<Array<{ hash: string; createdAt: string }>>`
		select hash, created_at::text as "createdAt" from drizzle.__drizzle_migrations order by created_at`;
}

/**
 * Streams one table's stored columns in COPY text format (one row per line).
 *
 * postgres.js 3.4.9 pauses the connection's socket when this stream's buffer is full and resumes
 * it only from the stream's `_read`. When the COPY's last rows and its end arrive in one read
 * (any table of a few dozen KiB, every time on a busy machine), the stream ends with the socket
 * still paused: nothing calls `_read` after the end, so the next query's answer is never read and
 * the transaction sits `idle in transaction` for good (porsager/postgres#499, fix pending in
 * #1016). One more `_read` once the stream has ended resumes the socket.
 */
export async function copyTableOut(tx: TransactionSql, t: TableShape): Promise<Readable> {
	const out = await tx`copy ${tx(t.name)} (${tx(t.columns)}) to stdout`.readable();
	out.once('end', () => {
		try {
			out._read(0);
		} catch {
			// the connection is already gone (ended or closed): nothing to resume
		}
	});
	return out;
}

/** Takes one table's rows in COPY text format. */
export async function copyTableIn(tx: TransactionSql, t: TableShape): Promise<Writable> {
	return tx`copy ${tx(t.name)} (${tx(t.columns)}) from stdin`.writable();
}

export async function countRows(tx: Sql | TransactionSql, table: string): Promise<number> {
	const [row] = await tx<{ n: number }[]>`select count(*)::int as n from ${tx(table)}`;
	return row.n;
}

/** Tables in schema public, and whether drizzle has applied a migration: an empty database has neither. */
export async function databaseIsEmpty(sql: Sql): Promise<boolean> {
	const [row] = await sql<{ n: number }[]>`
		select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
		where n.nspname in ('public', 'drizzle', 'graphile_worker') and c.relkind in ('r', 'p')`;
	return row.n === 0;
}

/**
 * Fires no triggers and checks no foreign keys while a restore loads rows it already knows to
 * be consistent (only a superuser may; the embedded server's user is one). Returns false when
 * refused: the load then runs in foreign-key order with triggers on.
 */
export async function skipTriggersForLoad(tx: TransactionSql): Promise<boolean> {
	try {
		await tx.savepoint((sp) => sp`set local session_replication_role = replica`);
		return true;
	} catch {
		return false;
	}
}

/** The SSH private keys the hosts use, mutation keys included (files named by path; the rows themselves are in the dump). */
export async function listHostKeyPaths(tx: Sql | TransactionSql): Promise<string[]> {
	const rows = await tx<Pick<typeof hosts.$inferSelect, 'keyPath'>[]>`
		select key_path as "keyPath" from hosts
		union select mutation_key_path from hosts where mutation_key_path is not null
		order by 1`;
	return rows.map((r) => r.keyPath);
}
