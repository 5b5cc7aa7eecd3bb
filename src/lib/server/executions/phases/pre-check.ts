import { clusterRefusal } from '../../cluster/route';
import { sql } from '../../db/index';
import { getHostByName } from '../../db/queries/hosts';
import { env } from '../../env';
import { ACTIONS, type Step, type StepContext } from '../../proxmox/actions';
import { guestOf, wantsSnapshot, type Guest } from '../safeguards';
import { checkGates } from './gate-fit';
import { hostReader, waitFor, type HostReader } from './host-reader';
import { linkTo, type Link } from './link';
import { Failure } from './outcomes';
import { canSnapshot, checkPrecondition, subjectOf } from './preconditions';
import type { Run } from './run';
import { stepIo, type StepIo } from './step-io';

/** What the pre-check found and what the later phases run with. */
export interface Target {
	readonly def: (typeof ACTIONS)[keyof typeof ACTIONS];
	/** The container a ct-scoped action runs in (authorize.ts). */
	readonly vmid: string | undefined;
	/** The guest a snapshot before would be taken of. */
	readonly guest: Guest | undefined;
	/** What the preconditions read (an agent's address), for the steps. */
	readonly found: StepContext;
	/** The approved command's steps, built after the preconditions from the stored record. */
	readonly planned: Step[];
	/** Whether the guest's storage can take a snapshot before (false when none is wanted). */
	readonly snapshotPossible: Promise<boolean>;
	readonly link: Link;
	readonly reader: HostReader;
	readonly io: StepIo;
}

/**
 * Phase 2: the host still configured and answering, a cluster member still the guest's node, and
 * every precondition re-read on the host right before running (the world may have changed since
 * approval). A host that does not answer within NOMOS_HOST_WAIT_MIN is unknown, never a fact: the
 * run ends "not run: could not check …". A resume reads its effect back instead (run-steps.ts).
 * Each key's gate, if any, must carry this Nomos's catalogue (gate-fit.ts).
 */
export async function preCheck(run: Run, vmid: string | undefined): Promise<Target> {
	const { e } = run;
	const host = e.hostName ? await getHostByName(sql(), e.hostName) : null;
	if (!host) throw new Failure(`host '${e.hostName}' is no longer configured`);
	const def = ACTIONS[e.action as keyof typeof ACTIONS];
	const guest = guestOf(e.action, vmid, e.params);
	const preconditions = def.preconditions?.(e.params as never, { vmid }) ?? [];
	const subject = subjectOf(preconditions, guest, host.name);
	const link = linkTo(run, host);
	const reader = hostReader(run, link, subject);
	// A pooled connection: usually open already, so the first command starts at once. A host
	// that refuses or does not answer is waited for like any read before the run.
	run.client = await waitFor(run, link, { subject, label: `connect to ${host.name}`, command: '' }, () => link.connected());
	// Nothing is sent to the target with a key whose gate would refuse it halfway (an older catalogue).
	await checkGates(run, link);
	// Two independent reads at once, on two channels of the one connection: is the target still
	// as approved (the preconditions), and can its storage take the snapshot before (`pct config`
	// then `pvesm status`). Nothing runs on the target until both have answered.
	// A cluster member: re-read right before running, before any read of the guest (the guest may have moved, the node lost quorum since approval).
	const misrouted = await clusterRefusal(host, guest, { mutation: run.mutation, client: run.client, signal: run.cancel.signal });
	if (misrouted) throw new Failure(`not run: ${misrouted.error}${misrouted.hint ? ` (${misrouted.hint})` : ''}`);
	const snapshotWanted = !run.resuming && env().NOMOS_SNAPSHOT_BEFORE && wantsSnapshot(e.action, e.classification, guest);
	const snapshotPossible = snapshotWanted ? canSnapshot(reader, guest) : Promise.resolve(false);
	snapshotPossible.catch(() => undefined); // awaited by snapshot.ts; a precondition refusal may come first
	const found: StepContext = { vmid };
	// A resume reads the effect back instead: a precondition may no longer hold because the earlier run did its work.
	for (const p of run.resuming ? [] : preconditions) {
		const stale = await checkPrecondition(reader, p, found);
		if (stale) throw new Failure(`not run: ${stale.why}`);
	}
	// Built after the preconditions: a step may use what they read (vm_http_check's agent address).
	const planned = def.steps(e.params as never, found);
	return { def, vmid, guest, found, planned, snapshotPossible, link, reader, io: stepIo(run, link) };
}
