/** What an execution is shown as: its stored status, or `not_run` when it failed before it changed anything. */
export type ShownStatus = string;

/**
 * The status every view shows for an execution (chat card, plan step, Ops, review). The runner
 * stores `failed` when it refused before the approved command ran — a precondition no longer
 * held, the snapshot before failed, the target could not be checked — and says so with an error
 * that starts "not run:". Such an execution is shown `not_run`: nothing ran, nothing changed.
 * When the steps are known, a step of the approved command itself (a step without a runner
 * `kind`) means it did run, whatever the error says.
 */
export function shownStatus(e: { status: string; error?: string | null; steps?: ReadonlyArray<{ kind?: string }> | null }): ShownStatus {
	if (e.status !== 'failed' || !e.error?.startsWith('not run:')) return e.status;
	if (Array.isArray(e.steps) && e.steps.some((s) => !s.kind)) return 'failed';
	return 'not_run';
}

/** Whether an execution is shown as not run (see shownStatus). */
export const wasNotRun = (e: Parameters<typeof shownStatus>[0]) => shownStatus(e) === 'not_run';

/**
 * The status a plan is shown with: `not_run` when it failed and every step it made was not run
 * (nothing of it changed anything), else its stored status.
 */
export function shownPlanStatus(
	plan: { status: string; steps: ReadonlyArray<{ executionId: string | null }> },
	execution: (id: string) => Parameters<typeof shownStatus>[0] | undefined
): ShownStatus {
	if (plan.status !== 'failed') return plan.status;
	const made = plan.steps.filter((s) => s.executionId).map((s) => execution(s.executionId!));
	return made.length > 0 && made.every((e) => e && wasNotRun(e)) ? 'not_run' : plan.status;
}
