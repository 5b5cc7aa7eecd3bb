import { catalogueVersion } from '../../proxmox/gate-shapes';
import { hasTwoKeys, type KeyRole } from '../../proxmox/key-role';
import { GATE_VERSION_ARGV, gateVersionOf, runProblem } from '../../ssh/gate';
import { toCommand } from '../../ssh/quote';
import { attemptRead, waitFor } from './host-reader';
import type { Link } from './link';
import { Failure } from './outcomes';
import type { Run } from './run';

/**
 * Before anything is sent to the target: each key the run will use asks its gate for its version
 * (the gate answers `nomos-gate --version` to either key, deploy/nomos-gate). A gate of another
 * catalogue, or a mutation key gated as a read key, ends the run "not run: …" by name — it would
 * refuse a step halfway. A key no gate answers for (a full shell) runs as before; the host card
 * warns of it (hosts/gate.ts).
 */
export async function checkGates(run: Run, link: Link): Promise<void> {
	const { host } = link;
	const roles: KeyRole[] = !run.mutation ? ['read'] : hasTwoKeys(host) ? ['read', 'mutate'] : ['mutate'];
	for (const role of roles) {
		const r = await waitFor(
			run,
			link,
			{ subject: `the gate of ${host.name}`, label: `check the gate of the ${role} key`, command: toCommand(GATE_VERSION_ARGV) },
			(t) => attemptRead(run, link, GATE_VERSION_ARGV, t, { role, group: false })
		);
		const problem = runProblem(host.name, gateVersionOf(r), catalogueVersion(), role);
		if (problem) throw new Failure(`not run: ${problem}`);
	}
}
