import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { alertGroups, alertHooks, executions, plans } from '../schema';

type AlertHook = typeof alertHooks.$inferSelect;
type AlertGroup = typeof alertGroups.$inferSelect;

/** An alert hook as the queries return it (not who made it). */
export type AlertHookRow = Omit<AlertHook, 'createdBy'>;

export type AlertGroupRow = Pick<
	AlertGroup,
	'id' | 'hookId' | 'groupKey' | 'status' | 'title' | 'severity' | 'sessionId' | 'deliveries' | 'firings' | 'incidentId'
> & {
	/** Seconds since the last delivery and since the status last changed. */
	sinceSeen: number;
	sinceChanged: number;
	muted: boolean;
};

const HOOK_COLUMNS = (sql: Sql | TransactionSql) =>
	sql`id, name, kind, secret_hash as "secretHash", signed, secret, secret_sealed as "secretSealed", muted_until as "mutedUntil", revoked_at as "revokedAt", last_received_at as "lastReceivedAt", created_at as "createdAt"`;

export async function getLiveHook(sql: Sql | TransactionSql, id: string): Promise<AlertHookRow | null> {
	const [row] = await sql<AlertHookRow[]>`select ${HOOK_COLUMNS(sql)} from alert_hooks where id = ${id} and revoked_at is null`;
	return row ?? null;
}

/** A hook whether or not it was revoked since (a delivery it accepted is still applied). */
export async function getHook(sql: Sql | TransactionSql, id: string): Promise<AlertHookRow | null> {
	const [row] = await sql<AlertHookRow[]>`select ${HOOK_COLUMNS(sql)} from alert_hooks where id = ${id}`;
	return row ?? null;
}

export async function listHooks(sql: Sql | TransactionSql): Promise<(AlertHookRow & { openGroups: number })[]> {
	return sql<(AlertHookRow & { openGroups: number })[]>`
		select ${HOOK_COLUMNS(sql)},
			(select count(*)::int from alert_groups g where g.hook_id = h.id and g.status = 'firing') as "openGroups"
		from alert_hooks h where revoked_at is null order by created_at`;
}

/** A new hook; its secret is kept (sealed by the caller, bound to `id`) only when `signed` (see alert_hooks in schema.ts). */
export async function insertHook(
	tx: TransactionSql,
	h: Pick<AlertHook, 'id' | 'name' | 'kind' | 'secretHash' | 'signed'> & { secretSealed: string; createdBy: string }
): Promise<AlertHookRow> {
	const [row] = await tx<AlertHookRow[]>`
		insert into alert_hooks (id, name, kind, secret_hash, signed, secret_sealed, created_by)
		values (${h.id}, ${h.name}, ${h.kind}, ${h.secretHash}, ${h.signed}, ${h.signed ? h.secretSealed : null}, ${h.createdBy})
		returning ${HOOK_COLUMNS(tx)}`;
	return row;
}

/** A new secret for a live hook; the sealed one is kept only if the hook is signed, and no plain one is left. */
export async function setHookSecret(tx: TransactionSql, id: string, secret: { hash: string; sealed: string }): Promise<AlertHookRow | null> {
	const [row] = await tx<AlertHookRow[]>`
		update alert_hooks set secret_hash = ${secret.hash}, secret = null, secret_sealed = case when signed then ${secret.sealed} end
		where id = ${id} and revoked_at is null returning ${HOOK_COLUMNS(tx)}`;
	return row ?? null;
}

/** The hook stops accepting signatures: its kept secret is dropped, bearer deliveries go on with the same secret. */
export async function dropHookSignature(tx: TransactionSql, id: string): Promise<AlertHookRow | null> {
	const [row] = await tx<AlertHookRow[]>`
		update alert_hooks set signed = false, secret = null, secret_sealed = null where id = ${id} and revoked_at is null returning ${HOOK_COLUMNS(tx)}`;
	return row ?? null;
}

/** A hook's kept secret as stored: plain (`secret`, a hook from before 0033) or sealed (watches/sealed-secret.ts). */
export type KeptHookSecret = Pick<AlertHook, 'id' | 'secret' | 'secretSealed'>;

/** Every hook that keeps a secret, plain or sealed (boot seals the plain ones). */
export async function listKeptHookSecrets(sql: Sql | TransactionSql): Promise<KeptHookSecret[]> {
	return sql<KeptHookSecret[]>`
		select id, secret, secret_sealed as "secretSealed" from alert_hooks where secret is not null or secret_sealed is not null`;
}

/**
 * Keeps a hook's secret sealed anew, only while its row still holds what was read (`was`: its plain
 * secret, then emptied; or its previous sealed value); false when the row changed meanwhile.
 */
export async function storeSealedHookSecret(
	sql: Sql | TransactionSql,
	id: string,
	sealed: string,
	was: { secret: string } | { secretSealed: string }
): Promise<boolean> {
	const rows =
		'secret' in was
			? await sql`update alert_hooks set secret_sealed = ${sealed}, secret = null where id = ${id} and secret = ${was.secret} returning id`
			: await sql`update alert_hooks set secret_sealed = ${sealed} where id = ${id} and secret_sealed = ${was.secretSealed} returning id`;
	return rows.length > 0;
}

export async function revokeHook(tx: TransactionSql, id: string): Promise<AlertHookRow | null> {
	const [row] = await tx<AlertHookRow[]>`update alert_hooks set revoked_at = now() where id = ${id} and revoked_at is null returning ${HOOK_COLUMNS(tx)}`;
	return row ?? null;
}

/** Mutes a hook for some minutes (0: unmutes). */
export async function muteHook(tx: TransactionSql, id: string, minutes: number): Promise<AlertHookRow | null> {
	const [row] = await tx<AlertHookRow[]>`
		update alert_hooks set muted_until = ${minutes > 0 ? tx`now() + make_interval(mins => ${minutes})` : null}
		where id = ${id} and revoked_at is null returning ${HOOK_COLUMNS(tx)}`;
	return row ?? null;
}

export async function lockGroup(tx: TransactionSql, hookId: string, groupKey: string): Promise<AlertGroupRow | null> {
	const [row] = await tx<AlertGroupRow[]>`
		select id, hook_id as "hookId", group_key as "groupKey", status, title, severity, session_id as "sessionId", deliveries, firings,
			incident_id as "incidentId",
			extract(epoch from now() - last_seen_at)::float8 as "sinceSeen",
			extract(epoch from now() - changed_at)::float8 as "sinceChanged",
			coalesce(muted_until > now(), false) as muted
		from alert_groups where hook_id = ${hookId} and group_key = ${groupKey} for update`;
	return row ?? null;
}

/** A new group, or nothing when another delivery made it first (the caller locks and reads it then). */
export async function insertGroup(
	tx: TransactionSql,
	g: { hookId: string; groupKey: string; status: 'firing' | 'resolved'; title: string; severity: string; sessionId: string | null }
): Promise<boolean> {
	const rows = await tx`
		insert into alert_groups (hook_id, group_key, status, title, severity, session_id)
		values (${g.hookId}, ${g.groupKey}, ${g.status}, ${g.title}, ${g.severity}, ${g.sessionId})
		on conflict (hook_id, group_key) do nothing returning id`;
	return rows.length > 0;
}

export async function setGroupSession(tx: TransactionSql, hookId: string, groupKey: string, sessionId: string): Promise<void> {
	await tx`update alert_groups set session_id = ${sessionId} where hook_id = ${hookId} and group_key = ${groupKey}`;
}

export async function updateGroup(
	tx: TransactionSql,
	id: string,
	change: { status?: 'firing' | 'resolved'; sessionId?: string; title?: string; severity?: string; refired?: boolean }
): Promise<void> {
	await tx`
		update alert_groups set
			deliveries = deliveries + 1,
			last_seen_at = now(),
			status = coalesce(${change.status ?? null}, status),
			changed_at = case when ${change.status ?? null}::text is not null and ${change.status ?? null}::text <> status then now() else changed_at end,
			session_id = coalesce(${change.sessionId ?? null}::uuid, session_id),
			title = coalesce(${change.title ?? null}, title),
			severity = coalesce(${change.severity ?? null}, severity),
			firings = firings + ${change.refired ? 1 : 0}
		where id = ${id}`;
}

/** Mutes one alert group for some minutes (0: unmutes); false when it does not exist. */
export async function muteGroup(tx: TransactionSql, sessionId: string, minutes: number): Promise<Pick<AlertGroup, 'id' | 'title' | 'mutedUntil'> | null> {
	const [row] = await tx<Pick<AlertGroup, 'id' | 'title' | 'mutedUntil'>[]>`
		update alert_groups set muted_until = ${minutes > 0 ? tx`now() + make_interval(mins => ${minutes})` : null}
		where session_id = ${sessionId} returning id, title, muted_until as "mutedUntil"`;
	return row ?? null;
}

/** Until when the alert group behind an investigation is muted (null: not muted, or no alert opened it). */
export async function groupMutedUntil(sql: Sql | TransactionSql, sessionId: string): Promise<string | null> {
	const [row] = await sql<Pick<AlertGroup, 'mutedUntil'>[]>`
		select muted_until as "mutedUntil" from alert_groups where session_id = ${sessionId} and muted_until > now() limit 1`;
	return row?.mutedUntil ?? null;
}

/** What opened a chat with no operator in it: an alert hook (an investigation) or a schedule (a run). */
export type Watch = { kind: 'alert' | 'schedule'; id: string; name: string };

/**
 * The hook or schedule that opened a session, or null for an operator's chat. Such a session runs
 * by the watch rules: no typed assent, no http_get, the watch step and token budget.
 */
export async function watchOf(sql: Sql | TransactionSql, sessionId: string): Promise<Watch | null> {
	const [row] = await sql<Watch[]>`
		select case when h.id is not null then 'alert' else 'schedule' end as kind, coalesce(h.id, sc.id) as id, coalesce(h.name, sc.name) as name
		from chat_sessions s left join alert_hooks h on h.id = s.started_by_hook left join schedules sc on sc.id = s.started_by_schedule
		where s.id = ${sessionId} and (h.id is not null or sc.id is not null)`;
	return row ?? null;
}

/** The alert behind an investigation (its group's title and hook), or null for an operator's chat. */
export async function alertOfSession(sql: Sql | TransactionSql, sessionId: string): Promise<{ title: string; hookName: string } | null> {
	const [row] = await sql<{ title: string; hookName: string }[]>`
		select g.title, h.name as "hookName" from alert_groups g join alert_hooks h on h.id = g.hook_id where g.session_id = ${sessionId} limit 1`;
	return row ?? null;
}

/** What waits for approval in an alert's session: proposed plans and executions awaiting approval. */
export type PendingFix = {
	plans: Pick<typeof plans.$inferSelect, 'id' | 'title'>[];
	executions: Pick<typeof executions.$inferSelect, 'id' | 'action' | 'target' | 'requestedBySession'>[];
};

/**
 * Marks what waits for approval in the session as asked for by an alert that has since resolved
 * (now); returns what it marked. `clear` takes the mark off again (the alert fires again: the fix
 * is needed again). Pending only: what was approved or decided keeps its history.
 */
export async function markPendingFix(tx: TransactionSql, sessionId: string, mark: 'resolved' | 'clear'): Promise<PendingFix> {
	const at = mark === 'resolved' ? tx`now()` : tx`null`;
	const only = mark === 'resolved' ? tx`` : tx`and alert_resolved_at is not null`;
	const plans = await tx<PendingFix['plans']>`
		update plans set alert_resolved_at = ${at} where session_id = ${sessionId} and status = 'proposed' ${only} returning id, title`;
	const executions = await tx<PendingFix['executions']>`
		update executions e set alert_resolved_at = ${at}
		where e.status = 'awaiting_approval' ${only}
			and (e.requested_by_session = ${sessionId} or exists (select 1 from execution_sessions l where l.execution_id = e.id and l.session_id = ${sessionId}))
		returning e.id, e.action, e.target, e.requested_by_session as "requestedBySession"`;
	return { plans, executions };
}
