// From each kill to the resumption of the killed process's work. Right before the signal, what
// the process had in flight is read from the database: the graphile-worker jobs locked by its
// worker ids (worker_processes lists them by pid) and, per job, the execution or session it
// serves. Afterwards each piece counts as resumed at the first sign that another process (or
// the dying one, on SIGTERM) moved it on or truthfully closed it:
//   execution  it started (was approved) or became terminal;
//   session    a new assistant delta in that session (a turn streaming again, or closed as
//              interrupted), before the operator's next message there — what the operator's own
//              resend set off is not the system resuming;
//   job        its row is gone (done) or another worker locked it (polled while the run goes).
import os from 'node:os';
import type { Sql } from 'postgres';
import type { KillRecord } from './fleet';

export interface Piece {
	kind: 'execution' | 'session' | 'job';
	task: string;
	jobId: string;
	sessionId?: string;
	executionId?: string;
	/** The execution's status at the kill. */
	statusAt0?: string;
	/** Whether the session had something unfinished at the kill (a streaming or queued message, an unclaimed result). */
	sessionBusy?: boolean;
	/** When the job row was gone or taken by another worker (epoch ms). */
	jobMovedAt?: number;
	resumedAt?: number;
	how?: string;
}

export interface KillWork {
	kill: KillRecord;
	/** When the work was read (epoch ms): just before the signal, seconds before it on a loaded machine. */
	snapAt?: number;
	/** What locked the process's jobs (graphile-worker 0.17 locks with its pool's id). */
	lockers: string[];
	pieces: Piece[];
}

/**
 * Which process started which job, from the workers' debug log ("Found task <id> (<task>)", a
 * pino line with the pid), and so which lock ids are whose. graphile-worker 0.17 locks jobs with a pool id that Nomos does not
 * record anywhere (worker_processes lists the workers' ids, which never appear in locked_by), so
 * the log is the one place that ties a locked job to a process.
 */
export class JobOwners {
	readonly #owner = new Map<string, number>();
	/** Lock ids (graphile's pool ids) seen on jobs a process started: its later jobs carry them too. */
	readonly #lockers = new Map<string, number>();

	line(pid: number, line: string): void {
		const m = /"msg":"Found task (\d+) \(/.exec(line);
		if (m) this.#owner.set(m[1], pid);
	}

	/** Learns which process each lock id belongs to, from the jobs locked now (called while the run goes). */
	async learn(db: Sql): Promise<void> {
		const rows = await db<
			{ id: string; lockedBy: string }[]
		>`select id::text as id, locked_by as "lockedBy" from graphile_worker._private_jobs where locked_by is not null`;
		for (const r of rows) {
			const pid = this.#owner.get(r.id);
			if (pid !== undefined) this.#lockers.set(r.lockedBy, pid);
		}
	}

	jobsOf(pid: number): string[] {
		return [...this.#owner].filter(([, p]) => p === pid).map(([id]) => id);
	}

	lockersOf(pid: number): string[] {
		return [...this.#lockers].filter(([, p]) => p === pid).map(([id]) => id);
	}
}

type JobRow = { id: string; task: string; payload: Record<string, unknown> };

/**
 * What the process with `pid` has in flight right now: locked jobs it started (by its log) or
 * locked by an id it registered in worker_processes (nothing for a web process: it runs no jobs).
 */
export async function snapshotWork(db: Sql, pid: number, owners: JobOwners): Promise<{ snapAt: number; lockers: string[]; pieces: Piece[] }> {
	const snapAt = Date.now();
	const rows = await db<{ workerIds: string[] }[]>`select worker_ids as "workerIds" from worker_processes where pid = ${pid} and hostname = ${os.hostname()}`;
	await owners.learn(db);
	const workerIds = [...rows.flatMap((r) => r.workerIds), ...owners.lockersOf(pid)];
	const jobs = await db<(JobRow & { lockedBy: string })[]>`
		select j.id::text as id, t.identifier as task, j.payload, j.locked_by as "lockedBy"
		from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
		where j.locked_by is not null and (j.locked_by = any(${workerIds}::text[]) or j.id = any(${owners.jobsOf(pid)}::bigint[]))`;
	const lockers = [...new Set([...workerIds, ...jobs.map((j) => j.lockedBy)])];
	const pieces: Piece[] = [];
	for (const j of jobs) {
		const executionId = typeof j.payload.executionId === 'string' ? j.payload.executionId : undefined;
		const sessionId = typeof j.payload.sessionId === 'string' ? j.payload.sessionId : undefined;
		if (j.task === 'executions__run' && executionId) {
			const [e] = await db<{ status: string }[]>`select status from executions where id = ${executionId}`;
			pieces.push({ kind: 'execution', task: j.task, jobId: j.id, executionId, statusAt0: e?.status });
		} else if (sessionId && (j.task === 'agent__run_turn' || j.task === 'agent__continue_session')) {
			// Unfinished: a message streaming or queued, an operator message without a reply after
			// it, a finished execution not yet continued, or one claimed for a continuation whose
			// reply has not begun.
			const [busy] = await db<{ n: number }[]>`
				select (
					(select count(*) from messages where session_id = ${sessionId} and (status = 'streaming' or (role = 'user' and status = 'queued'))) +
					(select count(*) from messages u where u.session_id = ${sessionId} and u.role = 'user' and not exists (
						select 1 from messages a where a.session_id = ${sessionId} and a.role = 'assistant' and a.origin <> 'continuation' and a.seq > u.seq)) +
					(select count(*) from execution_sessions l join executions e on e.id = l.execution_id
					 where l.session_id = ${sessionId} and e.finished_at is not null and (l.continued_at is null or not exists (
						select 1 from messages m where m.session_id = ${sessionId} and m.role = 'assistant' and m.origin = 'continuation' and m.created_at >= l.continued_at)))
				)::int as n`;
			pieces.push({ kind: 'session', task: j.task, jobId: j.id, sessionId, sessionBusy: busy.n > 0 });
		} else pieces.push({ kind: 'job', task: j.task, jobId: j.id });
	}
	return { snapAt, lockers, pieces };
}

/** Watches the killed processes' jobs while the run goes: when each one is done or taken by another worker. */
export class JobWatch {
	readonly #open: { piece: Piece; dead: Set<string> }[] = [];

	add(work: KillWork): void {
		for (const piece of work.pieces) this.#open.push({ piece, dead: new Set(work.lockers) });
	}

	async poll(db: Sql): Promise<void> {
		const open = this.#open.filter((o) => o.piece.jobMovedAt === undefined);
		if (!open.length) return;
		const rows = await db<{ id: string; lockedBy: string | null }[]>`
			select id::text as id, locked_by as "lockedBy" from graphile_worker._private_jobs where id = any(${open.map((o) => o.piece.jobId)}::bigint[])`;
		const now = Date.now();
		const byId = new Map(rows.map((r) => [r.id, r.lockedBy]));
		for (const o of open) {
			if (!byId.has(o.piece.jobId)) o.piece.jobMovedAt = now;
			else {
				const by = byId.get(o.piece.jobId);
				if (by && !o.dead.has(by)) o.piece.jobMovedAt = now;
			}
		}
	}
}

const ms = (d: Date | null | undefined) => (d ? d.getTime() : undefined);

/** Fills each piece's resumedAt from the database (after the run). */
export async function resolveWork(db: Sql, all: KillWork[]): Promise<void> {
	for (const w of all) {
		const t0 = w.kill.at;
		for (const p of w.pieces) {
			if (p.kind === 'execution' && p.executionId) {
				const [e] = await db<{ startedAt: Date | null; finishedAt: Date | null }[]>`
					select started_at as "startedAt", finished_at as "finishedAt" from executions where id = ${p.executionId}`;
				// Finished between the snapshot and the signal: nothing was left to resume.
				if (e?.finishedAt && e.finishedAt.getTime() <= t0) {
					p.resumedAt = t0;
					p.how = 'finished before the signal';
					continue;
				}
				const started = p.statusAt0 === 'approved' ? ms(e?.startedAt) : undefined;
				const candidates = [started, ms(e?.finishedAt)].filter((x): x is number => x !== undefined && x > t0);
				if (candidates.length) {
					p.resumedAt = Math.min(...candidates);
					p.how = p.resumedAt === started ? 'execution started' : 'execution terminal';
				}
			} else if (p.kind === 'session' && p.sessionId && p.sessionBusy) {
				const [r] = await db<{ at: Date | null }[]>`
					select min(ev.created_at) as at from events ev
					where ev.session_id = ${p.sessionId} and ev.type = 'message.delta' and ev.created_at > ${new Date(t0)}
					  and ev.created_at < coalesce((
						select min(m.created_at) from messages m
						where m.session_id = ${p.sessionId} and m.role = 'user' and m.created_at > ${new Date(t0)}
					  ), 'infinity'::timestamptz)`;
				if (r?.at) {
					p.resumedAt = r.at.getTime();
					p.how = 'the session streamed again';
				} else if (w.snapAt !== undefined) {
					// The reply that made it busy ended between the snapshot and the signal (its process
					// wrote its end, then still held the job): nothing was left to resume.
					const [done] = await db<{ n: number }[]>`
						select count(*)::int as n from events ev
						where ev.session_id = ${p.sessionId} and ev.type = 'message.delta' and ev.payload->>'status' = 'complete'
						  and ev.created_at >= ${new Date(w.snapAt)} and ev.created_at <= ${new Date(t0)}`;
					if (done.n > 0) {
						p.resumedAt = t0;
						p.how = 'finished before the signal';
					}
				}
			} else if (p.kind === 'session' && !p.sessionBusy) {
				// Its session had nothing unfinished: there was no work left to resume.
				p.resumedAt = t0;
				p.how = 'nothing unfinished in its session';
			} else if (p.jobMovedAt !== undefined) {
				p.resumedAt = p.jobMovedAt;
				p.how = 'job done or taken by another worker';
			}
		}
	}
}

/** A kill's resumption: when the last of its pieces resumed (undefined: some piece never did). */
export function killResumption(w: KillWork): number | undefined {
	if (!w.pieces.length) return undefined;
	if (w.pieces.some((p) => p.resumedAt === undefined)) return Infinity;
	return Math.max(...w.pieces.map((p) => p.resumedAt! - w.kill.at));
}
