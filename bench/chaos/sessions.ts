// One operator per chat session, looping as the operator in issue #27 did: request a change →
// approve → the agent follows up. Everything goes through the web processes' HTTP API; what the
// operator waits for is read from the database (what a connected browser would be shown).
import type { Sql } from 'postgres';
import { sleep } from '../harness';
import type { Operator } from './operator';
import type { Random } from './random';
import { claimOf, type CtView, type LoopKind, type TruthLedger } from './truth';

/** Words that send the operator back to the keyboard (a resend, a "continue"). */
export const RESEND = /send your message again|reply to continue|send a message to go on|tell it how to proceed/i;

export const BASE_VMID = 200;
export const SCRATCH_VMID = 300;
/** Seeded running containers per session for `pct set` loops: 200+i, 1200+i, 2200+i. */
export const BASE_GENERATIONS = 3;
/** A session's n-th container of a kind: a locked one that an unlock did not free is left behind. */
export const vmidOf = (first: number, i: number, generation: number) => first + i + 1000 * generation;
const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

export type Outcome =
	| 'completed'
	/** The request came back refused (a precondition, an unknown target): the reply ended without an execution. */
	| 'refused'
	/** A reply or note told the operator to send again / continue. */
	| 'resend-asked'
	| 'not-sent'
	/** The operator gave up waiting at this step (after --patience) and went on with a new request. */
	| 'no-request'
	| 'not-approved'
	/** The approval was refused (not a lost call): the loop could not go on, a bench or product fault to read in its log line. */
	| 'approval-refused'
	| 'no-terminal'
	| 'no-continuation';

export interface LoopRecord {
	session: number;
	k: number;
	tag: string;
	kind: LoopKind;
	vmid: number;
	sentAt: number;
	executionId?: string;
	outcome?: Outcome;
	/** Operator actions (a send, an approval) done again because the first try got no answer and did not take effect. */
	repeats: number;
	endedAt?: number;
	/** A session's scratch container (created and destroyed by turns), not its seeded one. */
	scratch: boolean;
	/** The container as the host showed it before the loop (what "nothing changed" means). */
	before: CtView;
}

export interface DriverContext {
	db: Sql;
	operator: Operator;
	random: Random;
	truth: TruthLedger;
	patienceMs: number;
	thinkMs: [number, number];
	log(line: string): void;
}

type MessageRow = { id: string; seq: number; status: string; text: string };
type ExecRow = { id: string; status: string; finishedAt: Date | null; leftovers: string | null; approvedAt: Date | null };

/** Polls `probe` every 250 ms until it returns something or the deadline passes. */
async function until<T>(probe: () => Promise<T | undefined>, deadline: number): Promise<T | undefined> {
	for (;;) {
		const v = await probe();
		if (v !== undefined) return v;
		if (Date.now() >= deadline) return undefined;
		await sleep(250);
	}
}

export const TERMINAL = ['succeeded', 'failed', 'cancelled', 'interrupted', 'denied', 'expired'];

/**
 * Sends `text` (which contains the unique `marker`) as the operator, through any live web process.
 * When no process answered, the operator looks (the message is there or not) and sends again only
 * when it is not: each such resend counts as a repeated action.
 */
async function send(ctx: DriverContext, sessionId: string | null, text: string, marker: string, deadline: number, rec?: { repeats: number }) {
	for (let attempt = 0; ; attempt++) {
		const r = await ctx.operator.mutate<{ sessionId: string; messageId: string }>('chat.send', sessionId ? { sessionId, text } : { text });
		if (r.kind === 'ok') {
			const [m] = await ctx.db<MessageRow[]>`select id, seq::float8 as seq, status, '' as text from messages where id = ${r.data.messageId}`;
			return { sessionId: r.data.sessionId, message: m };
		}
		if (r.kind === 'refused') throw new Error(`chat.send refused: ${r.status} ${r.message}`);
		const [stored] = await ctx.db<(MessageRow & { sessionId: string })[]>`
			select id, seq::float8 as seq, status, '' as text, session_id as "sessionId" from messages
			where role = 'user' and parts::text like ${`%${marker}%`} and (${sessionId}::uuid is null or session_id = ${sessionId}::uuid)`;
		if (stored) return { sessionId: stored.sessionId, message: stored };
		if (Date.now() >= deadline) return null;
		// The operator sends again once the page is back (counted once per message, however many tries).
		if (rec && attempt === 0) rec.repeats++;
		await sleep(500);
	}
}

/** Opens a session with a first message and waits for its reply (before any kill). */
export async function openSession(ctx: DriverContext, i: number): Promise<string> {
	const marker = `chaos hello ${i} `;
	const sent = await send(ctx, null, `${marker}(a new session)`, marker, Date.now() + 60_000);
	if (!sent) throw new Error(`session ${i}: the first message could not be sent`);
	const reply = await until(
		() => replyAfter(ctx.db, sent.sessionId, sent.message.seq).then((m) => (m && m.status !== 'streaming' ? m : undefined)),
		Date.now() + 60_000
	);
	if (reply?.status !== 'complete') throw new Error(`session ${i}: no reply to the first message (${reply?.status ?? 'none'})`);
	return sent.sessionId;
}

async function replyAfter(db: Sql, sessionId: string, seq: number): Promise<MessageRow | undefined> {
	const [m] = await db<MessageRow[]>`
		select id, seq::float8 as seq, status, parts::text as text from messages
		where session_id = ${sessionId} and role = 'assistant' and origin in ('chat', 'resume') and seq > ${seq}
		order by seq limit 1`;
	return m;
}

async function executionsOf(db: Sql, sessionId: string, tag: string): Promise<ExecRow[]> {
	return db<ExecRow[]>`
		select id, status, finished_at as "finishedAt", leftovers, approved_at as "approvedAt" from executions
		where requested_by_session = ${sessionId} and reason = ${tag} order by created_at`;
}

/** Which of its containers a session works on; a container still locked after an unlock loop is left behind. */
interface Targets {
	base: number;
	scratch: number;
	/** Containers an unlock was already asked for. */
	unlockTried: Set<number>;
	/** Scratch containers a start was already asked for (each created one is started once, then stopped and destroyed). */
	startTried: Set<number>;
}

/** What to ask for next: the session's own two containers, by what the host shows now. */
async function plan(ctx: DriverContext, i: number, k: number, t: Targets) {
	let onBase = k % 2 === 0 && t.base < BASE_GENERATIONS;
	for (;;) {
		const vmid = onBase ? vmidOf(BASE_VMID, i, t.base) : vmidOf(SCRATCH_VMID, i, t.scratch);
		const view = await ctx.truth.check(vmid, 'before the next loop');
		if (view.exists && view.lock && t.unlockTried.has(vmid)) {
			ctx.log(`session ${i}: CT ${vmid} is still locked (${view.lock}) after an unlock; moving on to another container`);
			if (onBase) t.base++;
			else t.scratch++;
			onBase &&= t.base < BASE_GENERATIONS;
			continue;
		}
		let kind: LoopKind;
		if (view.exists && view.lock) {
			kind = 'unlock';
			t.unlockTried.add(vmid);
		} else if (onBase) kind = 'set';
		else if (!view.exists) {
			kind = 'create';
			t.startTried.delete(vmid);
		} else if (view.status === 'running') kind = 'stop';
		else if (!t.startTried.has(vmid)) {
			kind = 'start';
			t.startTried.add(vmid);
		} else kind = 'destroy';
		return { kind, vmid, view, scratch: !onBase };
	}
}

function requestArgs(kind: LoopKind, vmid: number, tag: string) {
	const ct = `lxc:strong/${vmid}`;
	const byKind = {
		set: { target: ct, action: 'pct_set', params: { description: tag } },
		create: { target: 'strong', action: 'pct_create', params: { vmid, hostname: tag, template: TEMPLATE, start: false } },
		destroy: { target: ct, action: 'pct_destroy', params: {} },
		unlock: { target: ct, action: 'pct_unlock', params: {} },
		start: { target: ct, action: 'pct_start', params: {} },
		stop: { target: ct, action: 'pct_stop', params: {} }
	};
	return { ...byKind[kind], reason: tag };
}

/** One loop; returns how it ended. */
async function loop(ctx: DriverContext, sessionId: string, rec: LoopRecord, hardDeadline: () => number): Promise<Outcome> {
	const deadline = () => Math.min(Date.now() + ctx.patienceMs, hardDeadline());
	const marker = `chaos ${rec.tag} request `;
	const text = `${marker}${JSON.stringify(requestArgs(rec.kind, rec.vmid, rec.tag))}`;
	const sent = await send(ctx, sessionId, text, marker, deadline(), rec);
	if (!sent) return 'not-sent';

	// The request appears (awaiting approval), or the reply ends without one.
	let d = deadline();
	const found = await until(async () => {
		// The reply first: a request it made is stored before the reply ends, so it is seen next.
		const reply = await replyAfter(ctx.db, sessionId, sent.message.seq);
		const [e] = await executionsOf(ctx.db, sessionId, rec.tag);
		if (e) return e;
		if (reply && (reply.status === 'error' || reply.status === 'cancelled' || RESEND.test(reply.text))) return 'resend-asked' as const;
		if (reply?.status === 'complete') return 'refused' as const;
		return undefined;
	}, d);
	if (!found) return 'no-request';
	if (typeof found === 'string') return found;
	const executionId = found.id;
	rec.executionId = executionId;

	// Approve, as the card's button does; when nobody answered, look before clicking again. An
	// irreversible change (destroy) asks for the password again NOMOS_STEP_UP_MIN after sign-in:
	// the operator gives it in the card's dialog and approves again, as in the browser.
	d = deadline();
	let steppedUp = false;
	for (let attempt = 0; ; attempt++) {
		const r = await ctx.operator.mutate('executions.decide', { executionId, decision: 'approved', route: 'button' });
		if (r.kind === 'refused' && r.stepUp && !steppedUp) {
			const s = await ctx.operator.confirmPassword();
			if (s.kind === 'refused') ctx.log(`${rec.tag}: step-up refused: ${s.message}`);
			steppedUp = s.kind === 'ok';
			if (Date.now() >= d) return 'not-approved';
			continue;
		}
		if (r.kind === 'refused') {
			ctx.log(`${rec.tag}: approval refused (${r.code}): ${r.message}`);
			return 'approval-refused';
		}
		if (r.kind !== 'unreachable') break;
		const [a] = await ctx.db`select 1 from approvals where execution_id = ${executionId}`;
		if (a) break;
		if (Date.now() >= d) return 'not-approved';
		if (attempt === 0) rec.repeats++;
		await sleep(500);
	}

	d = deadline();
	const done = await until(async () => {
		const [e] = await ctx.db<
			ExecRow[]
		>`select id, status, finished_at as "finishedAt", leftovers, approved_at as "approvedAt" from executions where id = ${executionId}`;
		return TERMINAL.includes(e.status) && e.finishedAt ? e : undefined;
	}, d);
	if (!done) return 'no-terminal';

	// The agent's follow-up: a continuation reply (or a note asking the operator to go on).
	d = deadline();
	const follow = await until(async () => {
		const [note] = await ctx.db<{ id: string }[]>`
			select id from messages where session_id = ${sessionId} and role = 'system' and created_at >= ${done.finishedAt}
			  and parts::text ~* ${RESEND.source}`;
		if (note) return 'resend-asked' as const;
		const [m] = await ctx.db<MessageRow[]>`
			select id, seq::float8 as seq, status, parts::text as text from messages
			where session_id = ${sessionId} and role = 'assistant' and origin = 'continuation' and created_at >= ${done.finishedAt}
			order by seq limit 1`;
		if (!m || m.status === 'streaming') return undefined;
		return m.status === 'complete' && !RESEND.test(m.text) ? ('completed' as const) : ('resend-asked' as const);
	}, d);
	// The leftovers are read back before the continuation's note: settle on the latest row.
	const [final] = await ctx.db<
		ExecRow[]
	>`select id, status, finished_at as "finishedAt", leftovers, approved_at as "approvedAt" from executions where id = ${executionId}`;
	if (TERMINAL.includes(final.status)) await ctx.truth.settle(claimOf(final, rec.kind, rec.tag, rec.vmid, rec.before), 'when the loop ended');
	return follow ?? 'no-continuation';
}

/**
 * Loops until `stopping()` says so; a loop in progress then finishes (each wait bounded by the
 * patience and the hard deadline).
 */
export async function runSession(
	ctx: DriverContext,
	i: number,
	sessionId: string,
	stopping: () => boolean,
	hardDeadline: () => number,
	records: LoopRecord[]
): Promise<void> {
	const targets: Targets = { base: 0, scratch: 0, unlockTried: new Set(), startTried: new Set() };
	for (let k = 0; !stopping() && Date.now() < hardDeadline(); k++) {
		const p = await plan(ctx, i, k, targets);
		const rec: LoopRecord = {
			session: i,
			k,
			tag: `chaos-${i}-${k}`,
			kind: p.kind,
			vmid: p.vmid,
			scratch: p.scratch,
			sentAt: Date.now(),
			repeats: 0,
			before: p.view
		};
		records.push(rec);
		try {
			rec.outcome = await loop(ctx, sessionId, rec, hardDeadline);
		} catch (e) {
			ctx.log(`session ${i} loop ${k}: ${(e as Error).message}`);
			rec.outcome = 'not-sent';
		}
		rec.endedAt = Date.now();
		if (rec.outcome !== 'completed') ctx.log(`session ${i} ${rec.tag} (${rec.kind} CT ${rec.vmid}): ${rec.outcome}`);
		await sleep(ctx.random.between(...ctx.thinkMs));
	}
}

/**
 * After the drain: each container's newest loop whose execution is terminal by now gives the last
 * word about it (a loop may have given up before its execution ended); then every last word is
 * checked against the host once more.
 */
export async function settleFinal(db: Sql, truth: TruthLedger, records: LoopRecord[]): Promise<void> {
	const newest = new Map<number, LoopRecord>();
	for (const r of records) if (r.executionId) newest.set(r.vmid, r);
	for (const r of newest.values()) {
		const [e] = await db<
			ExecRow[]
		>`select id, status, finished_at as "finishedAt", leftovers, approved_at as "approvedAt" from executions where id = ${r.executionId!}`;
		if (e && TERMINAL.includes(e.status)) await truth.settle(claimOf(e, r.kind, r.tag, r.vmid, r.before), 'at the end');
	}
	await truth.checkAll('at the end');
}
