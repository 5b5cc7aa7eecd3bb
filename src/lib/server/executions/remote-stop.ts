import type { TransactionSql } from 'postgres';
import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { getHostByName } from '../db/queries/hosts';
import { claimDueRechecks, flagLeftoversRecheck, linkedSessions, reopenContinuations, replaceLeftovers, type ExecutionRow } from '../db/queries/executions';
import { queueContinuations } from './lifecycle';
import { addSystemNote } from '../conversation/notes';
import { connect, stopGroup, type RemoteGroup, type SshTarget, type StopOutcome } from '../ssh/client';
import { logger } from '../log';
import { readBack, targetVmid } from './leftovers';

// What runs on a host after Nomos let go of it: stopping a command's process group from any
// process (the runner's own connection may be what broke), settling an execution whose worker
// died, and reading back later what could not be read because the host did not answer.

const log = logger('remote-stop');

const CONNECT_TIMEOUT_MS = 5_000;
/** A host that does not answer is tried again this much later (the sweep runs every 15 s). */
const RETRY_SECONDS = 30;
/** How long a sweep holds the executions it re-checks (several hosts may time out in turn). */
const CLAIM_SECONDS = 300;

/** Stops a command's process group over a new connection and waits until it is gone (see `stopGroup`). */
export async function stopOnHost(host: SshTarget, g: RemoteGroup): Promise<StopOutcome> {
	let client: Client;
	try {
		client = await connect(host, CONNECT_TIMEOUT_MS);
	} catch {
		return 'unreachable';
	}
	try {
		return await stopGroup(client, g);
	} finally {
		client.end();
	}
}

/** The process groups of an execution that may still run on its host: a step never seen to end, or one whose stop was not confirmed. */
export function groupsLeftRunning(e: Pick<ExecutionRow, 'steps'>): RemoteGroup[] {
	return e.steps
		.filter((s) => s.pgid && s.groupTag && (s.finishedAt === undefined || s.stop === 'running' || s.stop === 'unreachable'))
		.map((s) => ({ pgid: s.pgid!, tag: s.groupTag! }));
}

type Settled = { reached: false } | { reached: true; text: string | null; stoppedNow: boolean; stillRunning: boolean };

/** Over one new connection: stops what of `e` may still run on its host, waits until it is gone, then reads its target back. */
async function settleOnHost(e: ExecutionRow): Promise<Settled> {
	const host = e.hostName ? await getHostByName(sql(), e.hostName) : null;
	// A host removed from Nomos: nothing can be stopped or read there any more.
	if (!host) return { reached: true, text: null, stoppedNow: false, stillRunning: false };
	let client: Client;
	try {
		client = await connect(host, CONNECT_TIMEOUT_MS);
	} catch {
		return { reached: false };
	}
	try {
		const outcomes: StopOutcome[] = [];
		for (const g of groupsLeftRunning(e)) outcomes.push(await stopGroup(client, g));
		if (outcomes.includes('unreachable')) return { reached: false };
		const back = await readBack(e, client);
		if (!back.reached) return { reached: false };
		return { reached: true, text: back.text, stoppedNow: outcomes.includes('stopped'), stillRunning: outcomes.includes('running') };
	} finally {
		client.end();
	}
}

/** What could not be done, said as leftovers (the card shows it; the agent is told it). */
function unreachableText(e: ExecutionRow): string {
	const vmid = targetVmid(e);
	const what = vmid && e.classification !== 'read_only' ? ` and read CT ${vmid} back` : '';
	return `${e.hostName ?? 'the host'} could not be reached to stop the command${what}: it may still be running (Nomos reads it back when the host answers)`;
}

function foundText(e: ExecutionRow, r: Extract<Settled, { reached: true }>): string {
	const parts = [
		r.stoppedNow ? 'its command was still running on the host and was stopped now' : null,
		r.stillRunning ? 'its command could not be stopped on the host and may still be running' : null,
		r.text
	].filter(Boolean);
	return parts.length ? parts.join('; ') : `nothing of it runs on ${e.hostName ?? 'the host'} any more`;
}

/**
 * Tells every session linked to `e` what a late read-back found: a note the chat shows live, and
 * — in the same transaction — the execution's continuation reopened and queued, so the agent
 * reads the note in a turn of its own (once: the continuation claims it) instead of at the
 * operator's next message. A session whose continuation had not run yet just reads it there.
 */
async function tellSessions(tx: TransactionSql, e: ExecutionRow, found: string): Promise<void> {
	for (const sessionId of await linkedSessions(tx, e.id)) {
		await addSystemNote(tx, sessionId, 'leftovers', `Late read-back of execution ${e.id} (${e.action} on ${e.target}): ${found}.`, { executionId: e.id });
	}
	await reopenContinuations(tx, e.id);
	await queueContinuations(tx, e.id);
}

/**
 * For an execution another process has just marked interrupted because its worker died: stops
 * what of it still runs on the host (the process group its running step recorded), waits until
 * it is gone, then reads the target back and stores that. When the host cannot be reached, the
 * leftovers say so and the execution is flagged to be read back once it answers
 * (`recheckLeftovers`). Should the agent have been told other leftovers meanwhile, it is told again.
 */
export async function settleAbandoned(e: ExecutionRow): Promise<void> {
	const r = await settleOnHost(e);
	if (!r.reached) {
		await sql().begin(async (tx) => {
			await replaceLeftovers(tx, e.id, unreachableText(e), null);
			await flagLeftoversRecheck(tx, e.id);
		});
		return;
	}
	const found = foundText(e, r);
	await sql().begin(async (tx) => {
		const before = await replaceLeftovers(tx, e.id, r.text ?? (r.stoppedNow || r.stillRunning ? found : null), r.stillRunning ? RETRY_SECONDS : null);
		if (before && r.text && before !== r.text) await tellSessions(tx, e, found);
	});
}

/**
 * Reads back again the executions flagged because their host did not answer: stops what of
 * them still runs there, stores what it found and tells every linked session. A host that still
 * does not answer is tried once per call and its executions again RETRY_SECONDS later. Called
 * by every executions sweep; returns how many were read back.
 */
export async function recheckLeftovers(limit = 20): Promise<number> {
	const due = await claimDueRechecks(sql(), limit, CLAIM_SECONDS);
	const down = new Set<string>();
	let done = 0;
	for (const e of due) {
		const r: Settled = e.hostName && down.has(e.hostName) ? { reached: false } : await settleOnHost(e).catch(() => ({ reached: false as const }));
		if (!r.reached) {
			if (e.hostName) down.add(e.hostName);
			await flagLeftoversRecheck(sql(), e.id, RETRY_SECONDS);
			continue;
		}
		const found = foundText(e, r);
		await sql().begin(async (tx) => {
			await replaceLeftovers(tx, e.id, r.text ?? found, r.stillRunning ? RETRY_SECONDS : null);
			await tellSessions(tx, e, found);
		});
		log.info({ executionId: e.id, host: e.hostName }, `late read-back of execution ${e.id}: ${found}`);
		done++;
	}
	return done;
}
