import { EventEmitter } from 'node:events';
import os from 'node:os';
import pg from 'pg';
import postgres from 'postgres';
import { Logger, run, runMigrations, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import { sql } from '../db/index';
import { MIGRATION_LOCK } from '../db/migrate';
import { emitEventNow } from '../db/queries/events';
import { announceIfGaveUp, closeAbandonedJobs } from '../db/queries/jobs';
import {
	addWorkerIds,
	beatWorkerProcess,
	holdsLifeLock,
	registerWorkerProcess,
	releaseDeadWorkerLocks,
	retakeLifeLock,
	unregisterWorkerProcess
} from '../db/queries/workers';
import { setCurrentProcess } from './current-process';
import { logger } from '../log';

const log = logger('worker');
const graphileLog = logger('graphile-worker');

/**
 * graphile-worker's own messages through the same log: failures as warn/error; its info lines
 * (every completed job, a connected worker) at debug, since Nomos logs what matters itself. A
 * job is named by id and task, never with its payload.
 */
const graphileLogger = new Logger((scope) => (level, message, meta) => {
	const { job, ...rest } = (meta ?? {}) as { job?: { id?: string; task_identifier?: string; attempts?: number } };
	const fields = { ...scope, ...rest, ...(job ? { job: { id: job.id, task: job.task_identifier, attempts: job.attempts } } : {}) };
	const lvl = String(level);
	if (lvl === 'error') graphileLog.error(fields, message);
	else if (lvl === 'warning') graphileLog.warn(fields, message);
	else graphileLog.debug(fields, message);
});

const BEAT_MS = 10_000;

export interface WorkerHandle {
	stop(): Promise<void>;
}

/**
 * Installs or upgrades graphile-worker's schema so any process can add jobs with SQL. Run as the
 * database's owner (roles.ts): the app's role may use the schema, never change it. Holds the
 * migration lock on the pool's one connection while graphile migrates over that same
 * connection, so the app role's grants (granted under that lock) never meet a half-made table.
 */
export async function migrateWorkerSchema(url: string): Promise<void> {
	const pool = new pg.Pool({ connectionString: url, max: 1, application_name: 'nomos-migrate' });
	pool.on('error', () => undefined);
	pool.on('connect', (client) => client.on('error', () => undefined));
	try {
		await pool.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
		await runMigrations({ pgPool: pool, logger: graphileLogger });
	} finally {
		// Ending the pool ends the session, and the session's lock with it.
		await pool.end();
	}
}

/**
 * Runs graphile-worker with Nomos's tasks. Signal handling is ours (see `stop`), and job
 * outcomes are written without batching so a shutdown mid-job never leaves a job locked.
 * The process announces its worker ids with a heartbeat (`worker_processes`); any process
 * releases the locks of workers whose process stopped beating (see releaseDeadWorkerLocks),
 * which it also does once right here, at start, for whatever a crashed predecessor held.
 */
export async function startWorker(opts: {
	url: string;
	taskList: TaskList;
	concurrency: number;
	/** graphile-worker crontab lines, e.g. `* * * * * inventory__sync`. */
	crontab?: string;
	/**
	 * Tasks that get slots of their own instead of sharing `concurrency` with the rest: an
	 * approved execution mostly waits on SSH, so it should not wait behind turns and syncs.
	 */
	lane?: { tasks: string[]; concurrency: number };
	/**
	 * Called first when the worker stops, before its running jobs are waited for: the turns
	 * running here hand over (conversation/active-turns.ts), so a stop never waits for a model.
	 */
	beforeStop?: () => Promise<void>;
	/**
	 * Called when the life lock was lost and another process recovered this one's work (see
	 * `retakeLifeLock`): what runs here must stop at once. Default: exit, so the supervisor
	 * starts a fresh process (systemd's Restart=always), as after a crash.
	 */
	onLifeLost?: () => void;
}): Promise<WorkerHandle> {
	const newPool = (max: number) => {
		const pool = new pg.Pool({ connectionString: opts.url, max });
		pool.on('error', (e) => log.error({ err: e }, `worker pool: ${e.message}`));
		pool.on('connect', (client) => client.on('error', (e) => log.error({ err: e }, `worker connection: ${e.message}`)));
		return pool;
	};
	const laneTasks = new Set(opts.lane?.tasks.filter((t) => t in opts.taskList) ?? []);
	const pool = newPool(opts.concurrency + 2);
	const lanePool = laneTasks.size ? newPool(opts.lane!.concurrency + 2) : null;
	let stopping: Promise<void> | undefined;
	let registered = false;
	const beatSql = postgres(opts.url, { max: 2, onnotice: () => undefined, connection: { application_name: 'nomos-worker-beat' } });
	// The process's life: a client of one connection that holds the life lock until the process
	// ends (see registerWorkerProcess), never closed for its age. Not a reserved connection of a
	// pool: postgres.js 3.4 crashes the process on the next query over a reserved connection that
	// closed. When it closes, the life is checked at once, not at the next beat, since any
	// process takes this one for dead within seconds of the lock's release.
	const life = postgres(opts.url, {
		max: 1,
		max_lifetime: 0, // 0: no age limit (postgres.js)
		idle_timeout: 0,
		onnotice: () => undefined,
		onclose: () => void (stopping || !registered ? undefined : checkLife()),
		connection: { application_name: 'nomos-worker-life' }
	});
	const released = await releaseDeadWorkerLocks(beatSql);
	if (released.length) log.info({ workers: released }, `released the locks of ${released.length} dead worker(s)`);
	const closed = await closeAbandonedJobs(sql());
	if (closed.removed || closed.explained)
		log.warn(closed, `jobs of dead workers: ${closed.removed} superseded copy(ies) removed, ${closed.explained} marked "its worker process died"`);
	// Registered before the runners start, so every job it takes belongs to a registered process;
	// the ids its jobs are locked with are added as they appear.
	const hostname = os.hostname();
	const me = await registerWorkerProcess(life, { hostname, pid: process.pid, workerIds: [] });
	setCurrentProcess(me.id);
	registered = true;
	const workerIds: string[] = [];
	const record = (id: string) => {
		workerIds.push(id);
		void addWorkerIds(life, me.id, [id]).catch((e: Error) => log.error({ err: e }, `could not record worker ${id}: ${e.message}`));
	};
	const events = new EventEmitter() as WorkerEvents;
	events.on('worker:create', ({ worker }) => record(worker.workerId));
	// graphile-worker 0.17 locks jobs and queues with the pool's id, not its workers' ids.
	events.on('pool:create', ({ workerPool }) => record(workerPool.id));
	// A job that used up its attempts shows on the Ops page at once, not at the next visit.
	events.on(
		'job:error',
		({ job }) =>
			void announceIfGaveUp(sql(), job.id, job.task_identifier).catch((e: Error) => log.warn({ err: e }, `could not announce job ${job.id}: ${e.message}`))
	);
	const preset = { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0, gracefulShutdownAbortTimeout: 10_000 } };
	// A runner only takes jobs of the tasks in its list: the lane's tasks go to their own runner.
	const runner: Runner = await run({
		pgPool: pool,
		events,
		taskList: Object.fromEntries(Object.entries(opts.taskList).filter(([name]) => !laneTasks.has(name))),
		concurrency: opts.concurrency,
		noHandleSignals: true,
		logger: graphileLogger,
		pollInterval: 2000,
		...(opts.crontab ? { crontab: opts.crontab } : { parsedCronItems: [] }),
		preset
	});
	const laneRunner: Runner | null = lanePool
		? await run({
				pgPool: lanePool,
				events,
				taskList: Object.fromEntries(Object.entries(opts.taskList).filter(([name]) => laneTasks.has(name))),
				concurrency: opts.lane!.concurrency,
				noHandleSignals: true,
				logger: graphileLogger,
				pollInterval: 2000,
				parsedCronItems: [],
				preset
			})
		: null;
	await addWorkerIds(life, me.id, workerIds);
	await emitEventNow(beatSql, { type: 'workers.changed', payload: { started: me.id } });
	// The life lock's connection can drop while this process lives (a network blip, a restarted
	// pooler, pg_terminate_backend). The same lock is taken again on a new connection when nobody
	// recovered this process meanwhile; when somebody did, its work in flight now belongs to
	// others and this process must not go on writing it (nor register a second identity that
	// shares its graphile pool id): it leaves, and its successor starts clean.
	const lifeLost = opts.onLifeLost ?? (() => process.exit(1));
	let checking: Promise<void> | null = null;
	function checkLife(): Promise<void> {
		checking ??= (async () => {
			const held = await holdsLifeLock(life, me.lockId).catch(() => false);
			if (held) {
				const state = await beatWorkerProcess(life, me.id);
				if (state === 'revived') await emitEventNow(beatSql, { type: 'workers.changed', payload: { revived: me.id } });
				if (state !== 'gone') return;
			} else if (await retakeLifeLock(life, me)) {
				log.warn({ process: me.id }, "the life lock's database connection dropped; took the same lock again (nobody had taken this process for dead)");
				await beatWorkerProcess(life, me.id);
				return;
			}
			if (stopping) return;
			log.error({ process: me.id }, 'this process lost its life lock and another process recovered its work: exiting, so that none of it is done twice');
			lifeLost();
		})()
			.catch((e: Error) => log.error({ err: e }, `life lock: ${e.message}`))
			.finally(() => (checking = null));
		return checking;
	}
	const beat = setInterval(() => void checkLife(), BEAT_MS);
	beat.unref();
	return {
		stop() {
			stopping ??= (async () => {
				clearInterval(beat);
				// Turns are handed over at once (they resume in another process, or in this one's
				// successor); executions get the grace period.
				await opts.beforeStop?.();
				await Promise.all([runner.stop(), laneRunner?.stop()]);
				await Promise.all([runner.promise.catch(() => undefined), laneRunner?.promise.catch(() => undefined)]);
				await Promise.all([pool.end(), lanePool?.end()]);
				await unregisterWorkerProcess(life, me.id).catch(() => undefined);
				setCurrentProcess(null);
				await emitEventNow(beatSql, { type: 'workers.changed', payload: { stopped: me.id } }).catch(() => undefined);
				await Promise.all([life.end({ timeout: 5 }), beatSql.end({ timeout: 5 })]);
			})();
			return stopping;
		}
	};
}
