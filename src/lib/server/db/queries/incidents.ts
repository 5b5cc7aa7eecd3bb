import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { findings, incidents } from '../schema';
import { emitEvent } from './events';
import { listedFor, type Viewer } from './sessions';

type Incident = typeof incidents.$inferSelect;
type Finding = typeof findings.$inferSelect;
export type IncidentRow = Pick<Incident, 'id' | 'key' | 'node' | 'title' | 'status' | 'sessionId' | 'alertCount'>;

const COLUMNS = (sql: Sql | TransactionSql) => sql`id, key, node, title, status, session_id as "sessionId", alert_count as "alertCount"`;

/**
 * Serialises the placing of alerts into incidents (one transaction at a time, in every process):
 * "is there an open incident for this key" and "how many investigations run" are then answered
 * for the one alert being placed, so a storm cannot race past the bound.
 */
export async function lockIncidentPlacement(tx: TransactionSql): Promise<void> {
	await tx`select pg_advisory_xact_lock(hashtext('nomos:incident-placement'))`;
}

/** The open incident an alert joins: the one of its Alertmanager group, else the one of its key seen within `windowS`. */
export async function findOpenIncident(tx: TransactionSql, m: { key: string; groupKey: string | null; windowS: number }): Promise<IncidentRow | null> {
	const [row] = await tx<IncidentRow[]>`
		select ${COLUMNS(tx)} from incidents
		where status = 'open' and session_id is not null
			and ((${m.groupKey}::text is not null and group_key = ${m.groupKey}) or (key = ${m.key} and last_seen_at > now() - make_interval(secs => ${m.windowS})))
		order by (group_key is not distinct from ${m.groupKey}) desc, last_seen_at desc limit 1`;
	return row ?? null;
}

/**
 * Open incidents whose investigation runs: a turn of their session is queued or running (its
 * graphile-worker job exists and has attempts left).
 */
export async function countRunningInvestigations(tx: TransactionSql): Promise<number> {
	const [row] = await tx<{ n: number }[]>`
		select count(*)::int as n from incidents i
		where i.status = 'open' and i.session_id is not null and exists (
			select 1 from graphile_worker._private_jobs j
			join graphile_worker._private_job_queues q on q.id = j.job_queue_id
			where q.queue_name = 'session:' || i.session_id::text and j.attempts < j.max_attempts)`;
	return row.n;
}

/** Where an alert goes when no investigation may start: an open incident of its node, else the latest open one. */
export async function pickIncidentToJoin(tx: TransactionSql, node: string | null): Promise<IncidentRow | null> {
	const [row] = await tx<IncidentRow[]>`
		select ${COLUMNS(tx)} from incidents where status = 'open' and session_id is not null
		order by (node is not distinct from ${node}) desc, last_seen_at desc limit 1`;
	return row ?? null;
}

export async function insertIncident(
	tx: TransactionSql,
	i: Pick<Incident, 'key' | 'node' | 'guest' | 'kind' | 'groupKey' | 'title' | 'sessionId'>
): Promise<IncidentRow> {
	const [row] = await tx<IncidentRow[]>`
		insert into incidents (key, node, guest, kind, group_key, title, session_id)
		values (${i.key}, ${i.node}, ${i.guest}, ${i.kind}, ${i.groupKey}, ${i.title}, ${i.sessionId})
		returning ${COLUMNS(tx)}`;
	await announceIncident(tx, row.id, row.sessionId);
	return row;
}

/** One more alert joined the incident (it opens again if it had resolved). */
export async function countIncidentAlert(tx: TransactionSql, id: string): Promise<void> {
	const rows = await tx<{ sessionId: string | null }[]>`
		update incidents set alert_count = alert_count + 1, last_seen_at = now(), status = 'open', resolved_at = null where id = ${id}
		returning session_id as "sessionId"`;
	if (rows.length) await announceIncident(tx, id, rows[0].sessionId);
}

/**
 * The incident closes once none of its alert groups fires any more, every finding of it is
 * resolved (none present, none uncertain), and the fix is verified: the latest execution of its
 * session the host check judged, if any, was verified (an alert that went quiet while a fix failed
 * or could not be judged is not closed).
 */
export async function resolveIncidentIfQuiet(tx: TransactionSql, id: string): Promise<boolean> {
	const rows = await tx`
		update incidents i set status = 'resolved', resolved_at = now(), last_seen_at = now()
		where i.id = ${id} and i.status = 'open' and not exists (select 1 from alert_groups g where g.incident_id = i.id and g.status = 'firing')
			and not exists (select 1 from findings f where f.incident_id = i.id and f.verdict <> 'resolved')
			and coalesce((select e.verdict from executions e where e.requested_by_session = i.session_id and e.verdict is not null
				order by e.finished_at desc nulls last limit 1), 'verified') = 'verified'
		returning session_id as "sessionId"`;
	if (rows.length) await announceIncident(tx, id, rows[0].sessionId as string | null);
	return rows.length > 0;
}

/**
 * Runs the close check (resolveIncidentIfQuiet) on the session's open incidents, for when a verdict
 * on one of its executions lands (executions/lifecycle.ts finishExecution): the fix verified after
 * the alerts went quiet and the findings resolved is what closes the incident, with no further
 * alert. Each incident's row is locked first, as recordFinding does, so a finding settled at the
 * same instant is seen by one of the two checks. Returns the ids it closed.
 */
export async function closeSessionIncidentsIfDone(tx: TransactionSql, sessionId: string): Promise<string[]> {
	const open = await tx<{ id: string }[]>`select id from incidents where session_id = ${sessionId} and status = 'open' order by id for update`;
	const closed: string[] = [];
	for (const i of open) if (await resolveIncidentIfQuiet(tx, i.id)) closed.push(i.id);
	return closed;
}

export async function setGroupIncident(tx: TransactionSql, groupId: string, incidentId: string, sessionId: string | null): Promise<void> {
	await tx`update alert_groups set incident_id = ${incidentId}, session_id = coalesce(${sessionId}::uuid, session_id) where id = ${groupId}`;
}

export async function getIncident(sql: Sql | TransactionSql, id: string): Promise<IncidentRow | null> {
	const [row] = await sql<IncidentRow[]>`select ${COLUMNS(sql)} from incidents where id = ${id}`;
	return row ?? null;
}

/** Whether a turn of the session is queued or running (its job exists with attempts left). */
export async function turnPending(tx: TransactionSql, sessionId: string): Promise<boolean> {
	const [row] = await tx<{ pending: boolean }[]>`
		select exists (
			select 1 from graphile_worker._private_jobs j join graphile_worker._private_job_queues q on q.id = j.job_queue_id
			where q.queue_name = ${'session:' + sessionId} and j.attempts < j.max_attempts) as pending`;
	return row.pending;
}

/** A finding as the Incidents page shows it (`updatedAt`: when its verdict last changed, ISO 8601). */
export type IncidentFinding = Pick<Finding, 'id' | 'what' | 'verdict' | 'evidence'> & { updatedAt: string };

/** One incident as the Incidents page lists it; times ISO 8601, durations in seconds (null: not yet). */
export type IncidentListing = Pick<Incident, 'id' | 'node' | 'guest' | 'kind' | 'title' | 'status' | 'sessionId' | 'alertCount'> & {
	firstSeenAt: string;
	lastSeenAt: string;
	resolvedAt: string | null;
	/** The alert hook whose alert opened it (its session's), null when that hook or session is gone. */
	origin: string | null;
	/** From its first alert to the agent's first complete reply in its session. */
	toFirstFindingS: number | null;
	/** From its first alert to the first execution of its session the host check verified. */
	toVerifiedFixS: number | null;
	/** Its findings with their verdict and evidence, present first, then uncertain, then resolved (db/queries/findings.ts). */
	findings: IncidentFinding[];
};

/**
 * The incidents whose session the viewer's lists show (access/sessions.ts listedFor: an operator
 * their own and shared sessions', an admin every alert's), newest activity first.
 */
export async function listIncidents(sql: Sql | TransactionSql, viewer: Viewer, limit = 200): Promise<IncidentListing[]> {
	return sql<IncidentListing[]>`
		select i.id, i.node, i.guest, i.kind, i.title, i.status, i.session_id as "sessionId", i.alert_count as "alertCount",
			i.first_seen_at as "firstSeenAt", i.last_seen_at as "lastSeenAt", i.resolved_at as "resolvedAt", h.name as origin,
			(select extract(epoch from min(m.created_at) - i.first_seen_at)::int from messages m
				where m.session_id = i.session_id and m.role = 'assistant' and m.status = 'complete' and m.created_at >= i.first_seen_at) as "toFirstFindingS",
			(select extract(epoch from min(e.finished_at) - i.first_seen_at)::int from executions e
				where e.requested_by_session = i.session_id and e.verdict = 'verified' and e.finished_at >= i.first_seen_at) as "toVerifiedFixS",
			(select coalesce(json_agg(json_build_object('id', f.id, 'what', f.what, 'verdict', f.verdict, 'evidence', f.evidence, 'updatedAt', f.updated_at)
				order by array_position(array['present', 'uncertain', 'resolved'], f.verdict::text), f.created_at, f.what), '[]'::json)
				from findings f where f.incident_id = i.id) as findings
		from incidents i join chat_sessions s on s.id = i.session_id left join alert_hooks h on h.id = s.started_by_hook
		where s.deleted_at is null and ${listedFor(sql, viewer)}
		order by (i.status = 'open') desc, i.last_seen_at desc
		limit ${limit}`;
}

/** Announces an incident's change on its session's stream (the fleet stream carries it to those who may read that session). */
export async function announceIncident(tx: TransactionSql, incidentId: string, sessionId: string | null): Promise<void> {
	await emitEvent(tx, { sessionId, type: 'incident.updated', payload: { incidentId } });
}
