import type { Sql } from '../db/index';
import { pingDatabase } from '../db/queries/health';
import { countLiveWorkers } from '../db/queries/workers';
import { listGaveUpJobs, type GaveUpGroup } from '../db/queries/jobs';
import { migrationsDir, migrationsUpToDate, newestAppliedMigration, newestMigration } from '../db/migrate';
import { logger } from '../log';

const log = logger('health');

export type CheckName = 'database' | 'migrations' | 'worker';
export type WarningName = 'jobs';

export interface Readiness {
	ready: boolean;
	/** The checks that failed, in order; empty when ready. */
	failed: CheckName[];
	checks: {
		database: { ok: boolean; error?: string };
		migrations: { ok: boolean; applied?: number | null; expected?: number; error?: string };
		worker: { ok: boolean; alive?: number; error?: string };
	};
	/**
	 * What an operator should look at although the app is ready: background jobs that gave up.
	 * They never make it "not ready": the process serves requests and runs new jobs as before, a
	 * restart or a load balancer's failover would fix none of them (a webhook endpoint that is
	 * down, a host that refuses), and a 503 would hide the Ops page that says what they are.
	 */
	warnings: WarningName[];
	jobs: { ok: boolean; gaveUp?: number; tasks?: GaveUpGroup[]; error?: string };
}

export interface ReadinessOptions {
	/** The migrations this code expects (default: the app's `drizzle/`). */
	migrationsDir?: string;
	/** A check that takes longer fails (the pool may be waiting to connect). */
	timeoutMs?: number;
}

const TIMEOUT_MS = 2000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
	});
	return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The journal is read once per directory: it changes only with the code. */
const expected = new Map<string, Promise<number>>();

/**
 * /readyz: the database answers, its migrations are the ones this code expects (the same test
 * as the migrator's fast path: the newest applied journal time), and some worker process beat
 * within WORKER_DEAD_AFTER_S (any process's, not necessarily this one's). Background jobs that
 * gave up come as a warning (see Readiness.warnings). Four small queries. Failures say which
 * check failed, never a connection string; job failures are masked (see maskReason).
 */
export async function checkReadiness(sql: Sql, opts: ReadinessOptions = {}): Promise<Readiness> {
	const ms = opts.timeoutMs ?? TIMEOUT_MS;
	const dir = opts.migrationsDir ?? migrationsDir();
	const checks: Readiness['checks'] = { database: { ok: false }, migrations: { ok: false }, worker: { ok: false } };
	try {
		await within(pingDatabase(sql), ms);
		checks.database = { ok: true };
	} catch (e) {
		checks.database = { ok: false, error: `unreachable: ${reason(e)}` };
		checks.migrations = { ok: false, error: 'database unreachable' };
		checks.worker = { ok: false, error: 'database unreachable' };
		return done(checks, { ok: false, error: 'database unreachable' });
	}
	let newest = expected.get(dir);
	if (!newest) {
		newest = newestMigration(dir);
		expected.set(dir, newest);
		newest.catch(() => expected.delete(dir));
	}
	const [migrations, worker, gaveUp] = await Promise.allSettled([
		within(Promise.all([newest, newestAppliedMigration(sql)]), ms),
		within(countLiveWorkers(sql), ms),
		within(listGaveUpJobs(sql), ms)
	]);
	if (migrations.status === 'fulfilled') {
		const [want, applied] = migrations.value;
		checks.migrations = { ok: migrationsUpToDate(applied, want), applied, expected: want };
		if (!checks.migrations.ok) checks.migrations.error = applied === null ? 'none applied' : 'older than this code expects';
	} else checks.migrations = { ok: false, error: reason(migrations.reason) };
	if (worker.status === 'fulfilled') {
		checks.worker = { ok: worker.value > 0, alive: worker.value };
		if (!checks.worker.ok) checks.worker.error = 'no worker process has beaten recently';
	} else checks.worker = { ok: false, error: reason(worker.reason) };
	const jobs: Readiness['jobs'] =
		gaveUp.status === 'fulfilled'
			? { ok: gaveUp.value.length === 0, gaveUp: gaveUp.value.reduce((n, g) => n + g.count, 0), tasks: gaveUp.value }
			: { ok: false, error: reason(gaveUp.reason) };
	return done(checks, jobs);
}

function reason(e: unknown): string {
	const err = e as { code?: string; message?: string };
	// Connection errors name host and port; the probe is public, so only the kind is said.
	if (err.code && /^[A-Z]+$/.test(err.code)) return err.code;
	return (err.message ?? String(e)).slice(0, 200);
}

let lastReady: boolean | undefined;

function done(checks: Readiness['checks'], jobs: Readiness['jobs']): Readiness {
	const failed = (Object.keys(checks) as CheckName[]).filter((k) => !checks[k].ok);
	const ready = failed.length === 0;
	if (lastReady !== ready) {
		if (ready) log.info('ready');
		else log.warn({ failed, checks }, `not ready: ${failed.join(', ')}`);
		lastReady = ready;
	}
	// Unreadable while the database is down: that is said by the checks already.
	const warnings: WarningName[] = checks.database.ok && !jobs.ok ? ['jobs'] : [];
	return { ready, failed, checks, warnings, jobs };
}

/** How long a probe reuses a result, in ms. */
export const PROBE_REUSE_MS = 1000;

/**
 * checkReadiness for a probe: concurrent probes share one check and a result is reused for
 * PROBE_REUSE_MS, so a flood of probes costs at most three small queries a second. `now` is the
 * clock the window is read on (a test moves its own).
 */
export function readinessProbe(now: () => number = Date.now): (sql: Sql) => Promise<Readiness> {
	let recent: { at: number; result: Promise<Readiness> } | undefined;
	return (sql) => {
		const t = now();
		if (!recent || t - recent.at > PROBE_REUSE_MS) recent = { at: t, result: checkReadiness(sql) };
		return recent.result;
	};
}

/** The process's probe (/readyz). */
export const probeReadiness = readinessProbe();

/** What /readyz answers for a result: 200 when ready ("degraded" with warnings), else 503 naming the failed checks. */
export function readinessAnswer(r: Readiness): {
	status: 200 | 503;
	body: { status: 'ready' | 'degraded' | 'not ready'; failed: CheckName[]; warnings: WarningName[]; checks: Readiness['checks']; jobs: Readiness['jobs'] };
} {
	const status = !r.ready ? 'not ready' : r.warnings.length ? 'degraded' : 'ready';
	return { status: r.ready ? 200 : 503, body: { status, failed: r.failed, warnings: r.warnings, checks: r.checks, jobs: r.jobs } };
}
