import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { MIGRATION_LOCK } from './migrate';

/*
 * Least privilege in the database. Two roles: the owner, which runs the migrations (Nomos's and
 * graphile-worker's) and owns every table, and the app's role, which the web and worker
 * processes connect as. The app's role owns nothing, so it cannot ALTER a table, switch off a
 * trigger or drop anything; it may read and write the rows it works with, and on the two
 * append-only tables (audit_log, approvals) only read and add rows: without UPDATE, DELETE,
 * TRUNCATE or ownership, the append-only triggers are not the only thing in the way, and they
 * cannot be switched off from the app's own connection.
 *
 * With the embedded server the owner is its superuser (`postgres`, password in
 * `<data dir>/pg-password`) and the app's role is `nomos_app` (password in
 * `<data dir>/pg-app-password`, mode 0600), created at boot. With DATABASE_URL the owner is
 * NOMOS_OWNER_DATABASE_URL's role when it is set; DATABASE_URL's role then gets the same grants.
 */

/** The embedded server's role for the app's connections. */
export const APP_ROLE = 'nomos_app';

/** The app role's password, beside the superuser's `pg-password` in the data dir. */
export const APP_PASSWORD_FILE = 'pg-app-password';

/** Tables the app may read and add to, never change or empty (their triggers say so too). */
export const APPEND_ONLY_TABLES = ['audit_log', 'approvals'] as const;

/**
 * The app role's password for this data dir: read from `pg-app-password`, or made and written
 * there (mode 0600) the first time. Two processes starting at once agree: the file is created
 * exclusively, and the one that loses the race reads the winner's.
 */
export async function appRolePassword(dataDir: string): Promise<string> {
	const file = path.join(path.resolve(dataDir), APP_PASSWORD_FILE);
	const fresh = randomBytes(18).toString('base64url');
	try {
		await fs.writeFile(file, fresh + '\n', { mode: 0o600, flag: 'wx' });
		return fresh;
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
	}
	// An older copy of the file (or a hand-made one) may be readable by others: not any more.
	await fs.chmod(file, 0o600);
	const password = (await fs.readFile(file, 'utf8')).trim();
	if (!password) throw new Error(`${file} is empty: remove it and Nomos makes a new password at the next start`);
	return password;
}

/** The same server and database as `url`, as `role` with `password`. */
export function roleUrl(url: string, role: string, password: string): string {
	const u = new URL(url);
	u.username = encodeURIComponent(role);
	u.password = encodeURIComponent(password);
	return u.toString();
}

/** The role a connection URL names (postgres.js's default, the OS user, is not guessed: null). */
export function urlRole(url: string): string | null {
	const name = decodeURIComponent(new URL(url).username);
	return name || null;
}

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

function scramKeys(password: string, salt: Buffer, iterations: number) {
	const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
	return { storedKey: createHash('sha256').update(hmac(salted, 'Client Key')).digest(), serverKey: hmac(salted, 'Server Key') };
}

/**
 * A SCRAM-SHA-256 verifier (what `ALTER ROLE … PASSWORD` stores), made here so the password
 * itself never travels to the server nor lands in its log should the statement fail.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
	const { storedKey, serverKey } = scramKeys(password, salt, iterations);
	return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** Whether a stored verifier is the one for `password` (so an unchanged password is not rewritten at every start). */
export function verifierMatches(stored: string | null, password: string): boolean {
	const m = stored && /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(stored);
	if (!m) return false;
	const { storedKey, serverKey } = scramKeys(password, Buffer.from(m[2], 'base64'), Number(m[1]));
	const want = Buffer.concat([storedKey, serverKey]);
	const got = Buffer.concat([Buffer.from(m[3], 'base64'), Buffer.from(m[4], 'base64')]);
	return want.length === got.length && timingSafeEqual(want, got);
}

function ownerClient(ownerUrl: string) {
	return postgres(ownerUrl, { max: 1, onnotice: () => undefined, connection: { application_name: 'nomos-migrate' } });
}

/**
 * Creates the app's role on the embedded server, or brings it back to what it must be: it may
 * log in with `password`, and nothing else (no superuser, no creating roles or databases, no
 * replication, no bypassing row security, no membership in another role). Needs a superuser.
 * Serialised with the migrations (and the other processes starting) by the migration lock.
 */
export async function ensureAppRole(ownerUrl: string, password: string, role = APP_ROLE): Promise<'created' | 'updated' | 'unchanged'> {
	const client = ownerClient(ownerUrl);
	try {
		return await client.begin(async (tx) => {
			await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
			const [row] = await tx<Array<{ plain: boolean; password: string | null; memberOf: string[] }>>`
				select (rolcanlogin and not (rolsuper or rolcreaterole or rolcreatedb or rolreplication or rolbypassrls)
				        and rolconnlimit = -1 and (rolvaliduntil is null or rolvaliduntil = 'infinity')) as plain,
				       rolpassword as password,
				       array(select m.roleid::regrole::text from pg_auth_members m where m.member = a.oid) as "memberOf"
				from pg_authid a where rolname = ${role}`;
			const v = row && verifierMatches(row.password, password) ? null : scramVerifier(password);
			const attrs = 'login nosuperuser nocreaterole nocreatedb noreplication nobypassrls noinherit connection limit -1';
			if (!row) {
				await tx.unsafe(`create role ${quoteIdent(role)} ${attrs} password ${quoteLiteral(v!)}`);
				return 'created';
			}
			if (row.plain && !v && row.memberOf.length === 0) return 'unchanged';
			await tx.unsafe(`alter role ${quoteIdent(role)} ${attrs} valid until 'infinity'` + (v ? ` password ${quoteLiteral(v)}` : ''));
			for (const r of row.memberOf) await tx.unsafe(`revoke ${quoteIdent(r)} from ${quoteIdent(role)}`);
			return 'updated';
		});
	} finally {
		await client.end({ timeout: 5 });
	}
}

function quoteIdent(name: string): string {
	return `"${name.replaceAll('"', '""')}"`;
}

function quoteLiteral(text: string): string {
	return `'${text.replaceAll("'", "''")}'`;
}

/**
 * What the app's role may do, stated whole each time (revoke everything, grant what is needed),
 * so the result is the same whatever it was before: an older data dir, a new table, a grant
 * added by hand. Run as the owner after every migration run, Nomos's and graphile-worker's.
 *  - public: rows of every table (read, add, change, remove), except audit_log and approvals:
 *    read and add only. Sequences: nextval/currval. No TRUNCATE, REFERENCES or TRIGGER anywhere.
 *  - drizzle: read the applied migrations (/readyz compares them with the code's).
 *  - graphile_worker: its jobs, queues and tasks rows and its functions (add_job, …); its
 *    migrations table read-only, so the app's role can never migrate it. (Plus a row policy:
 *    allowWorkerRows.)
 */
function grantStatements(role: string, schemas: { graphileWorker: boolean }): string[] {
	const r = quoteIdent(role);
	const out = [
		`revoke all on all tables in schema public from ${r}`,
		`revoke all on all sequences in schema public from ${r}`,
		`revoke create on schema public from ${r}`,
		`grant usage on schema public to ${r}`,
		`grant select, insert, update, delete on all tables in schema public to ${r}`,
		...APPEND_ONLY_TABLES.map((t) => `revoke update, delete on table public.${quoteIdent(t)} from ${r}`),
		`grant usage, select on all sequences in schema public to ${r}`,
		`revoke all on all tables in schema drizzle from ${r}`,
		`revoke create on schema drizzle from ${r}`,
		`grant usage on schema drizzle to ${r}`,
		`grant select on table drizzle.__drizzle_migrations to ${r}`
	];
	if (schemas.graphileWorker) {
		out.push(
			`revoke all on all tables in schema graphile_worker from ${r}`,
			`revoke create on schema graphile_worker from ${r}`,
			`grant usage on schema graphile_worker to ${r}`,
			`grant select, insert, update, delete on all tables in schema graphile_worker to ${r}`,
			`revoke insert, update, delete on table graphile_worker.migrations from ${r}`,
			`grant usage, select, update on all sequences in schema graphile_worker to ${r}`,
			`grant execute on all functions in schema graphile_worker to ${r}`
		);
	}
	return out;
}

/** The policy that lets the app's role see and write the rows of graphile-worker's tables. */
const WORKER_ROWS_POLICY = 'nomos_app_rows';

/**
 * graphile-worker switches on row-level security for its private tables (jobs, queues, tasks,
 * crontabs) with no policy, so that only their owner (who bypasses it) reaches the rows. The
 * app's role owns none of them: a policy per table lets it through, and only it. Created where
 * missing or naming another role, left alone otherwise (no churn at every start).
 */
async function allowWorkerRows(tx: postgres.TransactionSql, role: string): Promise<void> {
	const tables = await tx<Array<{ name: string }>>`
		select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = 'graphile_worker' and c.relkind in ('r', 'p') and c.relrowsecurity
		  and not exists (
			select 1 from pg_policies p
			where p.schemaname = n.nspname and p.tablename = c.relname and p.policyname = ${WORKER_ROWS_POLICY}
			  and p.cmd = 'ALL' and p.permissive = 'PERMISSIVE' and p.roles = array[${role}]::name[]
			  and p.qual = 'true' and p.with_check = 'true')`;
	for (const { name } of tables) {
		const t = `graphile_worker.${quoteIdent(name)}`;
		await tx.unsafe(`drop policy if exists ${WORKER_ROWS_POLICY} on ${t}`);
		await tx.unsafe(`create policy ${WORKER_ROWS_POLICY} on ${t} for all to ${quoteIdent(role)} using (true) with check (true)`);
	}
}

/**
 * Applies the app role's grants (see grantStatements) as the owner, in one transaction under the
 * migration lock: processes starting together never grant at once (concurrent GRANTs on one
 * table fail with "tuple concurrently updated"), and nobody sees a half-granted state.
 * Idempotent. graphile-worker's schema is included when it exists.
 */
export async function grantAppRole(ownerUrl: string, role: string): Promise<void> {
	const client = ownerClient(ownerUrl);
	try {
		await client.begin(async (tx) => {
			await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
			const [{ graphileWorker }] = await tx<Array<{ graphileWorker: boolean }>>`
				select to_regclass('graphile_worker.migrations') is not null as "graphileWorker"`;
			// One round trip (a simple query of many statements, inside this transaction).
			await tx.unsafe(grantStatements(role, { graphileWorker }).join(';\n'));
			if (graphileWorker) await allowWorkerRows(tx, role);
		});
	} finally {
		await client.end({ timeout: 5 });
	}
}

/**
 * Whether the connection's role could switch off audit_log's append-only triggers or empty it:
 * a superuser, or a member of the role that owns the table. The app's own role never should.
 */
export async function canAlterAuditLog(sql: postgres.Sql): Promise<boolean> {
	const [row] = await sql<Array<{ can: boolean }>>`
		select r.rolsuper or pg_has_role(current_user, c.relowner, 'MEMBER') as can
		from pg_roles r, pg_class c
		where r.rolname = current_user and c.oid = 'public.audit_log'::regclass`;
	return row?.can ?? false;
}
