// The set-up most integration files share, in one call: a database of the file's own, the
// realtime hub, the scripted OpenAI-compatible model with the env pointed at it, SSH Proxmox
// doubles registered as hosts (and synced), extra env for the file, and an in-process worker or
// worker processes (`npm run worker` as a child, for the files that kill one mid-work).
// `useStage` registers the vitest beforeAll/afterAll hooks and returns handles that stand for
// what beforeAll starts, so a file can write `const { llm, pve } = useStage({ … })` at its top.
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { resetEnvCache } from '../../src/lib/server/env';
import { syncAllHosts, type HostSyncResult } from '../../src/lib/server/inventory/sync';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import type { Hub } from '../../src/lib/server/realtime/hub';
import { startScriptedLlm, type Dialect, type ScriptedLlm } from '../doubles/llm/server';
import { startProxmoxDouble, type ProxmoxDouble, type ProxmoxDoubleOptions } from '../doubles/proxmox/server';
import { useTestDatabase } from './db';
import { addHost, useHub, waitUntil } from './executions';
import { startWorkerChild, type TsChild } from './spawn';

/** The host most files need: `strong` with CT 100 caddy running and CT 101 db stopped. */
export const STRONG: ProxmoxDoubleOptions = {
	nodeName: 'strong',
	seed: [
		{ vmid: 100, hostname: 'caddy', status: 'running' },
		{ vmid: 101, hostname: 'db', status: 'stopped' }
	]
};

/** `strong` with only CT 100 caddy running (files that count or create guests beside it). */
export const STRONG_CADDY: ProxmoxDoubleOptions = { nodeName: 'strong', seed: STRONG.seed!.slice(0, 1) };

type TaskList = Parameters<typeof startWorker>[0]['taskList'];

export interface StageOptions {
	/** `app`: connect as the app's role, as Nomos does (default: the superuser). */
	as?: 'superuser' | 'app';
	/** The realtime hub (the runner listens on it for cancels); default on. */
	hub?: boolean;
	/**
	 * Start the scripted model and set OPENAI_BASE_URL, OPENAI_API_KEY and NOMOS_MODEL=scripted; its
	 * script and log are reset before each test unless `keep` (a file that scripts it in beforeAll).
	 */
	model?: boolean | { dialect?: Dialect; keep?: boolean };
	/** Env for the file, set after the model's (so it may override NOMOS_MODEL) and put back afterwards. */
	env?: Record<string, string>;
	/** SSH doubles to start and register as hosts, in order (delayMs 1 unless given; `hostName`: the host row's name, else the node's). */
	hosts?: (ProxmoxDoubleOptions & { hostName?: string })[];
	/** Sync the inventory from the hosts once they are registered; default on when there are hosts. */
	sync?: boolean;
	/** An in-process graphile worker on the file's database with these tasks. */
	worker?: { taskList: TaskList; concurrency?: number };
	/**
	 * Worker processes (`spawnWorker`): each runs as `npm run worker` does on the file's database,
	 * with the file's env (the scripted model's too), and is killed with SIGKILL after each test.
	 */
	spawned?: boolean;
}

export interface Stage {
	/** The scripted model (use only with `model`). */
	llm: ScriptedLlm;
	/** The first host's double. */
	pve: ProxmoxDouble;
	/** Every host's double, in the order given. */
	hosts: ProxmoxDouble[];
	/** The superuser's URL of the file's database. */
	dbUrl: () => string;
	hub: () => Hub;
	/** What the inventory sync in beforeAll answered, one a host (empty without a sync). */
	synced: () => HostSyncResult[];
	/** The in-process worker, once started (use only with `worker`). */
	worker: () => WorkerHandle;
	/** Starts a worker process (use only with `spawned`), `env` over the file's. */
	spawnWorker: (env?: NodeJS.ProcessEnv) => TsChild;
	/** Waits until each worker process has registered itself and says it is ready (its output in the error). */
	workersReady: (...ws: TsChild[]) => Promise<void>;
}

/**
 * A stand-in for an object that beforeAll makes: reads and method calls go to it once it exists,
 * and fail with `what` named before then.
 */
function late<T extends object>(what: string, get: () => T | undefined): T {
	const target = (): T => {
		const v = get();
		if (!v) throw new Error(`${what} is not started yet (use it inside a test or hook)`);
		return v;
	};
	return new Proxy({} as T, {
		get(_, key) {
			const t = target();
			const v = Reflect.get(t, key, t);
			return typeof v === 'function' ? v.bind(t) : v;
		},
		has: (_, key) => key in target(),
		ownKeys: () => Reflect.ownKeys(target()),
		getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(target(), key)
	});
}

export function useStage(opts: StageOptions = {}): Stage {
	const dbUrl = useTestDatabase({ as: opts.as });
	const hub = opts.hub === false ? () => undefined as unknown as Hub : useHub();
	let llm: ScriptedLlm | undefined;
	let worker: WorkerHandle | undefined;
	let synced: HostSyncResult[] = [];
	const doubles: (ProxmoxDouble | undefined)[] = [];
	const envBefore = new Map<string, string | undefined>();
	const setEnv = (vars: Record<string, string>) => {
		for (const [k, v] of Object.entries(vars)) {
			if (!envBefore.has(k)) envBefore.set(k, process.env[k]);
			process.env[k] = v;
		}
	};

	beforeAll(async () => {
		if (opts.model) {
			llm = await startScriptedLlm({ dialect: typeof opts.model === 'object' ? opts.model.dialect : undefined });
			setEnv({ OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test', NOMOS_MODEL: 'scripted' });
		}
		setEnv(opts.env ?? {});
		resetEnvCache();
		for (const [i, o] of (opts.hosts ?? []).entries()) {
			const { hostName, ...double } = o;
			const started = await startProxmoxDouble({ delayMs: 1, ...double });
			doubles[i] = started;
			await addHost(started, { name: hostName });
		}
		if (opts.hosts?.length && opts.sync !== false) {
			synced = await syncAllHosts();
			for (const r of synced) if (!r.ok) throw new Error(`inventory sync of ${r.host} failed: ${JSON.stringify(r)}`);
		}
		if (opts.worker) worker = await startWorker({ url: dbUrl(), concurrency: opts.worker.concurrency ?? 1, taskList: opts.worker.taskList });
	});
	if (opts.model && !(typeof opts.model === 'object' && opts.model.keep)) beforeEach(() => llm?.reset());
	const children: TsChild[] = [];
	if (opts.spawned)
		afterEach(async () => {
			for (const c of children.splice(0)) {
				c.child.kill('SIGKILL');
				await c.exited;
			}
		});
	afterAll(async () => {
		await worker?.stop();
		await llm?.close();
		for (const d of doubles) await d?.close();
		for (const [k, v] of envBefore) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		resetEnvCache();
	});

	const hosts = (opts.hosts ?? []).map((o, i) => late(`the SSH double ${o.nodeName ?? i}`, () => doubles[i]));
	return {
		llm: late('the scripted model', () => llm),
		pve: hosts[0] ?? late('a host (pass `hosts`)', () => undefined),
		hosts,
		dbUrl,
		hub,
		synced: () => synced,
		worker: () => {
			if (!worker) throw new Error('no worker (pass `worker`, and use it inside a test)');
			return worker;
		},
		spawnWorker: (env = {}) => {
			if (!opts.spawned) throw new Error('no worker processes (pass `spawned`)');
			const w = startWorkerChild(dbUrl(), env);
			children.push(w);
			return w;
		},
		workersReady: async (...ws) => {
			for (const w of ws)
				await waitUntil(
					async () => {
						const [row] = await sql()<{ n: number }[]>`select count(*)::int as n from worker_processes where pid = ${w.pid}`;
						return row.n === 1 && w.log.out.includes('worker ready');
					},
					() => `worker ${w.pid} to be ready (${w.child.exitCode ?? w.child.signalCode ?? 'still running'}):\n${w.log.out}`,
					{ timeoutMs: 90_000, intervalMs: 100 }
				);
		}
	};
}
