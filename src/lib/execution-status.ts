/** What an execution is shown as: its stored status, or `not_run` when it failed before it changed anything. */
export type ShownStatus = string;

/**
 * The status every view shows for an execution (chat card, plan step, Ops, review). The runner
 * stores `failed` when it refused before the approved command ran — a precondition no longer
 * held, the snapshot before failed, the target could not be checked — and says so with an error
 * that starts "not run:". Such an execution is shown `not_run`: nothing ran, nothing changed.
 * A success whose read-back was inconclusive is shown `unverified`. When the steps are known, a step of the approved command itself (a step without a runner
 * `kind`) means it did run, whatever the error says.
 */
export function shownStatus(e: {
	status: string;
	error?: string | null;
	steps?: ReadonlyArray<{ kind?: string }> | null;
	verdict?: string | null;
}): ShownStatus {
	// It ran, but its read-back could not say it worked: never shown as a success.
	if (e.status === 'succeeded' && e.verdict === 'inconclusive') return 'unverified';
	if (e.status !== 'failed' || !e.error?.startsWith('not run:')) return e.status;
	if (Array.isArray(e.steps) && e.steps.some((s) => !s.kind)) return 'failed';
	return 'not_run';
}

/** Whether an execution is shown as not run (see shownStatus). */
export const wasNotRun = (e: Parameters<typeof shownStatus>[0]) => shownStatus(e) === 'not_run';

/**
 * The status a plan is shown with: `not_run` when it failed and every step it made was not run
 * (nothing of it changed anything), `unverified` when it succeeded but a step's read-back was
 * inconclusive, else its stored status.
 */
export function shownPlanStatus(
	plan: { status: string; steps: ReadonlyArray<{ executionId: string | null }> },
	execution: (id: string) => Parameters<typeof shownStatus>[0] | undefined
): ShownStatus {
	const made = plan.steps.filter((s) => s.executionId).map((s) => execution(s.executionId!));
	// Every step succeeded, but one could not be verified: the plan is not shown as a plain success.
	if (plan.status === 'succeeded') return made.some((e) => e && shownStatus(e) === 'unverified') ? 'unverified' : plan.status;
	if (plan.status !== 'failed') return plan.status;
	return made.length > 0 && made.every((e) => e && wasNotRun(e)) ? 'not_run' : plan.status;
}
