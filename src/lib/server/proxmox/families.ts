// The families of the catalogue described on demand (issue #45: the first request stays within
// its budget as the catalogue grows): request_execution's description names each with its one
// phrase and lists none of its members; describe_action "<family>" lists them. The node's
// operations (actions/node-ops.ts: a package refresh, a PVE service's restart, a journal's tail)
// belong to `health` with its reads: a family of its own cost 13 tokens of every first request,
// "journals" in the phrase costs 2. The backup actions (actions/backups.ts: prune, delete, a
// job's retention) belong to it too.
import { HEALTH_ACTIONS, HEALTH_FAMILY, HEALTH_GIST } from './health-reads';
import { NODE_ACTIONS } from './actions/node-ops';
import { BACKUP_ACTIONS } from './actions/backups';

export interface Family {
	name: string;
	/** what it does, in the catalogue's one phrase (tokens: every first request carries it) */
	gist: string;
	/** where its actions run */
	target: string;
	actions: readonly string[];
}

export const FAMILIES: readonly Family[] = [
	{
		name: HEALTH_FAMILY,
		gist: `${HEALTH_GIST}, journals`,
		target: 'a host (node?: another cluster member, read through it); journal_tail a host or a container',
		actions: [...HEALTH_ACTIONS, ...NODE_ACTIONS, ...BACKUP_ACTIONS]
	}
];

/** Every action described on demand (left out of request_execution's own catalogue lines). */
export const ON_DEMAND: readonly string[] = FAMILIES.flatMap((f) => f.actions);

export const familyNamed = (name: string): Family | undefined => FAMILIES.find((f) => f.name === name);
