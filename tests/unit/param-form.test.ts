// The edit form checks params in the browser with the catalogue's own zod schemas: the same
// verdict and the same words as the server's check of an edit.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diffParams, formatChanges } from '../../src/lib/schemas/param-form';
import { ACTION_PARAMS, paramErrors } from '../../src/lib/schemas/action-params';
import { ACTIONS, ACTION_NAMES, type ActionName } from '../../src/lib/server/proxmox/actions';
import { editFieldErrors } from '../../src/lib/server/executions/edit';

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey alice@laptop';

describe('param form', () => {
	it('checks every action with the very schema the server runs', () => {
		expect(Object.keys(ACTION_PARAMS).sort()).toEqual([...ACTION_NAMES].sort());
		for (const name of ACTION_NAMES) expect(ACTIONS[name].params, name).toBe(ACTION_PARAMS[name]);
	});

	// [action, params, the browser's verdict: {} when valid, else the exact message per field]
	const cases: [ActionName, Record<string, unknown>, Record<string, string>][] = [
		['pct_create', { hostname: 'ok', template: TEMPLATE, memory: 4096 }, {}],
		[
			'pct_create',
			{ hostname: 'Not OK', template: 'nope', memory: 4.5, cores: 0, features: { nesting: 'yes' } },
			{
				hostname: 'a hostname: lowercase letters, digits and dashes, 1–63 characters, no leading/trailing dash',
				template: 'a container template volume such as local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst',
				memory: 'must be a whole number',
				cores: 'at least 1',
				'features.nesting': 'must be yes or no'
			}
		],
		[
			'pct_create',
			{ hostname: 'ok', template: TEMPLATE, extra: 1, features: { gpu: true } },
			{ extra: 'not a field of this action', 'features.gpu': 'not a field of this action' }
		],
		['pct_create', { template: TEMPLATE, memory: 2_000_000, disk: '8' }, { hostname: 'required', memory: 'at most 1048576', disk: 'must be a number' }],
		['pct_create', { hostname: 'ok', template: TEMPLATE, bridge: 'eth0' }, { bridge: 'a bridge such as vmbr0' }],
		['systemctl', { unit: 'nginx.service', op: 'reload' }, {}],
		[
			'systemctl',
			{ unit: 'nginx service', op: 'explode' },
			{
				unit: 'a systemd unit name such as nginx.service (not starting with a dash: that would be an option)',
				op: 'one of start, stop, restart, reload, enable, disable'
			}
		],
		['vzdump', { storage: 'local', mode: 'snapshot', compress: 'bzip2' }, { compress: 'one of 0, zstd, gzip, lzo' }],
		['pct_exec', { argv: ['echo', 'a b', 'x'.repeat(5000)] }, { 'argv.2': 'each argument is at most 4096 characters' }],
		['pct_exec', { argv: [] }, { argv: 'at least 1 item' }],
		['pct_exec', { argv: Array(65).fill('x') }, { argv: 'at most 64 items' }],
		['pct_exec', { argv: 'ls -l' }, { argv: 'must be a list' }],
		['pct_exec', { argv: ['sh', '-c', 'echo "$HOME"\nls'] }, {}],
		['pct_set', {}, { _: 'set at least one of cores, memory, swap, onboot, description' }],
		['pct_push', { path: '/etc/x', content: 'é'.repeat(16 * 1024 + 1) }, { content: 'the content is at most 32768 bytes (UTF-8)' }],
		['pct_push', { path: '/etc/x', content: 'é'.repeat(16 * 1024) }, {}],
		['vm_set', { vmid: '150', memory: 1024, balloon: 2048 }, { balloon: 'balloon cannot exceed memory' }],
		['vm_create', { vmid: 99, name: 'k3s', image: '/var/lib/vz/template/iso/d.qcow2', sshKeys: KEY }, { vmid: 'a vmid is a number from 100 to 999999999' }],
		[
			'vm_create',
			{ vmid: 'auto', name: 'k3s', image: '/var/lib/vz/template/iso/d.qcow2', sshKeys: KEY, gateway: '10.0.0.1' },
			{ gateway: 'a gateway goes with a static ip, not dhcp' }
		],
		['vm_guest', { vmid: '150', cmd: 'exec' }, { cmd: 'one of ping, network-get-interfaces' }],
		['ct_http_check', { port: 70_000, timeoutS: 0 }, { port: 'at most 65535', timeoutS: 'at least 1' }]
	];
	it.each(cases)('%s (case %#): the verdict in the browser is the server’s', (action, params, verdict) => {
		const browser = paramErrors(action, params);
		expect(browser).toEqual(verdict);
		expect(editFieldErrors({ action, params }, params)).toEqual(browser);
		// zod itself agrees on valid or not (the plain words change messages, never verdicts).
		expect(ACTIONS[action].params.safeParse(params).success).toBe(Object.keys(verdict).length === 0);
	});

	it('refuses a changed target on the server only (the form shows it locked)', () => {
		const e = { action: 'pct_set', params: { vmid: '105', memory: 512 } };
		expect(paramErrors('pct_set', { vmid: '106', memory: 512 })).toEqual({});
		expect(editFieldErrors(e, { vmid: '106', memory: 512 })).toEqual({ vmid: expect.stringContaining('cannot be changed') });
		expect(editFieldErrors(e, { vmid: 105, memory: 1024 })).toEqual({});
	});

	it('the shared schemas run in a browser: no node imports or globals', () => {
		for (const f of ['action-params.ts', 'param-fields.ts', 'param-form.ts']) {
			const src = readFileSync(new URL(`../../src/lib/schemas/${f}`, import.meta.url), 'utf8');
			const imports = [...src.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
			expect(
				imports.filter((i) => i !== 'zod' && !i.startsWith('./') && !i.startsWith('../types/')),
				f
			).toEqual([]);
			expect(src, f).not.toMatch(/\b(Buffer|process|require)\b/);
		}
	});

	it('names each changed field, nested ones with dots', () => {
		const changes = diffParams(
			{ memory: 2048, features: { nesting: true }, argv: ['a'] },
			{ memory: 4096, features: { nesting: false, fuse: true }, argv: ['a', 'b'] }
		);
		expect(formatChanges(changes)).toBe('argv ["a"] → ["a","b"], features.fuse (unset) → true, features.nesting true → false, memory 2048 → 4096');
	});
});
