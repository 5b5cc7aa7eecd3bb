// The chaos bench's counts, read after the run from the database and the Proxmox double's argv log.
import type { Sql } from 'postgres';
import { readArgvLog } from '../../tests/doubles/proxmox/state';
import { RESUMABLE_ACTIONS } from '../../src/lib/server/proxmox/actions';
import { stats, type Stats } from '../harness';
import { RESEND, type LoopRecord } from './sessions';

export const SLOW_WAIT_MS = 15_000;

export interface Waits {
	name: string;
	values: number[];
	/** Waits that had not ended by the end of the run (counted as over 15 s). */
	unended: number;
	over: number;
	stats: Stats;
	worst: string[];
}

export interface Figures {
	lost: { id: string; session: string; why: string }[];
	stranded: { id: string; status: string; tag: string }[];
	approved: number;
	twice: string[];
	duplicateRequests: number;
	resendMessages: { id: string; why: string }[];
	waits: Waits[];
	exhaustedJobs: { task: string; n: number; lastError: string | null }[];
	statuses: Record<string, number>;
	/** Approved runs of repeatable actions (pct_start, pct_stop…: proxmox/actions.ts `resume`) that ended interrupted (goal 0). */
	repeatableInterrupted: { id: string; action: string; tag: string; error: string | null }[];
	repeatableApproved: number;
	/** Runs a live worker took over after their process stopped (executions/resume.ts), by how they ended. */
	resumed: { n: number; ranAgain: number; alreadyDone: number; statuses: Record<string, number> };
}

type UserMsg = { id: string; session: string; seq: number; status: string; createdAt: Date };
type ReplyMsg = { id: string; session: string; seq: number; origin: string; createdAt: Date; firstDelta: Date | null };

function waits(name: string, rows: { wait: number | null; label: string }[]): Waits {
	const values = rows.map((r) => r.wait).filter((w): w is number => w !== null);
	const unended = rows.length - values.length;
	const worst = [...rows]
		.sort((a, b) => (b.wait ?? Infinity) - (a.wait ?? Infinity))
		.slice(0, 3)
		.map((r) => `${r.wait === null ? 'never' : `${(r.wait / 1000).toFixed(1)} s`} ${r.label}`);
	return { name, values, unended, over: values.filter((v) => v > SLOW_WAIT_MS).length + unended, stats: stats(values), worst };
}

export async function measure(db: Sql, sessionIds: string[], records: LoopRecord[], stateDir: string): Promise<Figures> {
	const users = await db<UserMsg[]>`
		select id, session_id as session, seq::float8 as seq, status, created_at as "createdAt" from messages
		where session_id = any(${sessionIds}::uuid[]) and role = 'user' order by seq`;
	const replies = await db<ReplyMsg[]>`
		select m.id, m.session_id as session, m.seq::float8 as seq, m.origin, m.created_at as "createdAt",
			(select min(ev.created_at) from events ev where ev.session_id = m.session_id and ev.type = 'message.delta' and ev.payload ->> 'messageId' = m.id::text) as "firstDelta"
		from messages m where m.session_id = any(${sessionIds}::uuid[]) and m.role = 'assistant' order by m.seq`;

	// Messages lost: still queued, or no chat reply of their own before the operator's next message.
	const lost: Figures['lost'] = [];
	const sendWaits: { wait: number | null; label: string }[] = [];
	for (const [i, u] of users.entries()) {
		const next = users.slice(i + 1).find((x) => x.session === u.session);
		const reply = replies.find((r) => r.session === u.session && r.seq > u.seq && r.origin !== 'continuation');
		const own = reply && (!next || reply.seq < next.seq) ? reply : undefined;
		if (u.status === 'queued') lost.push({ id: u.id, session: u.session, why: 'still queued' });
		else if (!own) lost.push({ id: u.id, session: u.session, why: next ? 'answered only together with a later message' : 'never answered' });
		const shown = reply?.firstDelta ?? null;
		sendWaits.push({ wait: shown ? shown.getTime() - u.createdAt.getTime() : null, label: `message ${u.id}` });
	}

	const execs = await db<
		{
			id: string;
			action: string;
			status: string;
			reason: string;
			error: string | null;
			result: string | null;
			resumes: number;
			approvedAt: Date | null;
			startedAt: Date | null;
			finishedAt: Date | null;
			session: string;
		}[]
	>`
		select id, action, status, reason, error, result, resumes, approved_at as "approvedAt", started_at as "startedAt", finished_at as "finishedAt", requested_by_session as session
		from executions where requested_by_session = any(${sessionIds}::uuid[])`;
	const statuses: Record<string, number> = {};
	for (const e of execs) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
	const approvedExecs = execs.filter((e) => e.approvedAt);
	const repeatable = approvedExecs.filter((e) => (RESUMABLE_ACTIONS as readonly string[]).includes(e.action));
	const resumedRuns = execs.filter((e) => e.resumes > 0);
	const resumedStatuses: Record<string, number> = {};
	for (const e of resumedRuns) resumedStatuses[e.status] = (resumedStatuses[e.status] ?? 0) + 1;
	const stranded = approvedExecs.filter((e) => e.status === 'approved' || e.status === 'running').map((e) => ({ id: e.id, status: e.status, tag: e.reason }));
	const perTag = new Map<string, number>();
	for (const e of execs) perTag.set(e.reason, (perTag.get(e.reason) ?? 0) + 1);
	const duplicateRequests = [...perTag.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);

	const approveWaits = approvedExecs.map((e) => {
		const end = e.startedAt ?? e.finishedAt;
		return { wait: end ? end.getTime() - e.approvedAt!.getTime() : null, label: `execution ${e.id} (${e.reason})` };
	});
	const contWaits = execs
		.filter((e) => e.finishedAt && e.approvedAt)
		.map((e) => {
			const r = replies.find((x) => x.session === e.session && x.origin === 'continuation' && x.createdAt >= e.finishedAt!);
			const shown = r?.firstDelta ?? null;
			return { wait: shown ? shown.getTime() - e.finishedAt!.getTime() : null, label: `execution ${e.id} (${e.reason})` };
		});

	const resendMessages = await db<{ id: string; why: string }[]>`
		select id, case when role = 'assistant' and status in ('error', 'cancelled') then 'reply ended ' || status else 'asks the operator to go on' end as why
		from messages
		where session_id = any(${sessionIds}::uuid[]) and role in ('assistant', 'system')
		  and ((role = 'assistant' and status in ('error', 'cancelled')) or parts::text ~* ${RESEND.source})`;

	const exhaustedJobs = await db<{ task: string; n: number; lastError: string | null }[]>`
		select t.identifier as task, count(*)::int as n, max(j.last_error) as "lastError"
		from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
		where j.attempts >= j.max_attempts and j.locked_by is null group by t.identifier order by 2 desc`;

	return {
		lost,
		stranded,
		approved: approvedExecs.length,
		twice: await mutationsTwice(stateDir, records),
		duplicateRequests,
		resendMessages,
		waits: [
			waits('message sent → first assistant delta', sendWaits),
			waits('approved → execution started', approveWaits),
			waits('execution finished → continuation reply started', contWaits)
		],
		exhaustedJobs,
		statuses,
		repeatableInterrupted: repeatable.filter((e) => e.status === 'interrupted').map((e) => ({ id: e.id, action: e.action, tag: e.reason, error: e.error })),
		repeatableApproved: repeatable.length,
		resumed: {
			n: resumedRuns.length,
			ranAgain: resumedRuns.filter((e) => e.result?.includes('so it ran again')).length,
			alreadyDone: resumedRuns.filter((e) => e.result?.includes('already done')).length,
			statuses: resumedStatuses
		}
	};
}

/**
 * Mutations the host ran more than once. A pct set / pct create carries its loop's tag; a
 * pct destroy of a session's scratch container must come once between two creates of it.
 */
async function mutationsTwice(stateDir: string, records: LoopRecord[]): Promise<string[]> {
	const argv = await readArgvLog(stateDir);
	const out: string[] = [];
	for (const r of records) {
		if (r.kind !== 'set' && r.kind !== 'create') continue;
		const n = argv.filter((a) =>
			r.kind === 'set'
				? a[0] === 'pct' && a[1] === 'set' && a[2] === String(r.vmid) && a.includes(r.tag)
				: a[0] === 'pct' && a[1] === 'create' && a[2] === String(r.vmid) && a.includes(r.tag)
		).length;
		if (n > 1) out.push(`${r.tag}: pct ${r.kind} ran ${n} times`);
	}
	const scratch = new Set(records.filter((r) => r.scratch).map((r) => String(r.vmid)));
	for (const vmid of scratch) {
		let destroys = 0;
		for (const a of [...argv, ['pct', 'create', vmid]]) {
			if (a[0] !== 'pct' || a[2] !== vmid) continue;
			if (a[1] === 'destroy') destroys++;
			if (a[1] === 'create') {
				if (destroys > 1) out.push(`CT ${vmid}: pct destroy ran ${destroys} times between two creates`);
				destroys = 0;
			}
		}
	}
	return out;
}
