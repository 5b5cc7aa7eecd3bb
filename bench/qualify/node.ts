// The node double between runs: put back to a scenario's seed; the few state changes scenarios
// make that the double's own API has no call for (a unit inside a CT); a figure as the node reports it.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connectTo, execOn } from '../../tests/doubles/proxmox/client';
import type { CtState, ProxmoxDouble, SeedCt } from '../../tests/doubles/proxmox/server';
import { writeSeed } from '../../tests/doubles/proxmox/state';

/** The node every scenario starts from unless it says otherwise. */
export const STANDARD_NODE: SeedCt[] = [
	{ vmid: 100, hostname: 'caddy', status: 'running' },
	{ vmid: 101, hostname: 'db', status: 'running' },
	{ vmid: 102, hostname: 'media', status: 'stopped' },
	{ vmid: 110, hostname: 'old', status: 'stopped' }
];

/** Files of the state dir a run leaves as they are: the SSH home and the lists given at start. */
const KEEP = new Set(['home', 'templates.json', 'images.json']);

/** Puts the node back to `seed`: no faults, default health, no guests but these. */
export async function resetNode(node: ProxmoxDouble, seed: SeedCt[]): Promise<void> {
	for (const f of await readdir(node.stateDir)) if (!KEEP.has(f)) await rm(join(node.stateDir, f), { recursive: true, force: true });
	await writeSeed(node.stateDir, seed);
}

/** Sets a systemd unit inside a CT (as its `systemctl` reads it), e.g. nginx installed but stopped. */
export async function setGuestUnit(node: ProxmoxDouble, vmid: number, unit: string, active: boolean): Promise<void> {
	const dir = join(node.stateDir, 'guests', String(vmid));
	await mkdir(dir, { recursive: true });
	const file = join(dir, 'units.json');
	const units = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as Record<string, unknown>;
	units[unit] = { description: unit, active, enabled: true, since: Date.parse('2025-01-06T08:14:03Z'), pid: 4242 };
	await writeFile(file, JSON.stringify(units, null, 2));
}

/** Whether a unit inside a CT is active now (null: the CT has no such unit). */
export async function guestUnitActive(node: ProxmoxDouble, vmid: number, unit: string): Promise<boolean | null> {
	const text = await readFile(join(node.stateDir, 'guests', String(vmid), 'units.json'), 'utf8').catch(() => '{}');
	const u = (JSON.parse(text) as Record<string, { active?: boolean }>)[unit];
	return u ? u.active === true : null;
}

export const ct = async (node: ProxmoxDouble, vmid: number): Promise<CtState | undefined> => (await node.containers()).find((c) => c.vmid === vmid);

/** A storage's used fraction (0–1) as the node itself reports it (`pvesh get /nodes/<n>/storage`), or null when it has no such storage. */
export async function storageUsed(node: ProxmoxDouble, storage: string): Promise<number | null> {
	const conn = await connectTo(node);
	try {
		const r = await execOn(conn, `pvesh get /nodes/${node.nodeName}/storage --output-format json`);
		if (r.code !== 0) throw new Error(`the node's storage list failed: ${r.stderr.trim()}`);
		const list = JSON.parse(r.stdout) as { storage: string; used_fraction: number }[];
		return list.find((x) => x.storage === storage)?.used_fraction ?? null;
	} finally {
		conn.end();
	}
}
