// A VM's address from what its guest agent reports (`qm guest cmd <vmid> network-get-interfaces`):
// loopback and link-local are skipped, IPv4 wins, and anything that does not parse as an IP
// address never reaches vm_http_check's URL.
import { describe, expect, it } from 'vitest';
import { ACTIONS } from '../../src/lib/server/proxmox/actions';
import { pickAgentAddress, urlHost } from '../../src/lib/server/proxmox/guest-agent';
import { healthHttpCheck } from '../../src/lib/server/executions/safeguards';

type Addr = { 'ip-address': unknown; 'ip-address-type'?: string; prefix?: number };
const iface = (name: string, ...ips: unknown[]) => ({
	name,
	'hardware-address': 'bc:24:11:00:00:01',
	'ip-addresses': ips.map((ip): Addr => ({ 'ip-address': ip, prefix: 24 }))
});
const lo = iface('lo', '127.0.0.1', '::1');
const pick = (...ifaces: unknown[]) => pickAgentAddress('150', JSON.stringify(ifaces, null, 3));

describe('the address a VM is reached on', () => {
	it('skips loopback and link-local, prefers IPv4 over an earlier IPv6', () => {
		expect(pick(lo, iface('eth0', 'fe80::be24:11ff:fe00:1', '2001:db8::5', '169.254.3.4', '192.168.1.150'))).toEqual({ address: '192.168.1.150' });
		expect(pick(lo, iface('eth0', 'fe80::1', '2001:db8::5'))).toEqual({ address: '2001:db8::5' });
		// A loopback address on another interface name is still loopback; `lo` is skipped whatever it holds.
		expect(pick(iface('lo', '10.9.9.9'), iface('eth0', '127.0.0.2', '10.0.0.5'))).toEqual({ address: '10.0.0.5' });
		// The first usable one, in the agent's order.
		expect(pick(lo, iface('eth0', '10.0.0.5'), iface('docker0', '172.17.0.1'))).toEqual({ address: '10.0.0.5' });
	});

	it('never takes a hostile "address": only a string both zod and net.isIP read as an IP', () => {
		for (const bad of [
			'1.2.3.4; rm -rf /',
			'$(id)',
			'`id`',
			"10.0.0.5' ; id '",
			'10.0.0.5\nid',
			'10.0.0.5:80',
			'010.000.000.005',
			'fd00::1%eth0',
			' 10.0.0.5',
			'localhost',
			42,
			null,
			{ ip: '10.0.0.5' }
		]) {
			const r = pick(lo, iface('eth0', bad));
			expect(r, JSON.stringify(bad)).toEqual({
				refuse: "VM 150's guest agent reports no usable address (only loopback or link-local); 1 reported value was not an IP address"
			});
		}
		expect(pick(lo, iface('eth0', '$(id)', '1.2.3.4; rm -rf /', '10.0.0.7'))).toEqual({ address: '10.0.0.7' });
		expect(pick(lo, iface('eth0', '::ffff:127.0.0.1'))).toMatchObject({ refuse: expect.stringContaining('no usable address') });
		expect(pick(lo, iface('eth0', '::ffff:7f00:1', '0.0.0.1'))).toMatchObject({ refuse: expect.stringContaining('no usable address') });
	});

	it('refuses with the reason when there is nothing to pick', () => {
		expect(pick(lo)).toEqual({ refuse: "VM 150's guest agent reports no usable address (only loopback or link-local)" });
		expect(pick(lo, { name: 'eth0' })).toMatchObject({ refuse: expect.stringContaining('no usable address') });
		expect(pickAgentAddress('150', 'not json')).toEqual({ refuse: "VM 150's guest agent did not answer with its interfaces (not JSON)" });
		expect(pickAgentAddress('150', '{"name":"eth0"}')).toEqual({ refuse: "VM 150's guest agent did not answer with its interfaces (unexpected shape)" });
	});

	it('vm_http_check builds its URL from the address alone (IPv6 in brackets); the preview stands in for it', () => {
		const def = ACTIONS.vm_http_check;
		const p = def.params.parse({ vmid: 150, port: 8080, path: '/healthz' });
		expect(def.steps(p, { address: '10.0.0.5' }).map((s) => s.argv)).toEqual([
			['curl', '-fsS', '--noproxy', '*', '--max-time', '5', 'http://10.0.0.5:8080/healthz']
		]);
		expect(def.steps(def.params.parse({ vmid: 150, port: 443, scheme: 'https' }), { address: '2001:db8::5' })[0].argv.slice(-2)).toEqual([
			'--insecure',
			'https://[2001:db8::5]:443/'
		]);
		expect(def.steps(p, {})[0].argv.at(-1)).toBe('http://<agent-address>:8080/healthz');
		expect(() => def.steps(p, { address: '$(id)' })).toThrow('not an IP address');
		expect(() => urlHost('1.2.3.4; rm -rf /')).toThrow();
		// the node's own services are never a VM's address, however the agent spells them
		for (const own of ['127.0.0.1', '0.0.0.0', '0.1.2.3', '169.254.169.254', '::1', '::', '::ffff:7f00:1', '0:0:0:0:0:0:0:1', 'fe80::1'])
			expect(() => urlHost(own), own).toThrow('not one the node fetches');
		expect(def.preconditions!(p, {})).toEqual([
			{ kind: 'vm-status', vmid: '150', status: 'running' },
			{ kind: 'vm-agent-address', vmid: '150' }
		]);
		expect(def.params.safeParse({ vmid: 150, port: 80, path: 'x; id' }).success).toBe(false);
	});

	it('the health HTTP check is asked after a VM (re)start only when named', () => {
		const h = { port: 80, path: '/' };
		expect(healthHttpCheck('qm_start', { vmid: '150', healthHttp: h })).toEqual({ vmid: '150', port: 80, path: '/' });
		expect(healthHttpCheck('vm_reboot', { vmid: '150', healthHttp: h })).toEqual({ vmid: '150', port: 80, path: '/' });
		expect(healthHttpCheck('vm_create', { vmid: '150', start: true, healthHttp: h })).toEqual({ vmid: '150', port: 80, path: '/' });
		expect(healthHttpCheck('qm_start', { vmid: '150' })).toBeNull();
		expect(healthHttpCheck('vm_set', { vmid: '150', healthHttp: h })).toBeNull();
		expect(ACTIONS.vm_create.params.safeParse({ vmid: 150, name: 'x', image: 'local:import/a.qcow2', start: false, healthHttp: h }).success).toBe(false);
		expect(ACTIONS.qm_start.params.safeParse({ vmid: 150, healthHttp: { port: 80, path: '/', extra: 1 } }).success).toBe(false);
	});
});
