import { sql } from '../db/index';
import { getHostByName } from '../db/queries/hosts';
import { execArgv } from '../ssh/client';
import { lease } from '../ssh/pool';
import { setLeftovers, type ExecutionRow } from '../db/queries/executions';

/** The container a mutation was about: its target's vmid, or the vmid it was creating. */
export function targetVmid(e: Pick<ExecutionRow, 'target' | 'params'> & { action?: string }): string | null {
	// qm_* name a VM by params.vmid: not a container to read back with pct.
	if (e.action?.startsWith('qm_')) return null;
	const m = /^lxc:[^/]+\/([0-9]+)$/.exec(e.target);
	if (m) return m[1];
	const v = e.params?.vmid;
	return typeof v === 'string' || typeof v === 'number' ? String(v) : null;
}

/**
 * Reads back what a failed, cancelled or interrupted mutation left on its target (`pct status`,
 * `pct config` incl. its lock) and says it in one line, e.g. "CT 105 exists, stopped, locked:
 * create". Null when there is nothing to read (no container involved) or the host cannot be
 * reached (then the text says so).
 */
export async function readLeftovers(e: Pick<ExecutionRow, 'target' | 'params' | 'hostName' | 'classification'> & { action?: string }): Promise<string | null> {
	if (e.classification === 'read_only') return null;
	const vmid = targetVmid(e);
	if (!vmid || !e.hostName) return null;
	const host = await getHostByName(sql(), e.hostName);
	if (!host) return null;
	let held: Awaited<ReturnType<typeof lease>> | undefined;
	try {
		held = await lease(host, 8_000);
		const client = held.client;
		const st = await execArgv(client, ['pct', 'status', vmid], { timeoutMs: 10_000 });
		if (st.exitCode !== 0) return `CT ${vmid} does not exist on ${e.hostName}`;
		const status = /status:\s*(\S+)/.exec(st.stdout)?.[1] ?? 'in an unknown state';
		const cfg = await execArgv(client, ['pct', 'config', vmid], { timeoutMs: 10_000 });
		const lock = /^lock:\s*(\S+)/m.exec(cfg.stdout)?.[1];
		return `CT ${vmid} exists on ${e.hostName}, ${status}${lock ? `, locked: ${lock}` : ''}`;
	} catch (err) {
		return `could not read CT ${vmid} back from ${e.hostName}: ${(err as Error).message}`;
	} finally {
		held?.release();
	}
}

/** Reads the leftovers of a finished mutation (unless already known) and stores them; returns them. */
export async function recordLeftovers(e: Pick<ExecutionRow, 'id' | 'target' | 'params' | 'hostName' | 'classification' | 'leftovers'> & { action?: string }): Promise<string | null> {
	if (e.leftovers) return e.leftovers;
	const text = await readLeftovers(e);
	if (text) await sql().begin((tx) => setLeftovers(tx, e.id, text));
	return text;
}
