import type { Client } from 'ssh2';
import type { Host } from '../../db/queries/hosts';
import { env } from '../../env';
import { hasTwoKeys, keyTarget, type KeyRole } from '../../proxmox/key-role';
import { lease } from '../../ssh/pool';
import { connectFailure, type Attempt } from '../host-reads';
import { Failure } from './outcomes';
import type { Run } from './run';

/**
 * The run's connections to its host: the pooled one of its read key (`run.held`), and of its
 * mutation key (`run.mutator`) once a mutating step needs it — the same one when the host has a
 * single key. Each is leased again after one dropped.
 */
export interface Link {
	readonly host: Host;
	/** How long a read waits for a host that does not answer (NOMOS_HOST_WAIT_MIN). */
	readonly budgetMs: number;
	/** The leased client of `role`'s key (proxmox/key-role.ts); a host that refuses or does not answer is unknown, a wrong key or login is not. */
	connected: (role?: KeyRole) => Promise<Attempt<Client>>;
	/** Gives `role`'s connection up (it may be dead): the next command with that key leases a new one. */
	drop: (role?: KeyRole) => void;
}

export function linkTo(run: Run, host: Host): Link {
	const slot = (role: KeyRole): 'held' | 'mutator' => (role === 'mutate' && hasTwoKeys(host) ? 'mutator' : 'held');
	return {
		host,
		budgetMs: env().NOMOS_HOST_WAIT_MIN * 60_000,
		connected: async (role = 'read') => {
			const at = slot(role);
			const held = run[at];
			if (held) return { answer: held.client };
			try {
				const got = await lease(keyTarget(host, role));
				run[at] = got;
				if (at === 'held') run.client = got.client;
				return { answer: got.client };
			} catch (err) {
				const why = connectFailure(err, host.name);
				if (why) return { unknown: why };
				throw new Failure((err as Error).message);
			}
		},
		drop: (role = 'read') => {
			const at = slot(role);
			run[at]?.release(true);
			run[at] = undefined;
		}
	};
}
