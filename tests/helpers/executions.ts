import { readFileSync } from 'node:fs';
// Shared setup for the execution tests: a Proxmox double registered as a host, an operator,
// a chat session, the realtime hub, and small DB readers for jobs and executions.
import { afterAll, beforeAll } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { operatorDecides } from '../../src/lib/server/executions/decisions';
import type { DecideResult } from '../../src/lib/server/executions/lifecycle';
import type { Credential } from '../../src/lib/server/executions/authority';
import { requestExecution } from '../../src/lib/server/executions/request';
import type { ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { Hub, setHub } from '../../src/lib/server/realtime/hub';
import { connectTo, execOn, type ExecResult } from '../doubles/proxmox/client';
import type { ProxmoxDouble } from '../doubles/proxmox/server';
import { scaled } from './time';

/** Registers a double as a host row (pinned to its own fingerprint unless told otherwise). */
export async function addHost(pve: ProxmoxDouble, opts: { name?: string; fingerprint?: string | null } = {}): Promise<string> {
	const name = opts.name ?? pve.nodeName;
	const fp = opts.fingerprint === undefined ? pve.hostKeyFingerprint : opts.fingerprint;
	await sql()`
		insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
		values (${name}, ${pve.host}, ${pve.port}, 'root', ${pve.clientKeyPath}, ${fp})`;
	return name;
}

export async function newOperator(username = 'alice'): Promise<string> {
	const [row] = await sql()<{ id: string }[]>`
		insert into operators (username, password_hash, role) values (${username}, 'not-a-real-hash', 'admin') returning id`;
	return row.id;
}

export async function newSession(operatorId: string | null, title = 'test'): Promise<string> {
	return sql().begin<string>((tx) => createSession(tx, operatorId, title));
}

/** Starts the process's realtime hub (the runner listens on it for cancellation) for the file. */
export function useHub(): () => Hub {
	let hub: Hub | undefined;
	beforeAll(async () => {
		hub = new Hub(sql());
		await hub.start();
		setHub(hub);
	});
	afterAll(async () => {
		await hub?.stop();
		setHub(undefined);
	});
	return () => hub!;
}

/** A browser session that has just given its password (it may approve anything, step-up included). */
export const freshSession = (): Credential => ({ kind: 'session', verifiedAt: new Date().toISOString() });

/** An operator decision in its own transaction, as the approve/deny routes do (a click in a fresh browser session). */
export function decide(id: string, operatorId: string, decision: 'approved' | 'denied', reason?: string): Promise<DecideResult> {
	return sql().begin<DecideResult>((tx) => operatorDecides(tx, id, { decision, route: 'button', operatorId, reason, credential: freshSession() }));
}

/** Requests an execution in the session and approves it as the operator (from a button); throws when either is refused. */
export async function requestApproved(sessionId: string, operatorId: string, input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	const d = await decide(r.execution.id, operatorId, 'approved');
	if (!d.ok) throw new Error(`approving ${r.execution.id} was refused: ${JSON.stringify(d)}`);
	return r.execution;
}

export type JobRow = { task: string; payload: Record<string, unknown>; key: string | null; queue: string | null };

/** graphile-worker jobs waiting (no worker runs in these tests, so queued jobs stay put). */
export async function jobs(task?: string): Promise<JobRow[]> {
	return sql()<JobRow[]>`
		select t.identifier as task, j.payload, j.key, q.queue_name as queue
		from graphile_worker._private_jobs j
		join graphile_worker._private_tasks t on t.id = j.task_id
		left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
		${task ? sql()`where t.identifier = ${task}` : sql()``}
		order by j.id`;
}

/** The jobs that name one execution (run, continuation). */
export async function jobsFor(executionId: string): Promise<JobRow[]> {
	return (await jobs()).filter((j) => j.payload.executionId === executionId);
}

export async function executionStatus(id: string): Promise<string | undefined> {
	const [row] = await sql()<{ status: string }[]>`select status from executions where id = ${id}`;
	return row?.status;
}

export async function waitUntil<T>(
	probe: () => Promise<T | null | undefined | false>,
	/** What was awaited; a function is read at the timeout (a child's log as it is then, not as it was). */
	what: string | (() => string),
	opts: { timeoutMs?: number; intervalMs?: number } = {}
): Promise<T> {
	const until = Date.now() + scaled(opts.timeoutMs ?? 15_000);
	for (;;) {
		const v = await probe();
		if (v) return v;
		if (Date.now() > until) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
		await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
	}
}

/** Whether a pid is still alive (signal 0). */
/**
 * Whether a process still runs. A zombie (exited, waiting for a parent that never reaps it: pid 1
 * in some sandboxes reaps nothing) answers kill(0) but runs nothing, so it counts as gone.
 */
export function alive(pid: number): boolean {
	try {
		process.kill(pid, 0);
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
	}
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
	} catch {
		return true;
	}
}

export const DEBIAN = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

/** Runs a shell command on the double directly (someone else changing the host behind our back). */
export async function onDouble(pve: ProxmoxDouble, command: string): Promise<ExecResult> {
	const conn = await connectTo(pve);
	try {
		return await execOn(conn, command);
	} finally {
		conn.end();
	}
}
