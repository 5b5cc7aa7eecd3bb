import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { getHostByName } from '../db/queries/hosts';
import { execArgv, SshError } from '../ssh/client';
import { lease } from '../ssh/pool';
import { flagLeftoversRecheck, setLeftovers, type ExecutionRow } from '../db/queries/executions';
import { isVmAction } from './safeguards';
import { classifyGuestRead, guestName } from './host-reads';

/** The container a mutation was about: its target's vmid, or the vmid it was creating. */
export function targetVmid(e: Pick<ExecutionRow, 'target' | 'params'> & { action?: string }): string | null {
	// qm_*/vm_* name a VM by params.vmid: not a container to read back with pct (see vmOf).
	if (e.action && isVmAction(e.action)) return null;
	const m = /^lxc:[^/]+\/([0-9]+)$/.exec(e.target);
	if (m) return m[1];
	const v = e.params?.vmid;
	return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
}

/** The VM a VM mutation was about: the clone it was making, else params.vmid. */
export function vmOf(e: Pick<ExecutionRow, 'params'> & { action?: string }): string | null {
	if (!e.action || !isVmAction(e.action)) return null;
	const v = e.action === 'vm_clone' ? e.params?.newid : e.params?.vmid;
	return (typeof v === 'string' || typeof v === 'number') && /^[0-9]+$/.test(String(v)) ? String(v) : null;
}

type ReadBackOf = Pick<ExecutionRow, 'target' | 'params' | 'hostName' | 'classification'> & { action?: string };

/** A read-back in one line, and whether the host answered it (when not, the text says so). */
export type ReadBack = { text: string | null; reached: boolean };

/**
 * Reads back what a failed, cancelled or interrupted mutation left on its target (`pct|qm status`,
 * `pct|qm config` incl. its lock) and says it in one line, e.g. "CT 105 exists on strong, stopped,
 * locked: create". No text when there is nothing to read (no container involved, host removed).
 * Over `client` when given, else a pooled connection.
 */
export async function readBack(e: ReadBackOf, client?: Client): Promise<ReadBack> {
	if (e.classification === 'read_only') return { text: null, reached: true };
	const vm = vmOf(e);
	const vmid = vm ?? targetVmid(e);
	if (!vmid || !e.hostName) return { text: null, reached: true };
	const [what, tool] = vm ? ['VM', 'qm'] : ['CT', 'pct'];
	let held: Awaited<ReturnType<typeof lease>> | undefined;
	try {
		if (!client) {
			const host = await getHostByName(sql(), e.hostName);
			if (!host) return { text: null, reached: true };
			held = await lease(host, 8_000);
		}
		const c = client ?? held!.client;
		const kind = vm ? 'vm' : 'ct';
		// Only pct/qm's own "Configuration file … does not exist" makes the guest absent; no exit
		// status (a timeout, a dropped link) or any other failure is no answer (see host-reads.ts).
		const read = async (verb: 'status' | 'config') => {
			const r = await execArgv(c, [tool, verb, vmid], { timeoutMs: 10_000 });
			const got = classifyGuestRead(kind, vmid, r, { host: e.hostName!, status: verb === 'status', what: `${tool} ${verb}` });
			if (got.state === 'unknown') throw new SshError(got.why);
			return got;
		};
		const st = await read('status');
		if (st.state === 'absent') return { text: `${guestName(kind, vmid)} does not exist on ${e.hostName}`, reached: true };
		const cfg = await read('config');
		const lock = cfg.state === 'present' ? /^lock:\s*(\S+)/m.exec(cfg.stdout)?.[1] : undefined;
		if (cfg.state === 'absent') return { text: `${guestName(kind, vmid)} does not exist on ${e.hostName}`, reached: true };
		return { text: `${what} ${vmid} exists on ${e.hostName}, ${st.status}${lock ? `, locked: ${lock}` : ''}`, reached: true };
	} catch (err) {
		held?.release(true);
		held = undefined;
		return { text: `could not read ${what} ${vmid} back from ${e.hostName}: ${(err as Error).message}`, reached: false };
	} finally {
		held?.release();
	}
}

/** `readBack`'s text only (null when there is nothing to read). */
export async function readLeftovers(e: ReadBackOf): Promise<string | null> {
	return (await readBack(e)).text;
}

/**
 * Reads the leftovers of a finished mutation (unless already known) and stores them; returns
 * them. When the host did not answer — or `recheck` says the command may still be running — the
 * execution is flagged to be read back again once the host answers (see remote-stop.ts).
 */
export async function recordLeftovers(
	e: Pick<ExecutionRow, 'id' | 'target' | 'params' | 'hostName' | 'classification' | 'leftovers'> & { action?: string },
	opts: { recheck?: boolean } = {}
): Promise<string | null> {
	if (e.leftovers && !opts.recheck) return e.leftovers;
	const { text, reached } = e.leftovers ? { text: e.leftovers, reached: true } : await readBack(e);
	const recheck = !reached || opts.recheck === true;
	if (text || recheck) {
		await sql().begin(async (tx) => {
			if (text) await setLeftovers(tx, e.id, text);
			if (recheck) await flagLeftoversRecheck(tx, e.id);
		});
	}
	return text;
}
