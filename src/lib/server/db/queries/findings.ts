import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { findings } from '../schema';
import { announceIncident, resolveIncidentIfQuiet } from './incidents';

type Finding = typeof findings.$inferSelect;
export type FindingRow = Pick<Finding, 'id' | 'incidentId' | 'what' | 'evidence' | 'verdict'>;
export type FindingVerdict = Finding['verdict'];

/** A finding a resolved alert re-checked is not asked about again for this long (the cooldown per finding). */
export const FINDING_COOLDOWN_S = 15 * 60;

/**
 * Records a finding's verdict in the incident its session investigates (the latest one), creating
 * it on first sight; then closes the incident when that was the last finding not resolved and its
 * alerts are quiet (resolveIncidentIfQuiet). Returns the incident's id, null when the session
 * investigates none (an ordinary chat's hypotheses are no incident's findings).
 */
export async function recordFinding(
	tx: TransactionSql,
	f: { sessionId: string; what: string; verdict: FindingVerdict; evidence: string }
): Promise<string | null> {
	// The incident's row is locked: two findings settled at once (parallel mark_hypothesis calls) each
	// see the other's verdict, so the last one closes it — without the lock neither saw both resolved.
	const [inc] = await tx<{ id: string }[]>`select id from incidents where session_id = ${f.sessionId} order by last_seen_at desc limit 1 for update`;
	if (!inc) return null;
	await tx`
		insert into findings (incident_id, what, evidence, verdict) values (${inc.id}, ${f.what}, ${f.evidence}, ${f.verdict})
		on conflict (incident_id, what) do update set verdict = excluded.verdict, evidence = excluded.evidence, updated_at = now()`;
	if (!(await resolveIncidentIfQuiet(tx, inc.id))) await announceIncident(tx, inc.id, f.sessionId);
	return inc.id;
}

export async function listFindings(sql: Sql | TransactionSql, incidentId: string): Promise<FindingRow[]> {
	return sql<FindingRow[]>`
		select id, incident_id as "incidentId", what, evidence, verdict from findings where incident_id = ${incidentId} order by created_at, what`;
}

/**
 * The findings not resolved that a re-check may ask about now (none asked within
 * FINDING_COOLDOWN_S), stamped as asked: a finding is re-checked at most once per cooldown,
 * however often its alert flaps.
 */
export async function claimRecheck(tx: TransactionSql, incidentId: string): Promise<FindingRow[]> {
	return tx<FindingRow[]>`
		update findings set rechecked_at = now()
		where incident_id = ${incidentId} and verdict <> 'resolved'
			and (rechecked_at is null or rechecked_at < now() - make_interval(secs => ${FINDING_COOLDOWN_S}))
		returning id, incident_id as "incidentId", what, evidence, verdict`;
}
