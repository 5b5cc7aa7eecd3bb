import type { TransactionSql } from 'postgres';
import { env } from '../env';
import { createSession } from '../db/queries/sessions';
import {
	countIncidentAlert,
	countRunningInvestigations,
	findOpenIncident,
	insertIncident,
	pickIncidentToJoin,
	setGroupIncident,
	turnPending
} from '../db/queries/incidents';
import type { AlertGroupRow, AlertHookRow } from '../db/queries/watches';
import { sessionTitleOf, type Alert } from './parse';

/** Alerts of one node/guest/kind this long after the incident's last alert still join it. */
export const INCIDENT_WINDOW_S = 30 * 60;

export type Placement =
	| { how: 'opened'; incidentId: string; sessionId: string }
	/** Joined the open incident of its key (or Alertmanager group); `investigate`: a turn may run for it (mayInvestigate). */
	| { how: 'joined'; incidentId: string; sessionId: string; investigate: boolean }
	/** NOMOS_MAX_INVESTIGATIONS run already: joined an open incident of another key, noted there, not investigated. */
	| { how: 'storm'; incidentId: string; sessionId: string; running: number };

/** The incident key of an alert: what it is about, `node/guest/kind` ('-' where the sender did not say). */
export const incidentKeyOf = (a: Pick<Alert, 'node' | 'guest' | 'kind'>) => [a.node ?? '-', a.guest ?? '-', a.kind].join('/');

/**
 * Places a firing alert group that has no session yet into an incident (the caller holds
 * lockIncidentPlacement): the open incident of its key within INCIDENT_WINDOW_S or of its
 * Alertmanager group; else a new incident with its own session when fewer than
 * NOMOS_MAX_INVESTIGATIONS investigations run; else (a storm) an open incident of the same node,
 * or the latest. Every alert ends in an incident: none is dropped.
 */
export async function placeAlert(tx: TransactionSql, hook: AlertHookRow, g: AlertGroupRow, a: Alert): Promise<Placement> {
	const key = incidentKeyOf(a);
	const amGroup = a.groupKey.startsWith('am:') ? a.groupKey : null;
	const open = await findOpenIncident(tx, { key, groupKey: amGroup, windowS: INCIDENT_WINDOW_S });
	if (open?.sessionId) {
		await setGroupIncident(tx, g.id, open.id, open.sessionId);
		await countIncidentAlert(tx, open.id);
		return { how: 'joined', incidentId: open.id, sessionId: open.sessionId, investigate: await mayInvestigate(tx, open.sessionId) };
	}
	const running = await countRunningInvestigations(tx);
	if (running >= env().NOMOS_MAX_INVESTIGATIONS) {
		const target = await pickIncidentToJoin(tx, a.node);
		if (target?.sessionId) {
			await setGroupIncident(tx, g.id, target.id, target.sessionId);
			await countIncidentAlert(tx, target.id);
			return { how: 'storm', incidentId: target.id, sessionId: target.sessionId, running };
		}
	}
	const title = sessionTitleOf(a);
	const sessionId = await createSession(tx, null, title, { startedByHook: hook.id });
	const inc = await insertIncident(tx, { key, node: a.node, guest: a.guest, kind: a.kind, groupKey: amGroup, title, sessionId });
	await setGroupIncident(tx, g.id, inc.id, sessionId);
	return { how: 'opened', incidentId: inc.id, sessionId };
}

/**
 * Whether an alert may start a turn in an incident's existing session: not while one is queued or
 * running there (that investigation goes on; the alert is a card in it), and not when
 * NOMOS_MAX_INVESTIGATIONS others run (the session would become one more).
 */
export async function mayInvestigate(tx: TransactionSql, sessionId: string): Promise<boolean> {
	if (await turnPending(tx, sessionId)) return false;
	return (await countRunningInvestigations(tx)) < env().NOMOS_MAX_INVESTIGATIONS;
}
