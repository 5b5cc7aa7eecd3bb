import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import { ACTIONS, AGENT_WAIT, type StepContext } from '../../proxmox/actions';
import { toCommand } from '../../ssh/quote';
import { Cancelled, exitReason, Failure, tail } from './outcomes';
import type { Target } from './pre-check';
import { checkPrecondition } from './preconditions';
import type { Run } from './run';

/**
 * The HTTP health after a VM (re)start (`healthHttp`): the catalogued vm_http_check as it
 * runs on its own (its preconditions read the agent's address, its step GETs it), asked
 * again as the agent's ping is (AGENT_WAIT) until the agent reports a usable address and the
 * service answers below 400: a fresh VM gets its DHCP lease and starts its service some
 * seconds after its agent. Every attempt re-reads the address (parsed as an IP each time)
 * and builds its argv the one way; all of it is one step, its label counting the attempts,
 * its stderr one line per attempt that did not answer. Throws a Failure when it never answered.
 */
export async function waitForHttp(run: Run, t: Target, params: z.output<typeof ACTIONS.vm_http_check.params>): Promise<void> {
	const { io, reader } = t;
	const check = ACTIONS.vm_http_check;
	const { tries, intervalMs } = run.opts.healthWait ?? { tries: AGENT_WAIT.tries, intervalMs: AGENT_WAIT.intervalS * 1000 };
	const [preview] = check.steps(params, {});
	const step = await io.openStep({ ...preview, label: `health: ${preview.label}` }, 'health');
	const began = Date.now();
	const misses: string[] = [];
	let last = '';
	let n = 0;
	const counted = (label: string) => `health: ${label}${n > 1 ? ` (attempt ${n} of ${tries})` : ''}`;
	const miss = async (why: string) => {
		last = why;
		misses.push(`attempt ${n}: ${why}`);
		// Still running until the last attempt: the row shows the wait, not a failure.
		delete step.finishedAt;
		Object.assign(step, { durationMs: Date.now() - began, stderrTail: tail(misses.join('\n')) });
		await run.persistSteps();
	};
	while (n < tries) {
		if (n > 0) await delay(intervalMs, undefined, { signal: run.cancel.signal }).catch(() => undefined);
		io.stopIfCancelled();
		n++;
		const got: StepContext = {};
		let refused: Awaited<ReturnType<typeof checkPrecondition>> = null;
		for (const p of check.preconditions?.(params, {}) ?? []) {
			refused = await checkPrecondition(reader, p, got).catch((err) => {
				if (err instanceof Cancelled) io.stopIfCancelled();
				throw err;
			});
			if (refused) break;
		}
		if (refused) {
			step.label = counted(preview.label);
			delete step.exitCode;
			await miss(refused.why);
			if (!refused.waitable) break;
			continue;
		}
		const [s] = check.steps(params, got);
		Object.assign(step, { label: counted(s.label), command: toCommand(s.argv) });
		const r = await io.execInto(step, s);
		Object.assign(step, { durationMs: Date.now() - began });
		if (!r.timedOut && r.exitCode === 0) {
			step.stderrTail = tail([...misses, r.stderr].filter(Boolean).join('\n'));
			await run.persistSteps();
			return;
		}
		await miss(
			r.timedOut ? `${s.label} timed out after ${Math.round(s.timeoutMs / 1000)} s` : `${s.label} exited with ${r.exitCode ?? r.signal}: ${exitReason(r)}`
		);
	}
	step.finishedAt = new Date().toISOString();
	await run.persistSteps();
	throw new Failure(n > 1 ? `${last}; asked ${n} times, ${intervalMs / 1000} s apart` : last);
}
