import { SvelteMap } from 'svelte/reactivity';
import type { ExecutionRow, PlanRow } from '$lib/types/executions';
import type { LiveEvents, LiveEvent, Since } from './live-events.svelte';

export type Execution = ExecutionRow;
export type Plan = PlanRow;

/** The events that carry execution and plan snapshots. */
export const EXECUTION_EVENTS = ['execution.updated', 'execution.step', 'approval.decided', 'plan.updated'] as const;

/** Executions and plans by id, kept current by the snapshots that live events carry. */
export class ExecutionsState {
	executions = new SvelteMap<string, Execution>();
	plans = new SvelteMap<string, Plan>();

	constructor(executions: Execution[] = [], plans: Plan[] = []) {
		for (const e of executions) this.executions.set(e.id, e);
		for (const p of plans) this.plans.set(p.id, p);
	}

	/** Follows a live stream (from `since`, when the executions were read as of an event); returns the unsubscribe function. */
	follow(events: LiveEvents, since?: Since): () => void {
		return events.onAny(EXECUTION_EVENTS, (e) => this.#apply(e), since);
	}

	/** Starts again from a fresh read (of the plans too, when given). */
	reset(executions: Execution[], plans?: Plan[]): void {
		this.executions.clear();
		for (const e of executions) this.executions.set(e.id, e);
		if (plans) {
			this.plans.clear();
			for (const p of plans) this.plans.set(p.id, p);
		}
	}

	put(e: Execution): void {
		this.executions.set(e.id, e);
	}

	get pending(): Execution[] {
		return [...this.executions.values()].filter((e) => e.status === 'awaiting_approval');
	}

	#apply(ev: LiveEvent): void {
		if (ev.execution) this.executions.set((ev.execution as Execution).id, ev.execution as Execution);
		if (ev.plan) this.plans.set((ev.plan as Plan).id, ev.plan as Plan);
	}
}
