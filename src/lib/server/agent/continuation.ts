import { sql } from '../db/index';
import { isMcpSession, setTaskState } from '../db/queries/sessions';
import { env } from '../env';
import { activeWindow, countContinuation, revokedSince } from '../db/queries/assent-windows';
import { claimFinishedForSession, getExecutionsByIds, listUnreadLeftovers, maxRecentFailures, type ExecutionRow } from '../db/queries/executions';
import { claimFinishedPlans } from '../db/queries/plans';
import { planNote } from '../executions/plans';
import { addSystemNote } from '../conversation/notes';
import { recordLeftovers, targetVmid, vmOf } from '../executions/leftovers';
import { refreshContainer, refreshVm } from '../inventory/sync';
import { ACTIONS, isActionName } from '../proxmox/actions';
import { runTurn } from './run-turn';
import { insertTurnMessage } from './message-writer';
import { formatChanges } from '../../schemas/param-form';
import type { ExecutionEdit, Verdict } from '../../types/executions';

const changesInventory = (action: string) => isActionName(action) && Boolean((ACTIONS[action] as { changesInventory?: boolean }).changesInventory);

/**
 * How a finished execution is told to the agent (and shown as a small note in the chat). A
 * mutation's read-back verdict leads: an inconclusive one is told as not verified, never as success.
 */
export function executionNote(
	e: Pick<ExecutionRow, 'id' | 'action' | 'target' | 'status' | 'result' | 'error'> & {
		leftovers?: string | null;
		edit?: ExecutionEdit | null;
		verdict?: Verdict | null;
		verdictDetail?: string | null;
		resumes?: number;
		resumedBecause?: string | null;
	}
): string {
	const result = (e.result ?? 'done').trim().slice(0, 800);
	const error = (e.error ?? e.result ?? 'no details').trim().slice(0, 800);
	const detail = (e.verdictDetail ?? '').trim().slice(0, 500);
	const outcome =
		e.status === 'succeeded' && e.verdict === 'inconclusive'
			? `ran, NOT verified: its command exited 0 (${result}) but the read-back was inconclusive: ${detail}. Do not report it done: say it is unconfirmed, and check it with a read-only action before building on it`
			: e.status === 'succeeded'
				? `succeeded: ${result}${e.verdict === 'verified' ? ` — verified by reading it back: ${detail}` : ''}`
				: `${e.status}: ${error}${e.verdict === 'still_failing' ? `${/[.!?]$/.test(error) ? '' : '.'} Verdict: still failing${error.includes(detail) ? '' : ` (${detail})`}.` : ''}`;
	const left = e.leftovers ? ` Left behind: ${e.leftovers}.` : '';
	const check =
		e.status === 'interrupted' ? " It may have partly run: check the target's state before anything else, and do not repeat it without a new approval." : '';
	// A succeeded resume says so in its result already (executions/resume.ts resumedText).
	const resumed =
		e.resumes && !(e.status === 'succeeded' && e.result?.includes('(resumed after the worker stopped'))
			? ` Its worker stopped while running it and a live worker resumed it under the same approval${e.resumedBecause ? ` (${e.resumedBecause})` : ''}.`
			: '';
	const edited = e.edit
		? `${/[.!?]$/.test(outcome) ? '' : '.'} The operator changed ${formatChanges(e.edit.changes)} before approving, so it ran with those values (not the ones requested).`
		: '';
	return `execution ${e.id} (${e.action} on ${e.target}) ${outcome}${edited}${resumed}${left}${check}`;
}

const SAME_FAILURE_LIMIT = 3;

export type ContinueResult = 'nothing' | 'turn' | 'window-closed' | 'cap-reached' | 'repeated-failure' | 'mcp';

/**
 * The system as the event loop: when executions linked to a session have finished (or a plan
 * has ended: one note for all its steps), tell the agent and run a continuation turn while the
 * session's assent window is open (for a plan: unless the operator revoked it since approving). Every finished,
 * not yet continued execution of the session is claimed, its note written and the turn's reply
 * made in ONE transaction (so two workers or a retried job never continue one twice, and a
 * claim never commits without the reply that answers it), folded into one turn. If this process
 * dies during the turn, the reply is resumed by another (recovery/dead-processes.ts): never lost.
 */
export async function continueSession(sessionId: string, signal?: AbortSignal): Promise<ContinueResult> {
	// Mutations that stopped part-way: read back what they left on their target first (also
	// for those the sweeper marked, which could not reach the host), so the note can say it.
	for (const e of await listUnreadLeftovers(sql(), sessionId)) await recordLeftovers(e).catch(() => undefined);
	const decision = await sql().begin(async (tx) => {
		const claimed = await claimFinishedForSession(tx, sessionId);
		const plans = await claimFinishedPlans(tx, sessionId);
		if (!claimed.length && !plans.length) return { kind: 'nothing' as const };
		const notes = claimed.map((e) => executionNote(e));
		const stepRuns = new Map(
			(
				await getExecutionsByIds(
					sql(),
					plans.flatMap((p) => p.steps.map((s) => s.executionId!).filter(Boolean))
				)
			).map((e) => [e.id, e])
		);
		const planNotes = plans.map((p) =>
			planNote(
				p,
				p.steps.map((s) => {
					const run = s.executionId ? stepRuns.get(s.executionId) : undefined;
					return { note: run ? executionNote(run) : null, verdict: run?.verdict ?? null };
				})
			)
		);
		// An execution claimed again for a late read-back was counted and noted when it ended:
		// its late note (written with the claim's reopening) is what the agent reads now.
		const fresh = claimed.filter((e) => !e.told);
		const repeats = await maxRecentFailures(
			tx,
			sessionId,
			fresh.filter((e) => e.status === 'failed').map((e) => e.hash)
		);
		const window = await activeWindow(tx, sessionId);
		// The approval of a plan covers telling the agent how it ended, however long it ran, unless
		// the operator has since told Nomos to stop continuing by itself. A plan that expired was
		// approved by nobody: it is told as an expired execution is (a note; a turn only in a window).
		const approvedPlans = plans.filter((p) => p.decidedAt);
		const planCovers = approvedPlans.length > 0 && !(await revokedSince(tx, sessionId, approvedPlans.map((p) => p.decidedAt!).sort()[0]));
		let kind: Exclude<ContinueResult, 'nothing'>;
		if (await isMcpSession(tx, sessionId)) kind = 'mcp';
		else if (repeats >= SAME_FAILURE_LIMIT) kind = 'repeated-failure';
		else if (!window && planCovers) kind = 'turn';
		else if (!window) kind = 'window-closed';
		else if (window.continuations >= env().NOMOS_MAX_CONTINUATIONS) kind = 'cap-reached';
		else {
			kind = 'turn';
			await countContinuation(tx, window.id);
		}
		const suffix: Record<typeof kind, string> = {
			turn: '',
			mcp: ' — requested over MCP: the MCP client reads the result (get_execution); reply here to have the agent look at it',
			'window-closed': ' — the approval window has closed; reply to continue',
			'cap-reached': ` — ${env().NOMOS_MAX_CONTINUATIONS} automatic continuations in this window; reply to continue`,
			'repeated-failure': ` — the same action failed ${SAME_FAILURE_LIMIT} times, so Nomos stopped continuing by itself; tell it how to proceed`
		};
		for (const [i, e] of claimed.entries()) {
			if (e.told) continue;
			await addSystemNote(tx, sessionId, 'execution', notes[i] + suffix[kind], { executionId: e.id, status: e.status, continued: kind === 'turn' });
		}
		for (const [i, p] of plans.entries()) {
			await addSystemNote(tx, sessionId, 'plan', planNotes[i] + suffix[kind], { planId: p.id, status: p.status, continued: kind === 'turn' });
		}
		if (kind === 'repeated-failure') await setTaskState(tx, sessionId, 'awaiting_input');
		// What the reply says resumed it: a plan that ended (and nothing else), or finished executions.
		const origin = plans.length && !claimed.some((e) => !e.told) ? ('plan' as const) : ('continuation' as const);
		const reply = kind === 'turn' ? await insertTurnMessage(tx, sessionId, origin) : null;
		const refresh = claimed
			.filter((e) => e.status === 'succeeded' && changesInventory(e.action) && e.hostName)
			.flatMap((e): { host: string; vmid: number; vm: boolean }[] => {
				// A VM (the clone, for vm_clone) is read from /cluster/resources, which also files a migrated one under its new node.
				const vm = vmOf(e);
				if (vm) return [{ host: e.hostName!, vmid: Number(vm), vm: true }];
				// A migrated container is read back on both nodes: gone from the one, on the other (when it is a configured host).
				return [e.hostName!, ...(e.action === 'pct_migrate' && typeof e.params.node === 'string' ? [e.params.node] : [])].map((host) => ({
					host,
					vmid: Number(targetVmid(e)),
					vm: false
				}));
			})
			.filter((r) => Number.isInteger(r.vmid) && r.vmid > 0);
		return { kind, refresh, messageId: reply?.id, origin };
	});
	if (decision.kind !== 'turn') return decision.kind;
	// The agent verifies next: let it see the guests the changes touched as they are now (a CT
	// in two commands, a VM in one), not the last minute's sync; the host's full sync was queued when each
	// execution finished (one job per host, collapsed) and refreshes the rest. The read-back runs
	// while the turn starts (the model reads the result note first); its tools wait for it.
	const readBack = Promise.all(decision.refresh.map((r) => (r.vm ? refreshVm : refreshContainer)(r.host, r.vmid, { signal })));
	try {
		await runTurn({ sessionId, origin: decision.origin, signal, inventoryReady: readBack, messageId: decision.messageId });
	} finally {
		await readBack;
	}
	return 'turn';
}
