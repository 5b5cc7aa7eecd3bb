// Settings → Hosts when a host does not answer (issue #42): a cluster member whose SSH refuses Nomos
// from the start shows "Offline — never answered" (not online, not "No quorum"), its figures and
// guests as unknown, live; a standalone host that answered once and then went silent shows
// "Offline — not answering since …" and its guests "as last seen …, unknown now". 1280 and 390 px.
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const MEMBERS = ['px1', 'px2', 'px3'];
const ALL = [...MEMBERS, 'solo'];

test('a member that never answered and a host that went silent say so', async ({ page, env, sql }) => {
	test.setTimeout(scaled(150_000));
	let cluster: ProxmoxCluster | undefined;
	let solo: ProxmoxDouble | undefined;
	try {
		cluster = await startProxmoxCluster({
			name: 'lab',
			delayMs: 1,
			members: [
				{ name: 'px1', seed: [{ vmid: 150, hostname: 'proxy', status: 'running' }] },
				{ name: 'px2', seed: [{ vmid: 151, hostname: 'db', status: 'running' }] },
				{ name: 'px3', seed: [{ vmid: 152, hostname: 'nas', status: 'running' }], vms: [{ vmid: 250, name: 'haos', status: 'running' }] }
			]
		});
		solo = await startProxmoxDouble({ nodeName: 'solo', delayMs: 1, seed: [{ vmid: 160, hostname: 'media', status: 'running' }] });
		// px3 runs in the cluster, but its SSH refuses Nomos from the start.
		cluster.member('px3').setReachable(false);
		for (const m of [...cluster.members, solo]) {
			await sql`insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
				values (${m.nodeName}, ${m.host}, ${m.port}, 'root', ${m.clientKeyPath}, ${m.hostKeyFingerprint})`;
		}
		await login(page, env.admin);
		await page.goto('/settings');
		await expect(page.getByTestId('settings-page')).toBeVisible();
		await expect(async () => {
			await page.getByTestId('sync-now').click();
			await expect(page.getByTestId('sync-note')).toHaveText(/queued/, { timeout: scaled(2_000) });
		}).toPass({ timeout: scaled(30_000) });

		const view = page.locator('[data-testid="cluster-view"][data-cluster="lab"]');
		const node = (name: string) => view.locator(`[data-testid="cluster-node"][data-node="${name}"]`);
		await expect(view.getByTestId('cluster-node')).toHaveCount(3, { timeout: scaled(30_000) });
		// Live (cluster.updated when it fails to answer): offline, never answered — not "Online".
		await expect(node('px3').getByTestId('node-standing')).toHaveAttribute('data-standing', 'offline', { timeout: scaled(30_000) });
		await expect(node('px3').getByTestId('node-standing')).toHaveText(/^\s*Offline\s+— never answered\s*$/);
		await expect(node('px3').getByTestId('node-figures')).toContainText('no figures: it does not answer Nomos');
		await expect(node('px3').getByTestId('node-figures')).not.toContainText('GiB free');
		await expect(node('px3').getByTestId('node-guests-unknown')).toHaveText('\u00a0— as last listed; their state is unknown now');
		await expect(node('px1').getByTestId('node-standing')).toHaveAttribute('data-standing', 'online');
		await expect(node('px1').getByTestId('node-guests-unknown')).toHaveCount(0);
		await expect(view.getByTestId('cluster-quorum')).toHaveText('Quorate');

		// solo answered; its row says how fresh its inventory is.
		const soloRow = page.getByTestId('host-row').filter({ hasText: 'solo' });
		await expect(async () => {
			await page.reload();
			await expect(soloRow.getByTestId('host-freshness')).toHaveAttribute('data-state', 'fresh', { timeout: scaled(2_000) });
		}).toPass({ timeout: scaled(30_000) });
		await expect(soloRow.getByTestId('host-freshness')).toHaveText(/^\s*Inventory read \d+ s ago\.\s*$/);
		const px3Row = page.getByTestId('host-row').filter({ hasText: 'px3' });
		await expect(px3Row.getByTestId('host-freshness')).toHaveAttribute('data-state', 'offline');
		await expect(px3Row.getByTestId('host-freshness')).toHaveText(/Offline\s+—\s+never answered\.\s+Nothing is known of its guests yet\./);

		// solo goes silent: the next sync cannot reach it; its guests stay, as last seen.
		// Shut down as cluster.setDown does it: sshd closes its connections, then nothing answers.
		solo.dropConnections();
		solo.setReachable(false);
		await expect(async () => {
			await page.getByTestId('sync-now').click();
			await expect(page.getByTestId('sync-note')).toHaveText(/queued/, { timeout: scaled(2_000) });
		}).toPass({ timeout: scaled(30_000) });
		await expect(async () => {
			await page.reload();
			await expect(soloRow.getByTestId('host-freshness')).toHaveAttribute('data-state', 'offline', { timeout: scaled(2_000) });
		}).toPass({ timeout: scaled(30_000) });
		await expect(soloRow.getByTestId('host-freshness')).toHaveText(
			/Offline\s+—\s+not answering since \d\d:\d\d UTC \(\d+ s ago\)\.\s+Its guests are as last seen \d+ s ago, unknown now\./
		);
		const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from entities where kind = 'lxc' and host_name = 'solo'`;
		expect(n).toBe(1);
		await view.scrollIntoViewIfNeeded();
		await page.screenshot({ path: 'test-results/host-answers-1280.png', fullPage: true });
		await soloRow.scrollIntoViewIfNeeded();
		await soloRow.screenshot({ path: 'test-results/host-answers-solo-1280.png' });

		await page.setViewportSize({ width: 390, height: 844 });
		await expect(node('px3').getByTestId('node-standing')).toBeVisible();
		await page.screenshot({ path: 'test-results/host-answers-390.png', fullPage: true });
		await soloRow.scrollIntoViewIfNeeded();
		await soloRow.screenshot({ path: 'test-results/host-answers-solo-390.png' });
		expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
	} finally {
		await cluster?.close();
		await solo?.close();
		await sql`delete from hosts where name in ${sql(ALL)}`;
		await sql`delete from entities where (kind = 'cluster' and external_id = 'lab') or (kind = 'host' and external_id in ${sql(ALL)}) or host_name in ${sql(ALL)}`;
	}
});
