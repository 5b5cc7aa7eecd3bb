import type { TransactionSql } from 'postgres';
import { sql } from '../db/index';
import { lockUnprocessedDelivery, deliveryApplied, markDeliveryProcessed, touchHookReceived, type AlertOutcomeRow } from '../db/queries/alert-deliveries';
import { countIncidentAlert, lockIncidentPlacement, resolveIncidentIfQuiet } from '../db/queries/incidents';
import { getHook, insertGroup, lockGroup, markPendingFix, updateGroup, type AlertGroupRow, type AlertHookRow, type PendingFix } from '../db/queries/watches';
import { announceExecution } from '../db/queries/executions';
import { emitEvent } from '../db/queries/events';
import { claimRecheck } from '../db/queries/findings';
import { addSystemNote } from '../conversation/notes';
import { requestTurn } from '../conversation/turn-queue';
import { env } from '../env';
import { decisiveLine, parseDelivery, type Alert } from './parse';
import { investigationBrief, recheckBrief } from './brief';
import { mayInvestigate, placeAlert } from './incidents';

/** A delivery that repeats a group's status within this long changes nothing (Alertmanager re-sends every repeat_interval). */
export const DEDUPE_S = 10 * 60;
/** A group that resolved and fires again within this long is flapping: noted in its session, no new investigation. */
const FLAP_S = 30 * 60;

export type AlertOutcome = 'opened' | 'joined' | 'reinvestigated' | 'noted' | 'resolved' | 'duplicate' | 'muted' | 'ignored';
type Taken = { outcome: AlertOutcome; sessionId: string | null; incidentId: string | null };

/**
 * Applies one stored delivery (the `alerts__intake` job): parses its body, and opens, joins,
 * resolves or only counts each alert's group and incident, in one transaction that also marks it
 * processed — a retried job finds it done, a job that died left nothing half-done. Placing is
 * serialised (lockIncidentPlacement) so the investigation bound holds however many jobs run.
 * Null: gone or applied already.
 */
export async function applyDelivery(deliveryId: string): Promise<AlertOutcomeRow[] | null> {
	return sql().begin(async (tx) => {
		const d = await lockUnprocessedDelivery(tx, deliveryId);
		if (!d) return null;
		const hook = await getHook(tx, d.hookId);
		if (!hook) return null;
		await touchHookReceived(tx, hook.id, d.receivedAt);
		let parsed: ReturnType<typeof parseDelivery>;
		try {
			parsed = parseDelivery(hook.kind, JSON.parse(d.body));
		} catch {
			parsed = { ok: false, error: 'The body is not JSON.' };
		}
		if (!parsed.ok) {
			await markDeliveryProcessed(tx, d.id, { error: parsed.error });
			return [];
		}
		await lockIncidentPlacement(tx);
		// A sender's retry of a delivery already applied only counts (its alerts are the same alerts).
		const orig = d.duplicateOf ? await deliveryApplied(tx, d.duplicateOf) : false;
		const outcomes: AlertOutcomeRow[] = [];
		for (const a of parsed.alerts) outcomes.push({ groupKey: a.groupKey, ...(await takeAlert(tx, hook, a, orig)) });
		await markDeliveryProcessed(tx, d.id, outcomes);
		return outcomes;
	});
}

async function takeAlert(tx: TransactionSql, hook: AlertHookRow, a: Alert, retry: boolean): Promise<Taken> {
	const hookMuted = !!hook.mutedUntil && Date.parse(hook.mutedUntil) > Date.now();
	let g = await lockGroup(tx, hook.id, a.groupKey);
	if (g && retry) {
		await updateGroup(tx, g.id, {});
		return { outcome: 'duplicate', sessionId: g.sessionId, incidentId: g.incidentId };
	}
	if (!g) {
		if (a.status === 'resolved') return { outcome: 'ignored', sessionId: null, incidentId: null };
		await insertGroup(tx, { hookId: hook.id, groupKey: a.groupKey, status: 'firing', title: a.title, severity: a.severity, sessionId: null });
		g = (await lockGroup(tx, hook.id, a.groupKey))!;
		if (hookMuted) return { outcome: 'muted', sessionId: null, incidentId: null };
		return open(tx, hook, g, a);
	}
	return joinGroup(tx, hook, g, a, hookMuted);
}

/** A firing group without a session goes into an incident: opens it, joins it, or (a storm) joins another with a note. */
async function open(tx: TransactionSql, hook: AlertHookRow, g: AlertGroupRow, a: Alert): Promise<Taken> {
	const p = await placeAlert(tx, hook, g, a);
	const ids = { sessionId: p.sessionId, incidentId: p.incidentId };
	if (p.how === 'opened') {
		await investigate(tx, hook, a, p.sessionId, 'opened');
		return { outcome: 'opened', ...ids };
	}
	if (p.how === 'joined' && p.investigate) {
		await investigate(tx, hook, a, p.sessionId, 'joined');
		return { outcome: 'joined', ...ids };
	}
	const why =
		p.how === 'storm'
			? `${p.running} investigations are running (at most ${env().NOMOS_MAX_INVESTIGATIONS}), so this alert joined this incident instead of opening its own; nothing was dropped, ask here to look at it.`
			: `It joined this incident; no new investigation now (one runs here already, or ${env().NOMOS_MAX_INVESTIGATIONS} run elsewhere).`;
	await alertNote(tx, hook, a, p.sessionId, `${hook.name} (${hook.kind}) raised: ${a.title}. ${why}`, { joined: p.how });
	return { outcome: 'joined', ...ids };
}

async function joinGroup(tx: TransactionSql, hook: AlertHookRow, g: AlertGroupRow, a: Alert, hookMuted: boolean): Promise<Taken> {
	const ids = { sessionId: g.sessionId, incidentId: g.incidentId };
	if (a.status === g.status && g.sinceSeen < DEDUPE_S) {
		await updateGroup(tx, g.id, {});
		return { outcome: 'duplicate', ...ids };
	}
	const quiet = hookMuted || g.muted;
	if (a.status === 'resolved') {
		await updateGroup(tx, g.id, { status: 'resolved' });
		if (g.incidentId) await resolveIncidentIfQuiet(tx, g.incidentId);
		if (g.sessionId && g.status !== 'resolved') await resolved(tx, hook, a, g.sessionId, g.incidentId, quiet);
		return { outcome: g.status === 'resolved' ? 'duplicate' : 'resolved', ...ids };
	}
	// Firing again (after a resolve, or still firing past the dedupe window).
	const refired = g.status === 'resolved';
	// The fix that waited when it resolved is needed again: its cards stop asking.
	if (refired && g.sessionId) await announceFix(tx, g.sessionId, await markPendingFix(tx, g.sessionId, 'clear'));
	if (!g.sessionId) {
		await updateGroup(tx, g.id, { status: 'firing', refired });
		if (quiet) return { outcome: 'muted', ...ids };
		return open(tx, hook, g, a);
	}
	await updateGroup(tx, g.id, { status: 'firing', title: a.title, severity: a.severity, refired });
	if (g.incidentId) await countIncidentAlert(tx, g.incidentId);
	const flapping = refired && g.sinceChanged < FLAP_S;
	const bounded = refired && !quiet && !flapping && !(await mayInvestigate(tx, g.sessionId));
	if (quiet || flapping || !refired || bounded) {
		const why = quiet
			? ' (muted: no new investigation)'
			: flapping
				? ` (fired ${g.firings + 1} times; flapping, so no new investigation)`
				: bounded
					? ` (an investigation runs here already, or ${env().NOMOS_MAX_INVESTIGATIONS} run elsewhere: no new one now)`
					: ' (still firing)';
		await addSystemNote(tx, g.sessionId, 'alert', `${hook.name}: "${a.title}" fired again${why}.`, {
			hookId: hook.id,
			status: 'firing',
			firings: g.firings + (refired ? 1 : 0)
		});
		return { outcome: quiet ? 'muted' : 'noted', ...ids };
	}
	await investigate(tx, hook, a, g.sessionId, 'reinvestigated');
	return { outcome: 'reinvestigated', ...ids };
}

/**
 * The alert resolved. What its session proposed and still waits for approval is marked (its card
 * asks "the alert resolved at 14:02 — still needed?"), the note says so, and a turn of the
 * investigation re-checks whether the fix is still needed before the operator decides (not for a
 * muted hook or group: those record without investigating). Nothing pending: only the note.
 */
async function resolved(tx: TransactionSql, hook: AlertHookRow, a: Alert, sessionId: string, incidentId: string | null, quiet: boolean): Promise<void> {
	const pending = await markPendingFix(tx, sessionId, 'resolved');
	await announceFix(tx, sessionId, pending);
	const what = pendingWords(pending);
	// The incident's findings not resolved are re-checked too (each at most once per FINDING_COOLDOWN_S).
	const open = incidentId && !quiet ? await claimRecheck(tx, incidentId) : [];
	const ask =
		(what ? ` Still waiting for approval: ${what} — still needed?${quiet ? '' : ' The agent re-checks before it runs.'}` : '') +
		(open.length ? ` ${open.length} finding${open.length === 1 ? '' : 's'} not resolved yet: the agent re-checks ${open.length === 1 ? 'it' : 'them'}.` : '');
	const text = `Resolved: ${hook.name} says "${a.title}" is resolved.${ask}`;
	// The re-check's brief is what the model reads for this note, now and in every later request.
	const recheck = (what || open.length) && !quiet;
	await addSystemNote(
		tx,
		sessionId,
		'alert',
		text,
		{ hookId: hook.id, status: 'resolved', ...(what ? { pending: pendingIds(pending) } : {}) },
		recheck ? `${text}\n${recheckBrief(hook, a, pending, open)}` : undefined
	);
	if ((what || open.length) && !quiet) await requestTurn(tx, { sessionId, origin: 'alert' });
}

/** The cards of what was (un)marked show it at once (the event carries their snapshot). */
async function announceFix(tx: TransactionSql, sessionId: string, p: PendingFix): Promise<void> {
	for (const plan of p.plans) await emitEvent(tx, { sessionId, type: 'plan.updated', payload: { planId: plan.id } });
	for (const e of p.executions) await announceExecution(tx, e);
}

const pendingIds = (p: PendingFix) => [...p.plans.map((x) => x.id), ...p.executions.map((x) => x.id)];
const pendingWords = (p: PendingFix) => [...p.plans.map((x) => `plan "${x.title}"`), ...p.executions.map((x) => `${x.action} on ${x.target}`)].join('; ');

/** The alert as a labelled, untrusted card in the session (its decisive line first); the model reads `model` for it when given. */
async function alertNote(
	tx: TransactionSql,
	hook: AlertHookRow,
	a: Alert,
	sessionId: string,
	text: string,
	extra: Record<string, unknown> = {},
	model?: string
): Promise<void> {
	await addSystemNote(
		tx,
		sessionId,
		'alert',
		text,
		{
			hookId: hook.id,
			hookName: hook.name,
			status: 'firing',
			severity: a.severity,
			title: a.title,
			decisive: decisiveLine(a.message),
			message: a.message,
			labels: a.labels,
			node: a.node,
			guest: a.guest,
			untrusted: true,
			...extra
		},
		model
	);
}

/** The alert's card in the session, and a turn that investigates it. */
async function investigate(tx: TransactionSql, hook: AlertHookRow, a: Alert, sessionId: string, how: 'opened' | 'reinvestigated' | 'joined'): Promise<void> {
	const verb = how === 'opened' ? 'raised' : how === 'joined' ? 'raised (joined this incident)' : 'raised again';
	const text = `${hook.name} (${hook.kind}) ${verb}: ${a.title}`;
	// The brief is what the model reads for the card, in this turn's request and every later one
	// (not a note of this turn only): each request then starts with the one before it.
	await alertNote(tx, hook, a, sessionId, text, {}, `${text}\n${investigationBrief(a)}`);
	await requestTurn(tx, { sessionId, origin: 'alert' });
}
