import type { ActionDef, Step } from '../../proxmox/actions';
import { TASK_SLACK_S, decisiveLine, failedTaskArgv, failedTaskUpid, taskLogArgv } from '../../proxmox/task-cause';
import { Failure } from './outcomes';
import type { Target } from './pre-check';
import type { Run } from './run';

const READ_MS = 30_000;

/**
 * After an action's command failed: when the action names the host task its failure leaves
 * (`failedTask`: pct_start's `vzstart`, qm_start's `qmstart`), read the newest failed one of the
 * guest since the command started and its log, each a step row of the card (kind `cause`), and
 * return the failure with the log's decisive line added ("… ; the task log says: … No space left
 * on device"), so the continuation sees the cause. Best effort: a read that does not answer, no
 * such task (a lock is refused before the task starts; the command's own error says it) or a
 * log that says nothing more leaves the failure as it was. Never throws but what ends the run.
 */
export async function withTaskCause(run: Run, t: Target, err: unknown, startedAtMs: number): Promise<unknown> {
	const def: ActionDef = t.def;
	if (!(err instanceof Failure) || !def.failedTask) return err;
	const { type, vmid } = def.failedTask(run.e.params, { vmid: t.vmid });
	const read = async (s: Step): Promise<string | null> => {
		const step = await t.io.openStep(s, 'cause');
		const r = await t.io.execInto(step, s, true);
		return r.exitCode === 0 && !r.timedOut ? r.stdout : null;
	};
	const since = Math.floor(startedAtMs / 1000) - TASK_SLACK_S;
	const list = await read({ label: `read the failed ${type} task`, argv: failedTaskArgv(type, vmid, since), timeoutMs: READ_MS });
	const upid = list === null ? null : failedTaskUpid(list);
	if (!upid) return err;
	const log = await read({ label: `read its log`, argv: taskLogArgv(upid), timeoutMs: READ_MS });
	const line = log === null ? null : decisiveLine(log);
	if (!line || err.message.includes(line.replace(/^TASK ERROR:\s*/, ''))) return err;
	return new Failure(`${err.message}; the task log says: ${line} (${upid})`);
}
