// Storage use in the inventory and get_state_snapshot (issue #45): per host, standalone or a
// cluster member, with a trend once two samples are hours apart; a storage read that failed is
// unknown with why, and the rest of the sync still lands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getStateSnapshotTool } from '../../src/lib/server/agent/tools/get-state-snapshot';
import type { ToolContext } from '../../src/lib/server/agent/tools/context';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { STORAGE_SAMPLES_KEPT, trendText } from '../../src/lib/server/inventory/storage-trend';
import { GiB } from '../doubles/proxmox/health';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { useTestDatabase } from '../helpers/db';
import { addHost } from '../helpers/executions';

useTestDatabase();

let pve: ProxmoxDouble;
let cluster: ProxmoxCluster;
const ctx: ToolContext = {
	sessionId: '00000000-0000-0000-0000-000000000000',
	messageId: '00000000-0000-0000-0000-000000000001',
	signal: new AbortController().signal,
	turn: { httpGets: 0 }
};
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;
const snapshot = async (): Promise<Loose> => getStateSnapshotTool(ctx).execute!({}, { toolCallId: 'x', messages: [] });
const storageOf = async (host: string): Promise<string[]> => (await snapshot()).hosts.find((h: Loose) => h.name === host).storage;
const samples = (host: string, storage: string) =>
	sql()<{ at: string; used: number }[]>`select at, used from storage_samples where host_name = ${host} and storage = ${storage} order by at`;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 101, hostname: 'media', status: 'running' }] });
	cluster = await startProxmoxCluster({ delayMs: 1, members: [{ name: 'pve1' }, { name: 'pve2' }] });
	await addHost(pve);
	for (const m of cluster.members) await addHost(m);
});

afterAll(async () => {
	await pve?.close();
	await cluster?.close();
});

describe('storage in the inventory', () => {
	it('a standalone node and each cluster member: use per storage, one sample each, no trend yet', async () => {
		await pve.fill('local', 0.5, 100 * GiB);
		await cluster.member('pve2').fill('local-lvm', 0.91, 400 * GiB);
		expect((await syncAllHosts()).every((r) => r.ok)).toBe(true);
		const [host] = await sql()<{ attributes: { storage: unknown[] } }[]>`select attributes from entities where kind = 'host' and external_id = 'strong'`;
		expect(host.attributes.storage).toContainEqual(expect.objectContaining({ storage: 'local', total: 100 * GiB, used: 50 * GiB, active: true }));
		expect(await storageOf('strong')).toContain('local: 50% used (50.0/100.0 GiB, 50.0 free); dir backup,iso,vztmpl');
		expect(await storageOf('pve2')).toContain('local-lvm: 91% used (364.0/400.0 GiB, 36.0 free); lvmthin images,rootdir');
		expect((await storageOf('pve1')).some((l) => l.startsWith('local-lvm: '))).toBe(true);
		expect(await samples('strong', 'local')).toHaveLength(1);
	});

	it('a trend once the samples are hours apart: +GiB/day from the oldest to the newest', async () => {
		// Six hours ago the storage held 1.5 GiB less; the sync an hour on adds no sample within the hour.
		await sql()`update storage_samples set at = now() - interval '6 hours', used = used - ${1.5 * GiB} where host_name = 'strong' and storage = 'local'`;
		await pve.fill('local', 0.52, 100 * GiB);
		await syncAllHosts();
		const rows = await samples('strong', 'local');
		expect(rows).toHaveLength(2);
		// 50.0 − 1.5 GiB six hours ago → 52.0 GiB now: +3.5 GiB in 0.25 day = +14.0 GiB/day.
		expect(await storageOf('strong')).toContain('local: 52% used (52.0/100.0 GiB, 48.0 free), +14.0 GiB/day over 6 h; dir backup,iso,vztmpl');
		// A second sync within the hour adds nothing.
		await syncAllHosts();
		expect(await samples('strong', 'local')).toHaveLength(2);
	});

	it('keeps only the last few samples per storage', async () => {
		for (let i = 0; i < STORAGE_SAMPLES_KEPT + 5; i++)
			await sql()`insert into storage_samples (host_name, storage, at, used, total) values ('strong', 'local', now() - ${`${i + 7} hours`}::interval, ${GiB}, ${100 * GiB})`;
		await sql()`delete from storage_samples where host_name = 'strong' and storage = 'local' and at > now() - interval '1 hour'`;
		await syncAllHosts();
		expect((await samples('strong', 'local')).length).toBe(STORAGE_SAMPLES_KEPT);
	});

	it('a storage read that fails: unknown with why; the containers still sync', async () => {
		await pve.setFault('fail', { tool: 'pvesh', match: '/nodes/localhost/storage', exitCode: 255, stderr: 'storage status: got timeout' });
		const [r] = (await syncAllHosts()).filter((x) => x.host === 'strong');
		expect(r).toMatchObject({ ok: true, containers: 1 });
		const lines = await storageOf('strong');
		expect(lines).toHaveLength(1);
		expect(lines[0]).toMatch(/^unknown: pvesh get \/nodes\/localhost\/storage --output-format json: exit 255: storage status: got timeout$/);
		await pve.setFault('fail', null);
	});

	it('trendText: steady, shrinking, and nothing under two hours', () => {
		const at = (h: number) => new Date(Date.UTC(2026, 11, 6, h)).toISOString();
		expect(
			trendText([
				{ at: at(0), used: 10 * GiB },
				{ at: at(1), used: 20 * GiB }
			])
		).toBeUndefined();
		expect(
			trendText([
				{ at: at(0), used: 10 * GiB },
				{ at: at(12), used: 10 * GiB }
			])
		).toBe('steady over 12 h');
		expect(
			trendText([
				{ at: at(0), used: 10 * GiB },
				{ at: at(3), used: 11 * GiB },
				{ at: at(12), used: 9 * GiB }
			])
		).toBe('−2.0 GiB/day over 12 h');
	});
});
