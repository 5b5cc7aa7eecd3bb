import type { ExecutionStep } from '../../types/executions';
import type { SshTarget } from '../ssh/client';
import type { Step } from './actions';

/** Which of a host's two keys runs a command (docs/security.md "Two keys"): the gate's `--role` of the same name. */
export type KeyRole = 'read' | 'mutate';

/**
 * The one place that decides which key runs a step, from its classification: a read-only
 * action's steps, a read-back (`verify`) and the runner's own reads (health, resume, check and
 * verify rows) are reads; every other step of an approved mutation — its own changing steps, the
 * snapshot before, the prune after — is a mutation. The allowlist marks its shapes by the same
 * rule (gate-shapes.ts), so a gate on the read key refuses exactly what Nomos sends with the
 * mutation key. Everything outside an execution's steps (sync, pre-checks, leftovers) reads.
 */
export function keyRole(readOnly: boolean, s: Pick<Step, 'verify'>, kind?: ExecutionStep['kind']): KeyRole {
	if (readOnly || s.verify !== undefined) return 'read';
	return kind === undefined || kind === 'snapshot' || kind === 'prune' ? 'mutate' : 'read';
}

/** The host as a connection target with the key of `role`: its mutation key when it has one, else its only key. */
export function keyTarget<T extends SshTarget & { mutationKeyPath: string | null }>(host: T, role: KeyRole): T {
	return role === 'mutate' && host.mutationKeyPath ? { ...host, keyPath: host.mutationKeyPath } : host;
}

/** Whether `host` has a second key: the mutation key then runs nothing but approved changes. */
export const hasTwoKeys = (host: { mutationKeyPath: string | null }): boolean => !!host.mutationKeyPath;
