import { describe, expect, it } from 'vitest';
import { shownPlanStatus, shownStatus, wasNotRun } from '../../src/lib/execution-status';

describe('the status an execution is shown with', () => {
	it('is "not run" when it failed before the approved command ran', () => {
		// A precondition refusal: no step at all.
		expect(shownStatus({ status: 'failed', error: 'not run: CT 100 is running, expected stopped', steps: [] })).toBe('not_run');
		// The snapshot before failed: only the runner's own step ran.
		expect(shownStatus({ status: 'failed', error: 'not run: the snapshot before failed, nothing was changed (exit 2)', steps: [{ kind: 'snapshot' }] })).toBe(
			'not_run'
		);
		// Could not check the target; the steps are not known (the review's silent list).
		expect(shownStatus({ status: 'failed', error: 'not run: could not check CT 105: strong did not answer within 5 min' })).toBe('not_run');
		expect(wasNotRun({ status: 'failed', error: 'not run: x', steps: null })).toBe(true);
	});

	it('stays "failed" when the command ran or the error says something else', () => {
		expect(shownStatus({ status: 'failed', error: 'pct start exited with 1: boom', steps: [{}] })).toBe('failed');
		expect(shownStatus({ status: 'failed', error: null, steps: [] })).toBe('failed');
		// A step of the approved command exists: it ran, whatever the error starts with.
		expect(shownStatus({ status: 'failed', error: 'not run: odd', steps: [{ kind: 'snapshot' }, {}] })).toBe('failed');
		// "not run" only in the middle of the text is not the runner's refusal.
		expect(shownStatus({ status: 'failed', error: 'unhealthy: not run: x' })).toBe('failed');
	});

	it('leaves every other status as stored', () => {
		for (const status of ['awaiting_approval', 'approved', 'running', 'succeeded', 'cancelled', 'interrupted', 'denied', 'expired']) {
			expect(shownStatus({ status, error: 'not run: whatever', steps: [] })).toBe(status);
		}
	});

	it('shows a failed plan as not run when no step it made ran', () => {
		const runs: Record<string, { status: string; error: string | null; steps: { kind?: string }[] }> = {
			a: { status: 'failed', error: 'not run: CT 1 is running, expected stopped', steps: [] },
			b: { status: 'succeeded', error: null, steps: [{}] },
			c: { status: 'failed', error: 'pct start exited with 1', steps: [{}] }
		};
		const plan = (status: string, ids: Array<string | null>) => ({ status, steps: ids.map((executionId) => ({ executionId })) });
		const of = (id: string) => runs[id];
		expect(shownPlanStatus(plan('failed', ['a', null]), of)).toBe('not_run');
		expect(shownPlanStatus(plan('failed', ['b', 'a']), of)).toBe('failed');
		expect(shownPlanStatus(plan('failed', ['c']), of)).toBe('failed');
		// Failed before any step was made (its approval expired): the plan's own failure.
		expect(shownPlanStatus(plan('failed', [null]), of)).toBe('failed');
		expect(shownPlanStatus(plan('succeeded', ['b']), of)).toBe('succeeded');
	});
});

describe('a success that could not be verified', () => {
	it('is shown unverified, on its own and as a plan step, and its plan is not shown as a plain success', () => {
		const ok = { status: 'succeeded', verdict: 'verified' };
		const unsure = { status: 'succeeded', verdict: 'inconclusive' };
		expect(shownStatus(unsure)).toBe('unverified');
		expect(shownStatus(ok)).toBe('succeeded');
		expect(shownStatus({ status: 'succeeded' })).toBe('succeeded');
		const runs: Record<string, typeof ok> = { a: ok, b: unsure };
		const plan = (ids: string[]) => ({ status: 'succeeded', steps: ids.map((executionId) => ({ executionId })) });
		expect(shownPlanStatus(plan(['a', 'b']), (id) => runs[id])).toBe('unverified');
		expect(shownPlanStatus(plan(['a']), (id) => runs[id])).toBe('succeeded');
	});
});
