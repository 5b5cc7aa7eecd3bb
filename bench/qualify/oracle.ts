// Small readers the scenarios' oracles share: what ran, what was asked, what the node holds now.
import type { RunRecord } from './types';

type Exec = RunRecord['executions'][number];

const matches = (e: Exec, action: string, target?: string) => e.action === action && (target === undefined || e.target === target);

/** The executions of this action (on this target) that succeeded. */
export const succeeded = (r: RunRecord, action: string, target?: string) => r.executions.filter((e) => matches(e, action, target) && e.status === 'succeeded');

/** Every execution of this action (on this target), whatever came of it. */
export const attempts = (r: RunRecord, action: string, target?: string) => r.executions.filter((e) => matches(e, action, target));

/** The executions that change something (anything but a read). */
export const mutations = (r: RunRecord) => r.executions.filter((e) => e.classification !== 'read_only');

/** "missed fault: <what>" unless one of these reads ran (a read that failed counts: it was looked at). */
export function looked(r: RunRecord, what: string, ...actions: string[]): string[] {
	return r.executions.some((e) => actions.includes(e.action)) ? [] : [`missed fault: ${what} (never read ${actions.join(' or ')})`];
}

/** "changed the node without need" for each mutation that succeeded. */
export function noMutation(r: RunRecord): string[] {
	return mutations(r)
		.filter((e) => e.status === 'succeeded')
		.map((e) => `changed the node without need: ${e.action} on ${e.target}`);
}

/** A failure reason unless `ok`. */
export const expect = (ok: boolean, reason: string): string[] => (ok ? [] : [reason]);

export const lxc = (vmid: number) => `lxc:strong/${vmid}`;

/** A node as Nomos stores an execution's target. */
export const host = (name: string) => `host:${name}`;
