// Settings → Hosts with a 3-node cluster behind Nomos (two nodes with host entries, one without):
// the cluster's quorum and every node's standing, load and guests; a node taken down shows as
// down after the next sync without a reload; the node without a host entry says so and offers
// the add form prefilled, which adds it. At 1280 and 390 px.
import { startProxmoxCluster, type ProxmoxCluster } from '../doubles/proxmox/cluster';
import { login, test, expect } from './harness/fixtures';
import { scaled } from '../helpers/time';

const MEMBERS = ['pve1', 'pve2', 'pve3'];

test('the cluster as the operator sees it: nodes, a node going down live, a node without a host entry', async ({ page, env, sql }) => {
	test.setTimeout(scaled(120_000));
	let cluster: ProxmoxCluster | undefined;
	try {
		cluster = await startProxmoxCluster({
			delayMs: 1,
			members: [
				{ name: 'pve1', seed: [{ vmid: 130, hostname: 'proxy', status: 'running' }] },
				{
					name: 'pve2',
					seed: [
						{ vmid: 131, hostname: 'db', status: 'running' },
						{ vmid: 132, hostname: 'web', status: 'stopped' }
					],
					vms: [{ vmid: 230, name: 'haos', status: 'running' }]
				},
				{ name: 'pve3', vms: [{ vmid: 9130, name: 'debian-tpl', template: 1 }] }
			]
		});
		for (const name of ['pve1', 'pve2']) {
			const m = cluster.member(name);
			await sql`insert into hosts (name, address, port, username, key_path, host_key_fingerprint)
				values (${name}, ${m.host}, ${m.port}, 'root', ${m.clientKeyPath}, ${m.hostKeyFingerprint})`;
		}
		await login(page, env.admin);
		await page.goto('/settings');
		await expect(page.getByTestId('settings-page')).toBeVisible();
		await expect(page.getByTestId('cluster-view')).toHaveCount(0);
		// Marks this document: a reload would lose it.
		await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
		// A click before the page is hydrated does nothing: click until the refresh is queued.
		await expect(async () => {
			await page.getByTestId('sync-now').click();
			await expect(page.getByTestId('sync-note')).toHaveText(/queued/, { timeout: scaled(2_000) });
		}).toPass({ timeout: scaled(30_000) });

		const view = page.getByTestId('cluster-view');
		await expect(view.getByTestId('cluster-name')).toHaveText('homelab', { timeout: scaled(30_000) });
		await expect(view.getByTestId('cluster-quorum')).toHaveText('Quorate');
		const node = (name: string) => view.locator(`[data-testid="cluster-node"][data-node="${name}"]`);
		await expect(view.getByTestId('cluster-node')).toHaveCount(3);
		for (const name of MEMBERS) await expect(node(name).getByTestId('node-standing')).toHaveAttribute('data-standing', 'online');
		await expect(node('pve1').getByTestId('node-guests')).toHaveText('1 CT · 0 VMs');
		await expect(node('pve2').getByTestId('node-guests')).toHaveText('2 CTs · 1 VM');
		await expect(node('pve3').getByTestId('node-guests')).toHaveText('0 CTs · 0 VMs · 1 template');
		await expect(node('pve1').getByTestId('node-figures')).toContainText(/GiB free of \d+(\.\d)? GiB/);
		await expect(node('pve1').getByTestId('node-figures')).toContainText(/CPU [\d.]+% of \d+/);
		await expect(node('pve1').getByTestId('node-not-added')).toHaveCount(0);
		await expect(node('pve3').getByTestId('node-not-added')).toHaveText(/Not added: commands for its guests are refused — add it as a host/);
		await page.screenshot({ path: 'test-results/cluster-hosts-1280.png', fullPage: true });

		// pve2 shuts down; the next sync (read from pve1, still quorate with pve3) shows it down, live.
		await cluster.setDown('pve2', true);
		await page.getByTestId('sync-now').click();
		await expect(node('pve2')).toHaveAttribute('data-status', 'offline', { timeout: scaled(30_000) });
		await expect(node('pve2').getByTestId('node-standing')).toContainText('Down');
		await expect(node('pve2').getByTestId('node-down-since')).toHaveText(/^since \d\d:\d\d UTC \(\d+ s ago\)$/);
		await expect(node('pve2').getByTestId('node-figures')).toContainText('no figures while it is down');
		await expect(node('pve2').getByTestId('node-guests')).toHaveText('2 CTs · 1 VM');
		await expect(view.getByTestId('cluster-quorum')).toHaveText('Quorate');
		await expect(node('pve1').getByTestId('node-standing')).toHaveAttribute('data-standing', 'online');
		expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
		await page.screenshot({ path: 'test-results/cluster-hosts-down-1280.png', fullPage: true });

		// The add form for pve3 starts from the node's name and the reading member's port, user and key.
		await node('pve3').getByTestId('add-node-host').click();
		const form = node('pve3').getByTestId('host-form');
		await expect(form.getByLabel('Name')).toHaveValue('pve3');
		await expect(form.getByLabel('Port')).toHaveValue(String(cluster.member('pve1').port));
		await expect(form.getByLabel('User')).toHaveValue('root');
		await expect(form.getByLabel(/Private key path/)).toHaveValue(cluster.member('pve1').clientKeyPath);
		await expect(form.getByLabel('Address')).toHaveValue('');

		await page.setViewportSize({ width: 390, height: 844 });
		await view.scrollIntoViewIfNeeded();
		await page.screenshot({ path: 'test-results/cluster-hosts-390.png', fullPage: true });
		// Nothing wider than the phone's screen.
		expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
		// Added from there: the node has a host entry at once (its key is still to be pinned, in its row below).
		await form.getByLabel('Address').fill('127.0.0.1');
		await form.getByRole('button', { name: 'Add host' }).click();
		await expect(node('pve3').getByTestId('node-not-added')).toHaveCount(0);
		await expect(node('pve3').getByTestId('node-figures')).toContainText('added as a host');
		await expect(page.getByTestId('host-row').filter({ hasText: 'pve3' })).toContainText('host key not pinned');
		await page.screenshot({ path: 'test-results/cluster-hosts-down-390.png', fullPage: true });
	} finally {
		await cluster?.close();
		await sql`delete from hosts where name in ${sql(MEMBERS)}`;
		await sql`delete from entities where kind = 'cluster' or (kind = 'host' and external_id in ${sql(MEMBERS)}) or host_name in ${sql(MEMBERS)}`;
	}
});
