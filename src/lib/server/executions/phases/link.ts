import type { Client } from 'ssh2';
import type { Host } from '../../db/queries/hosts';
import { env } from '../../env';
import { lease } from '../../ssh/pool';
import { connectFailure, type Attempt } from '../host-reads';
import { Failure } from './outcomes';
import type { Run } from './run';

/** The run's connection to its host: the pooled one, leased again after one dropped. */
export interface Link {
	readonly host: Host;
	/** How long a read waits for a host that does not answer (NOMOS_HOST_WAIT_MIN). */
	readonly budgetMs: number;
	/** The leased client; a host that refuses or does not answer is unknown, a wrong key or login is not. */
	connected: () => Promise<Attempt<Client>>;
	/** Gives the connection up (it may be dead): the next read leases a new one. */
	drop: () => void;
}

export function linkTo(run: Run, host: Host): Link {
	return {
		host,
		budgetMs: env().NOMOS_HOST_WAIT_MIN * 60_000,
		connected: async () => {
			if (run.held) return { answer: run.held.client };
			try {
				run.held = await lease(host);
				run.client = run.held.client;
				return { answer: run.client };
			} catch (err) {
				const why = connectFailure(err, host.name);
				if (why) return { unknown: why };
				throw new Failure((err as Error).message);
			}
		},
		drop: () => {
			run.held?.release(true);
			run.held = undefined;
		}
	};
}
