import type { Sql } from '../db/index';
import { getExecution } from '../db/queries/executions';
import { interruptAbandoned } from '../db/queries/stranded';
import { claimDeadProcess, countLiveWorkers, listDeadProcesses, type DeadProcess } from '../db/queries/workers';
import { emitEvent } from '../db/queries/events';
import { closeAbandonedJobs, releaseJobsOf } from '../db/queries/jobs';
import { announceExecution } from '../db/queries/executions';
import { handOverAndResume } from '../conversation/hand-over';
import { handOverToResume, queueContinuations, requeueStranded } from '../executions/lifecycle';
import { settleAbandoned } from '../executions/remote-stop';
import { logger } from '../log';

const log = logger('recovery');

/** How often every process looks for dead worker processes (one cheap query on pg_locks). */
export const RECOVERY_CHECK_MS = 2_000;

export interface Recovered {
	process: DeadProcess;
	interrupted: string[];
	/** Executions of repeatable actions handed to a live worker to finish (executions/resume.ts). */
	handedOver: string[];
	resumed: number;
}

/**
 * Picks up the work of worker processes that died. A dead process is one whose life lock is free
 * (its connection closed: kill -9, OOM, power), told apart from a slow one at once, with no
 * heartbeat to wait out. One live process claims each dead one (claimDeadProcess) and, in one
 * transaction: hands its running executions of repeatable actions back to be resumed by a live
 * worker under their approval (lifecycle.ts handOverToResume), marks the others `interrupted`, hands its streaming replies over and
 * queues the turns that resume them, and releases its graphile-worker locks (its jobs run again,
 * its sessions' queues open), recording why on jobs that have no attempts left. Then, for each
 * interrupted execution, the command is stopped on the host and its target read back before the
 * agent is told (the continuation), so the agent never reads a target still being changed.
 */
export async function recoverDeadProcesses(sql: Sql): Promise<Recovered[]> {
	const out: Recovered[] = [];
	for (const dead of await listDeadProcesses(sql)) {
		const r = await sql.begin(async (tx) => {
			const p = await claimDeadProcess(tx, dead);
			if (!p) return null;
			// Before the dead worker's jobs are released: their run jobs are queued again (superseding the dead copies).
			const handedOver = await handOverToResume(tx, { runners: [p.id] }, `its worker process (pid ${p.pid} on ${p.hostname}) died`);
			const interrupted = await interruptAbandoned(tx, { runners: [p.id] });
			for (const id of interrupted) {
				const e = (await getExecution(tx, id))!;
				await announceExecution(tx, e, 'execution.updated', { terminal: e.status });
			}
			const resumed = await handOverAndResume(tx, { runners: [p.id] });
			if (p.workerIds.length) {
				await releaseJobsOf(tx, p.workerIds, `its worker process (pid ${p.pid} on ${p.hostname}) died while running it`);
			}
			// Pages say at once when no worker is left (the presence watcher would say it within 15 s).
			await emitEvent(tx, { type: 'workers.changed', payload: { died: p.id, alive: await countLiveWorkers(tx) } });
			return { process: p, interrupted, handedOver, resumed };
		});
		if (!r) continue;
		log.warn(
			{
				process: r.process.id,
				pid: r.process.pid,
				host: r.process.hostname,
				interrupted: r.interrupted.length,
				handedOver: r.handedOver.length,
				resumed: r.resumed
			},
			`worker process ${r.process.pid} on ${r.process.hostname} died: ${r.interrupted.length} execution(s) interrupted, ${r.handedOver.length} handed over to be resumed, ${r.resumed} reply(ies) resumed elsewhere`
		);
		out.push(r);
		// Its jobs that were superseded while they ran go; lost attempts say why (Ops, /readyz).
		await closeAbandonedJobs(sql).catch((e: Error) => log.error({ err: e }, `could not account for the dead worker's jobs: ${e.message}`));
		for (const id of r.interrupted) await settleInterrupted(sql, id);
	}
	// Whatever lost its job with them (a job on its last attempt, a claim that never came).
	if (out.length) {
		const requeued = await sql.begin((tx) => requeueStranded(tx));
		if (requeued) log.warn({ requeued }, `${requeued} stranded job(s) queued again`);
	}
	return out;
}

/** Stops what an interrupted execution left running on its host, reads its target back, then tells the agent. */
async function settleInterrupted(sql: Sql, id: string): Promise<void> {
	const e = await getExecution(sql, id);
	if (!e) return;
	if (e.classification !== 'read_only')
		await settleAbandoned(e).catch((err: Error) => log.error({ err, execution: id }, `stop and read-back failed: ${err.message}`));
	await sql.begin((tx) => queueContinuations(tx, id));
}

/**
 * Runs recoverDeadProcesses every RECOVERY_CHECK_MS in this process (web and worker alike, so a
 * lone dead worker is noticed by the web process too); one pass at a time. Returns the stop.
 */
export function watchForDeadProcesses(sql: Sql): () => void {
	let running = false;
	const pass = () => {
		if (running) return;
		running = true;
		void recoverDeadProcesses(sql)
			.catch((e: Error) => log.error({ err: e }, `recovery: ${e.message}`))
			.finally(() => (running = false));
	};
	pass();
	const timer = setInterval(pass, RECOVERY_CHECK_MS);
	timer.unref();
	return () => clearInterval(timer);
}
