import { connectDb, disconnectDb, sql } from './db/index';
import { Hub, setHub } from './realtime/hub';
import { installHookCache } from './watches/hook-cache';
import { handOverTurns, installTurnCancellation } from './conversation/active-turns';
import { serveNodeSse } from './realtime/node-sse';
import { startEmbeddedPostgres, stopEarlyPostgres, takeEarlyPostgres, type EmbeddedPostgres } from './db/embedded';
import { runMigrations } from './db/migrate';
import { ensureSealKey } from './db/seal';
import { HookSecretUnsealable, sealPlainHookSecrets } from './watches/sealed-secret';
import { APP_ROLE, appRolePassword, canAlterAuditLog, ensureAppRole, grantAppRole, roleUrl, urlRole } from './db/roles';
import { countOperators, issueSetupToken } from './db/queries/operators';
import { ensureConfiguredOperator } from './auth/accounts';
import { upsertConfiguredHosts } from './db/queries/hosts';
import { importKnowledgeDir } from './knowledge/import';
import { seedGuideNotes } from './knowledge/guide';
import { env, type Env } from './env';
import type { WorkerHandle } from './jobs/worker';
import { enqueueJob, gateJobsOn, PRIORITY } from './jobs/enqueue';
import { RUN_TASK } from './executions/lifecycle';
import { NOTIFY_TASK } from './notify/notices';
import { INTAKE_TASK } from './watches/intake';
import { watchWorkerPresence } from './jobs/presence';
import { watchForDeadProcesses } from './recovery/dead-processes';
import { crontab, scheduleSweep } from './jobs/schedule';
import type { TaskList } from 'graphile-worker';
import { logger } from './log';

export type Role = 'web' | 'worker';

export interface Runtime {
	role: Role;
	env: Env;
	databaseUrl: string;
	embedded?: EmbeddedPostgres;
	worker?: WorkerHandle;
	/** Stops the worker (recording running jobs' outcomes), the pool, then embedded Postgres. */
	shutdown(): Promise<void>;
	onShutdown(fn: () => Promise<void> | void): void;
}

export interface BootOptions {
	/** The graphile-worker tasks (repo-root `tasks/`); needed wherever this process runs a worker. */
	taskList?: TaskList;
	/**
	 * Loads the tasks' modules (they load lazily for a fast start). Run a second after the worker
	 * started, so the first turn, execution or continuation does not wait for its code.
	 */
	preloadTasks?: () => Promise<unknown>;
}

/** How long after the worker started its tasks' modules are loaded. */
const PRELOAD_DELAY_MS = 1000;

/** A web process's background start waits at most this long for its first answered request. */
const AFTER_BOOT_MS = 300;

/**
 * Resolves when server.js has answered its first request (it calls `__nomosAnswered`), or `ms`
 * after the boot finished (no server.js: tests and scripts; or nobody asked yet).
 */
function firstAnswer(ms: number): Promise<void> {
	const g = globalThis as { __nomosAnswered?: () => void; __nomosBooted?: () => void };
	return new Promise((resolve) => {
		g.__nomosAnswered = resolve;
		g.__nomosBooted = () => setTimeout(resolve, ms);
	});
}

const g = globalThis as unknown as { __nomosRuntime?: Promise<Runtime> };

const log = logger('boot');
const pgLog = logger('postgres');
const pgLine = (line: string) => (/FATAL|PANIC/.test(line) ? pgLog.error(line) : pgLog.info(line));

/** The process's runtime, booting it on first call (idempotent across dev reloads). */
export function boot(role: Role, options: BootOptions = {}): Promise<Runtime> {
	g.__nomosRuntime ??= start(role, options);
	return g.__nomosRuntime;
}

export function currentRuntime(): Promise<Runtime> | undefined {
	return g.__nomosRuntime;
}

async function start(role: Role, options: BootOptions): Promise<Runtime> {
	let config: Env;
	try {
		config = env();
	} catch (e) {
		await stopEarlyPostgres();
		throw e;
	}
	// Loading code blocks the one thread that answers requests: in a web process, graphile-worker
	// (and its schema check) and the model check load once the first page has been answered
	// (server.js says when) or a moment after the boot, whichever comes first. A worker process
	// needs them at once. The agent and SSH load only when first used.
	const settled = role === 'web' ? firstAnswer(AFTER_BOOT_MS) : Promise.resolve();
	const workerModule = settled.then(() => import('./jobs/worker'));
	let embedded: EmbeddedPostgres | undefined;
	// The database's owner runs the migrations; the app (this process's pool, its worker) connects
	// as databaseUrl's role, which owns nothing (db/roles.ts). `appRole` is that role when the
	// owner is to grant it its rights, null when one role does both (DATABASE_URL alone).
	let ownerUrl: string;
	let databaseUrl: string;
	let appRole: Promise<string> | null = null;
	if (config.DATABASE_URL) {
		databaseUrl = config.DATABASE_URL;
		ownerUrl = config.NOMOS_OWNER_DATABASE_URL ?? databaseUrl;
		const u = new URL(databaseUrl);
		log.info(
			`database: external Postgres at ${u.hostname}:${u.port || 5432}${u.pathname}` +
				(config.NOMOS_OWNER_DATABASE_URL ? ' (migrations as NOMOS_OWNER_DATABASE_URL)' : '')
		);
		const app = urlRole(databaseUrl);
		if (config.NOMOS_OWNER_DATABASE_URL && app && app !== urlRole(ownerUrl)) appRole = Promise.resolve(app);
	} else {
		// server.js starts it while the app's code loads; anything else (tests, scripts) starts it here.
		const early = takeEarlyPostgres(config.NOMOS_DATA_DIR, config.NOMOS_PG_PORT);
		embedded = await (early ?? startEmbeddedPostgres({ dataDir: config.NOMOS_DATA_DIR, port: config.NOMOS_PG_PORT, log: pgLine, claim: true }));
		ownerUrl = embedded.url;
		const password = await appRolePassword(config.NOMOS_DATA_DIR);
		databaseUrl = roleUrl(embedded.url, APP_ROLE, password);
		log.info(
			`database: embedded Postgres on 127.0.0.1:${config.NOMOS_PG_PORT}, data in ${config.NOMOS_DATA_DIR}` +
				(embedded.owned ? '' : ' (reused a running server)')
		);
		const made = ensureAppRole(ownerUrl, password);
		appRole = made.then((r) => {
			if (r !== 'unchanged') log.info(`database: role ${APP_ROLE} ${r} (the app's connections; it owns nothing)`);
			return APP_ROLE;
		});
		appRole.catch(() => undefined);
	}
	// The key approvals are sealed with (db/seal.ts): made (0600) in the data dir on first start, also with DATABASE_URL.
	await ensureSealKey();
	const grant = async () => {
		if (appRole) await grantAppRole(ownerUrl, await appRole);
	};
	// Nomos's tables and graphile-worker's schema are independent: checked side by side. The first
	// requests need only Nomos's; a job waits for the other check (gateJobsOn), the worker too.
	// Each is followed by the app role's grants, so a table either made is usable at once.
	const workerSchema = workerModule.then((m) => m.migrateWorkerSchema(ownerUrl)).then(grant);
	gateJobsOn(workerSchema);
	workerSchema.catch(() => undefined);
	await runMigrations(ownerUrl);
	await grant();
	if (role === 'worker') await workerSchema;
	else
		workerSchema.catch((e: Error) => {
			log.fatal(`graphile-worker's schema: could not be checked: ${e.message}`);
			process.exit(1);
		});
	connectDb(databaseUrl);
	// Told once per start (awaited: one query, and the start's log is then complete when it says ready):
	// the app's own connection could undo the audit trail's protection.
	await canAlterAuditLog(sql()).then(
		(can) => {
			if (!can) return;
			log.warn(
				config.DATABASE_URL && !config.NOMOS_OWNER_DATABASE_URL
					? "database: DATABASE_URL's role owns audit_log (or is a superuser), so the app's own connection could switch off the audit trail's append-only triggers; set NOMOS_OWNER_DATABASE_URL to the owner and give DATABASE_URL a role of its own (deploy/README.md)"
					: "database: the app's role owns audit_log (or is a superuser), so it could switch off the audit trail's append-only triggers; give DATABASE_URL a role that owns nothing (deploy/README.md)"
			);
		},
		(e: Error) => log.warn(`database: could not check the app role's rights on audit_log: ${e.message}`)
	);

	// Signed hooks' secrets from before 0033 sealed with the outside key, and those the previous key
	// sealed sealed again (watches/sealed-secret.ts); idempotent, so every process may run it.
	await sealPlainHookSecrets(sql()).then(
		(r) => {
			if (r.sealed || r.resealed) log.info(`alert hooks: ${r.sealed} plain secrets sealed, ${r.resealed} sealed again with the current key`);
			for (const id of r.unsealable) log.error(new HookSecretUnsealable(id).message);
		},
		(e: Error) => log.error(`alert hooks: could not seal plain secrets: ${e.message}`)
	);

	// The configured operator and hosts, the knowledge import and the event hub do not depend on
	// each other: side by side.
	const hub = new Hub(sql());
	const operator = async () => {
		if (config.NOMOS_OPERATOR_PASSWORD) {
			const r = await ensureConfiguredOperator(sql(), config.NOMOS_OPERATOR_USERNAME, config.NOMOS_OPERATOR_PASSWORD);
			if (r !== 'unchanged') log.info(`operator "${config.NOMOS_OPERATOR_USERNAME}" ${r} from NOMOS_OPERATOR_PASSWORD`);
		} else if (role === 'web' && (await countOperators(sql())) === 0) {
			const token = await issueSetupToken(sql());
			const base = `http://${config.HOST}:${config.PORT}`;
			log.info(`no operator yet: open ${base}/setup?token=${token} to create the first one (valid 24 h)`);
		}
	};
	const knowledge = async () => {
		// The agent's guide first: the operator's import leaves its notes alone.
		await seedGuideNotes().then(
			(r) =>
				r.created || r.updated || r.removed
					? log.info(`knowledge: the agent's guide: ${r.created} new, ${r.updated} updated, ${r.removed} removed`)
					: undefined,
			(e) => log.warn(`knowledge: could not write the agent's guide: ${(e as Error).message}`)
		);
		const dir = config.NOMOS_KNOWLEDGE_DIR;
		if (!dir) return;
		await importKnowledgeDir(dir).then(
			(r) =>
				log.info(
					`knowledge: imported ${r.imported} notes from ${dir}` +
						(r.removed ? `, removed ${r.removed}` : '') +
						(r.skipped.length ? `, skipped ${r.skipped.map((s) => `${s.path} (${s.reason})`).join(', ')}` : '')
				),
			(e) => log.warn(`knowledge: could not import ${dir}: ${(e as Error).message}`)
		);
	};
	await Promise.all([operator(), config.NOMOS_HOSTS ? upsertConfiguredHosts(sql(), config.NOMOS_HOSTS) : undefined, knowledge(), hub.start()]);
	// Not needed to serve the first request: the worker start and the first sync run alongside.
	const later: Array<Promise<unknown>> = [];
	setHub(hub);
	installTurnCancellation(hub);
	const stopHookCache = installHookCache(hub);
	// server.js hands the SSE endpoints to this handler, below SvelteKit (see node-sse.ts).
	(globalThis as { __nomosServeSse?: typeof serveNodeSse }).__nomosServeSse = serveNodeSse;

	let worker: WorkerHandle | undefined;
	let workerStart: Promise<WorkerHandle | undefined> = Promise.resolve(undefined);
	if (role === 'worker' || config.NOMOS_WORKER) {
		const taskList = options.taskList;
		if (!taskList) throw new Error('boot: this process runs a worker but was given no task list');
		workerStart = (async () => {
			await workerSchema;
			worker = await (
				await workerModule
			).startWorker({
				url: databaseUrl,
				taskList,
				concurrency: config.NOMOS_WORKER_CONCURRENCY,
				crontab: crontab({ inventorySync: config.NOMOS_INVENTORY_SYNC }),
				// Notices (a few seconds at most) and alert deliveries (milliseconds, one at a time) share the
				// executions' slots: a long turn never holds them up.
				lane: { tasks: [RUN_TASK, NOTIFY_TASK, INTAKE_TASK], concurrency: config.NOMOS_EXECUTION_CONCURRENCY },
				beforeStop: handOverTurns
			});
			log.info(`worker: running in this process (concurrency ${config.NOMOS_WORKER_CONCURRENCY}, executions ${config.NOMOS_EXECUTION_CONCURRENCY})`);
			await scheduleSweep();
			// The review's facts: rebuilt if this code's rules differ from the stored ones (rules
			// change only with the code, so once per start; the job returns at once when they match).
			await enqueueJob(sql(), 'review__rebuild_facts', {}, { jobKey: 'review__rebuild_facts', priority: PRIORITY.background });
			const preload = options.preloadTasks;
			if (preload) setTimeout(() => void preload().catch((e: Error) => log.error(`worker: could not load a task: ${e.message}`)), PRELOAD_DELAY_MS).unref();
			return worker;
		})();
		// A worker process exists for its worker; a web process serves first and starts it alongside.
		if (role === 'worker') await workerStart;
		else
			workerStart.catch((e) => {
				log.fatal(`worker: could not start: ${(e as Error).message}`);
				process.exitCode = 1;
			});
	} else log.info('worker: off in this process (NOMOS_WORKER=off)');
	const stopPresence = role === 'web' ? watchWorkerPresence(sql()) : () => undefined;
	// Every process, web or worker, picks up the work of worker processes that died (seconds).
	const stopRecovery = watchForDeadProcesses(sql());
	// What the model server says about itself, in the log (no tokens spent; Settings runs probes).
	if (role === 'web')
		void settled
			.then(() => import('./agent/model-check'))
			.then(({ checkModel, describeCheck }) => checkModel({ probe: false }).then((c) => log.info(describeCheck(c))))
			.catch(() => undefined);
	// A first inventory sync right away instead of waiting for the minute's cron.
	if (config.NOMOS_INVENTORY_SYNC) {
		later.push(
			enqueueJob(sql(), 'inventory__sync', {}, { jobKey: 'inventory__sync', queueName: 'inventory', priority: PRIORITY.background }).catch((e) =>
				log.warn(`inventory: could not queue the first sync: ${(e as Error).message}`)
			)
		);
	}

	(globalThis as { __nomosBooted?: () => void }).__nomosBooted?.();
	const hooks: Array<() => Promise<void> | void> = [];
	// Runs last (hooks run in reverse): the pooled SSH connections close after the worker stopped.
	hooks.push(async () => (await import('./ssh/pool')).closeAll());
	let stopping: Promise<void> | undefined;
	return {
		role,
		env: config,
		databaseUrl,
		embedded,
		get worker() {
			return worker;
		},
		onShutdown: (fn) => hooks.push(fn),
		shutdown() {
			stopping ??= (async () => {
				stopPresence();
				stopRecovery();
				await Promise.allSettled([workerStart, ...later]);
				// The worker first: its turns hand over and its executions finish (or end interrupted,
				// stopped on the host) over the SSH connections that the hooks close after it.
				await worker?.stop();
				for (const fn of hooks.reverse()) await Promise.resolve(fn()).catch((e) => log.error({ err: e }, 'shutdown step failed'));
				stopHookCache();
				await hub.stop();
				setHub(undefined);
				await disconnectDb();
				// Read now, not at boot: a process that reused a live owner's server owns it once that one died.
				const owned = embedded?.owned;
				await embedded?.stop();
				if (owned) log.info('embedded Postgres stopped');
			})();
			return stopping;
		}
	};
}
