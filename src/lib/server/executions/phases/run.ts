import type { Client } from 'ssh2';
import { sql } from '../../db/index';
import { heartbeat, saveSteps, type ExecutionRow } from '../../db/queries/executions';
import type { Hub } from '../../realtime/hub';
import type { lease } from '../../ssh/pool';
import type { ExecutionStep } from '../../../types/executions';
import type { Judged } from '../verdict';

const LEASE_SECONDS = 60;
const HEARTBEAT_MS = 10_000;
export { LEASE_SECONDS };

export interface RunOptions {
	/** graphile-worker's: the process is stopping */
	signal?: AbortSignal;
	/** How long the HTTP health after a VM start waits (default AGENT_WAIT, 24 × 5 s): tests shorten it. */
	healthWait?: { tries: number; intervalMs: number };
}

/**
 * One claimed execution on its way through the phases (authorize → preCheck → snapshot →
 * runSteps → verify → settle): what each phase reads and what it leaves for the next. The flags
 * are written by the phase that learns them and read by settle.ts to say how the run ended.
 */
export interface Run {
	readonly e: ExecutionRow;
	readonly opts: RunOptions;
	/** Taken over after the process running it stopped (executions/resume.ts): its earlier steps stay on the card. */
	readonly resuming: boolean;
	readonly mutation: boolean;
	/** Aborted by a cancel, a shutdown or a lost lease: whatever runs stops. */
	readonly cancel: AbortController;
	/** The step rows as the card shows them, changed in place and saved with persistSteps. */
	readonly steps: ExecutionStep[];
	/** Saves the steps in order: a live flush or the group id must never land after the final save. */
	persistSteps: () => Promise<void>;
	/** The last save in flight (never rejects). */
	saving: Promise<void>;
	/** The process is stopping and its grace period is over (graphile-worker's abort signal). */
	shuttingDown: boolean;
	cancelledByOperator: boolean;
	/** Set when a command had to be stopped and its host did not confirm it gone: it may still run there. */
	unsettled: boolean;
	/** Past the snapshot: the approved command may have touched the target. */
	mutationStarted: boolean;
	/** The full stdout of each of the action's own steps, in order, for its `digest`. */
	stdouts: string[];
	/** The snapshot taken before, named for this execution. */
	snapshot: string | null;
	/** The read-back's verdict once the approved command ran (verdict.ts); stored with the outcome. */
	verdict: Judged | null;
	/** The leased connection of the read key, released (discarded on failure) when the run ends. */
	held: Awaited<ReturnType<typeof lease>> | undefined;
	/** The mutation key's, when the host has a second key and a mutating step needed it (link.ts). */
	mutator: Awaited<ReturnType<typeof lease>> | undefined;
	/** The leased connection's client (a new one after a read found the old one dropped). */
	client: Client;
	/** Stops the heartbeat and the listeners (runner.ts, when the run ends). */
	close: () => void;
}

/**
 * The context of a claimed execution: a lease kept alive by a heartbeat, and one abort for a
 * shutdown, an operator's cancel and a lost lease.
 */
export function openRun(e: ExecutionRow, opts: RunOptions, events: Hub): Run {
	const cancel = new AbortController();
	const steps: ExecutionStep[] = e.resumes > 0 ? [...e.steps] : [];
	const run: Run = {
		e,
		opts,
		resuming: e.resumes > 0,
		mutation: e.classification !== 'read_only',
		cancel,
		steps,
		saving: Promise.resolve(),
		persistSteps: () => {
			const saved = run.saving.then(() => saveSteps(sql(), e, steps));
			run.saving = saved.catch(() => undefined);
			return saved;
		},
		shuttingDown: false,
		cancelledByOperator: false,
		unsettled: false,
		mutationStarted: false,
		stdouts: [],
		snapshot: null,
		verdict: null,
		held: undefined,
		mutator: undefined,
		client: undefined as unknown as Client,
		close: () => undefined
	};
	const onShutdown = () => ((run.shuttingDown = true), cancel.abort());
	if (opts.signal?.aborted) onShutdown();
	opts.signal?.addEventListener('abort', onShutdown, { once: true });
	// A heartbeat that finds the execution no longer running means the sweeper declared this
	// worker lost (e.g. after a long database outage): stop the command instead of finishing a
	// mutation everyone was already told had failed (and that may be retried).
	const beat = setInterval(() => {
		void heartbeat(sql(), e.id, LEASE_SECONDS).then(
			(held) => held || cancel.abort(),
			() => undefined
		);
	}, HEARTBEAT_MS);
	const off = events.onEvent((ev) => {
		if (ev.type === 'execution.cancel' && ev.payload.executionId === e.id) {
			run.cancelledByOperator = true;
			cancel.abort();
		}
	});
	run.close = () => {
		clearInterval(beat);
		opts.signal?.removeEventListener('abort', onShutdown);
		off();
		run.held?.release();
		run.mutator?.release();
	};
	return run;
}
