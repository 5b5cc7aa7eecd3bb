// More than a thousand malformed request_execution calls: every one is refused with an error the
// model can act on, and none of them writes an execution, a link or an execution event.
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { requestExecutionInput } from '../../src/lib/server/agent/tools/request-execution';
import { sql } from '../../src/lib/server/db/index';
import { requestExecution } from '../../src/lib/server/executions/request';
import { ACTION_NAMES, ACTIONS } from '../../src/lib/server/proxmox/actions';
import { DEBIAN, newOperator, newSession } from '../helpers/executions';
import { STRONG, useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const { pve } = useStage({ hosts: [STRONG] });

type Case = { name: string; input: unknown; mention: RegExp } | { name: string; json: string; mention: RegExp };

const VALID: Record<string, { target: string; params: Record<string, unknown> }> = {
	pct_status: { target: 'strong/100', params: {} },
	pct_config: { target: 'strong/100', params: {} },
	service_status: { target: 'strong/100', params: { unit: 'nginx.service' } },
	restart: { target: 'strong/100', params: {} },
	systemctl: { target: 'strong/100', params: { unit: 'nginx.service', op: 'restart' } },
	pct_exec: { target: 'strong/100', params: { argv: ['ls', '-la'] } },
	apt_upgrade: { target: 'strong/100', params: {} },
	pct_create: { target: 'strong', params: { hostname: 'typetype', template: DEBIAN } },
	pct_start: { target: 'strong/101', params: {} },
	pct_unlock: { target: 'strong/101', params: {} },
	pct_stop: { target: 'strong/100', params: {} },
	pct_destroy: { target: 'strong/101', params: {} },
	pveam_update: { target: 'strong', params: {} },
	pveam_download: { target: 'strong', params: { template: 'debian-12-standard_12.7-1_amd64.tar.zst' } },
	pct_set: { target: 'strong/101', params: { memory: 1024 } },
	pct_resize: { target: 'strong/101', params: { size: '+2G' } },
	pct_snapshot: { target: 'strong/101', params: { name: 'before' } },
	pct_rollback: { target: 'strong/101', params: { name: 'before' } },
	pct_delsnapshot: { target: 'strong/101', params: { name: 'before' } },
	vzdump: { target: 'strong/101', params: {} },
	pct_push: { target: 'strong/100', params: { path: '/etc/x.conf', content: 'x=1\n' } },
	ct_http_check: { target: 'strong/100', params: { port: 80 } },
	ct_service_active: { target: 'strong/100', params: { unit: 'nginx.service' } },
	qm_status: { target: 'strong', params: { vmid: 200 } },
	qm_start: { target: 'strong', params: { vmid: 200 } },
	qm_stop: { target: 'strong', params: { vmid: 200 } },
	vm_create: { target: 'strong', params: { name: 'k3s', image: '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2' } },
	vm_clone: { target: 'strong', params: { vmid: 200, name: 'copy' } },
	vm_template: { target: 'strong', params: { vmid: 200 } },
	vm_set: { target: 'strong', params: { vmid: 200, cores: 2 } },
	vm_resize: { target: 'strong', params: { vmid: 200, size: '+2G' } },
	vm_snapshot: { target: 'strong', params: { vmid: 200, name: 'before' } },
	vm_rollback: { target: 'strong', params: { vmid: 200, name: 'before' } },
	vm_delsnapshot: { target: 'strong', params: { vmid: 200, name: 'before' } },
	vm_shutdown: { target: 'strong', params: { vmid: 200 } },
	vm_reboot: { target: 'strong', params: { vmid: 200 } },
	vm_http_check: { target: 'strong', params: { vmid: 200, port: 80 } },
	vm_destroy: { target: 'strong', params: { vmid: 200 } },
	vm_unlock: { target: 'strong', params: { vmid: 200 } },
	vm_config: { target: 'strong', params: { vmid: 200 } },
	vm_guest: { target: 'strong', params: { vmid: 200 } },
	pct_migrate: { target: 'strong/100', params: { node: 'pve2' } },
	qm_migrate: { target: 'strong', params: { vmid: 200, node: 'pve2' } },
	storage_status: { target: 'strong', params: {} },
	backup_list: { target: 'strong', params: { storage: 'local', vmid: 101 } },
	backup_jobs: { target: 'strong', params: {} },
	tasks_failed: { target: 'strong', params: { limit: 5 } },
	task_log: { target: 'strong', params: { upid: 'UPID:strong:00001F40:0012D687:6752A1C0:vzdump:101:root@pam:' } },
	node_updates: { target: 'strong', params: {} },
	zfs_status: { target: 'strong', params: {} },
	disks_smart: { target: 'strong', params: {} },
	pve_services: { target: 'strong', params: {} },
	node_apt_refresh: { target: 'strong', params: {} },
	pve_service: { target: 'strong', params: { service: 'pveproxy' } },
	pve_cluster_service: { target: 'strong', params: { service: 'corosync' } },
	storage_content: { target: 'strong', params: { storage: 'local-lvm' } },
	journal_tail: { target: 'strong/100', params: { unit: 'nginx.service' } },
	backup_prune_preview: { target: 'strong', params: { storage: 'local', vmid: 101, keep: { last: 2 } } },
	backup_prune: {
		target: 'strong',
		params: { storage: 'local', vmid: 101, keep: { last: 2 }, remove: ['local:backup/vzdump-lxc-101-2026_12_01-02_00_00.tar.zst'] }
	},
	backup_delete: { target: 'strong', params: { storage: 'local', volid: 'local:backup/vzdump-lxc-101-2026_12_01-02_00_00.tar.zst' } },
	backup_job_retention: { target: 'strong', params: { id: 'backup-0c1a2b3c-4d5e', keep: { last: 3 } } }
};

const base = (action: string) => ({ target: VALID[action].target, action, params: { ...VALID[action].params }, reason: 'because' });
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Builds the corpus systematically: every field, every action, every kind of wrongness. */
function corpus(): Case[] {
	const cases: Case[] = [];
	const add = (name: string, input: unknown, mention: RegExp) => cases.push({ name, input, mention });

	// 1. Bad JSON text, as a model might emit it.
	const jsonTexts = [
		'',
		' ',
		'{',
		'}',
		'{"target":',
		'{"target":"strong"',
		'{"target":"strong",}',
		"{'target':'strong'}",
		'{target:"strong"}',
		'{"target":"strong" "action":"pct_start"}',
		'undefined',
		'NaN',
		'Infinity',
		'{"a":1}{"b":2}',
		'[',
		'{"params":{]}',
		'{"target":"strong","action":"pct_create","params":{"hostname":"x",}}',
		'\u0000',
		'{"target":"\u0000',
		'// comment',
		'<tool>',
		'{"target":"strong"}\n```',
		'```json\n{"target":"strong"}\n```',
		'{"reason":"x\\q"}',
		'{"reason":"\\ud800"}x',
		'nul',
		'tru',
		'01',
		'null',
		'true',
		'false',
		'0',
		'-1',
		'1e999',
		'"strong"',
		'""',
		'[]',
		'[{"target":"strong"}]',
		'["pct_start"]',
		'{}',
		'{"":""}'
	];
	for (const text of jsonTexts)
		cases.push({ name: `json ${JSON.stringify(text).slice(0, 40)}`, json: text, mention: /JSON|expected object|target|action|reason/i });
	// The raw text itself passed where an object belongs.
	for (const text of jsonTexts) add(`raw string ${JSON.stringify(text).slice(0, 40)}`, text, /expected object/);

	// 2. Wrong types for every top-level field, for every action.
	const wrong: unknown[] = [null, 0, 1, -1, 1.5, true, false, [], ['x'], {}, { x: 1 }];
	for (const action of ACTION_NAMES) {
		for (const field of ['target', 'action', 'reason'] as const) {
			for (const v of wrong) add(`${action}: ${field}=${JSON.stringify(v)}`, { ...base(action), [field]: v }, new RegExp(field));
		}
		for (const v of [null, 0, 1, true, 'strong', '', '{}', [], ['vmid', '100'], [{ vmid: '100' }]]) {
			add(`${action}: params=${JSON.stringify(v)}`, { ...base(action), params: v }, /params/);
		}
	}
	for (const field of ['target', 'action', 'reason'] as const) {
		const input: Record<string, unknown> = base('pct_start');
		delete input[field];
		add(`missing ${field}`, input, new RegExp(field));
	}
	add('everything missing', {}, /target/);
	add('empty target', { ...base('pct_start'), target: '' }, /target/);
	add('blank target', { ...base('pct_start'), target: '   \t ' }, /target/);
	add('empty action', { ...base('pct_start'), action: '' }, /action/);

	// 3. Extra top-level fields (the tool schema is strict).
	for (const extra of [
		'vmid',
		'command',
		'argv',
		'approve',
		'approved',
		'status',
		'hash',
		'force',
		'sessionId',
		'planId',
		'route',
		'operatorId',
		'skipApproval',
		'classification',
		'shell',
		'env',
		'sudo',
		'host',
		'node',
		'constructor',
		'prototype',
		'toString',
		'Target',
		'ACTION',
		'params ',
		' reason'
	]) {
		add(`extra top-level ${extra}`, { ...base('pct_start'), [extra]: true }, new RegExp(esc(extra)));
	}
	add(
		'extra top-level __proto__',
		JSON.parse(`{"target":"strong/101","action":"pct_start","params":{},"reason":"r","__proto__":{"approved":true}}`),
		/__proto__/
	);

	// 4. Unknown actions: the error lists the valid ones.
	const unknownActions = [
		'pct_exec2',
		'PCT_CREATE',
		'Pct_Start',
		'pct create',
		'pct-create',
		'pctcreate',
		'pct_create ',
		' pct_start',
		'pct_start\n',
		'pct_start;rm -rf /',
		'rm',
		'shell',
		'exec',
		'bash',
		'sh',
		'run',
		'ssh',
		'qm_create',
		'qm_destroy',
		'vzdump_all',
		'pvesh',
		'reboot_host',
		'apt_install',
		'systemctl_start',
		'__proto__',
		'constructor',
		'toString',
		'hasOwnProperty',
		'valueOf',
		'prototype',
		'isPrototypeOf',
		'$(id)',
		'`id`',
		"pct_start'",
		'*',
		'.*',
		'pct_%',
		'😀',
		'\u202epct_start',
		'pct_stat\u0301us',
		'x'.repeat(64)
	];
	for (const action of unknownActions) {
		add(
			`unknown action ${JSON.stringify(action).slice(0, 30)}`,
			{ ...base('pct_start'), action },
			/unknown action .*valid actions: pct_status, pct_config, .*pct_create/s
		);
	}

	// 5. Extra params fields (every params schema is strict), for every action.
	for (const action of ACTION_NAMES) {
		for (const extra of ['bogus', 'command', 'force', 'approved', 'skiplock', 'purge', 'vmid_', 'VMID', 'argv_', 'shell', 'node', 'onboot', 'password']) {
			if (extra in ACTIONS[action].params.shape) continue;
			add(
				`${action}: extra param ${extra}`,
				{ ...base(action), params: { ...VALID[action].params, [extra]: 'x' } },
				new RegExp(`Unrecognized key.*${esc(extra)}`)
			);
		}
		if (action !== 'pct_exec')
			add(`${action}: argv param`, { ...base(action), params: { ...VALID[action].params, argv: ['rm', '-rf', '/'] } }, /Unrecognized key.*argv/);
	}

	// 6. Out-of-range and ill-formed vmids, in params and in the target, for every action.
	const badVmids: unknown[] = [
		'0',
		'99',
		'1',
		'00100',
		'0101',
		'1000000000',
		'9999999999',
		'1e3',
		'1E3',
		' 101',
		'101 ',
		'101\n',
		'\t101',
		'101;rm',
		'101 && reboot',
		'$(id)',
		'-101',
		'+101',
		'0x65',
		'1_000',
		'10 1',
		'101.0',
		'１０１',
		'٢٣٤',
		'',
		'abc',
		'auto ',
		'null',
		0,
		99,
		-1,
		101.5,
		1e10,
		1000000000,
		true,
		null,
		[],
		['101'],
		{ vmid: 101 }
	];
	for (const action of ACTION_NAMES) {
		const inTarget = action !== 'pct_create';
		for (const v of badVmids) {
			// a ct action gets the vmid through params (target is the host); pct_create through its own vmid param
			const input = { ...base(action), target: 'strong', params: { ...VALID[action].params, vmid: v } };
			add(`${action}: params.vmid=${JSON.stringify(v)}`, input, /vmid/);
			if (inTarget && typeof v === 'string' && v.trim() === v)
				add(`${action}: target strong/${JSON.stringify(v)}`, { ...base(action), target: `strong/${v}` }, /target/);
		}
		if (action !== 'pct_create' && action !== 'vm_create')
			add(`${action}: vmid 'auto'`, { ...base(action), target: 'strong', params: { ...VALID[action].params, vmid: 'auto' } }, /vmid/);
	}

	// 7. Field-specific bad values.
	const create = (params: Record<string, unknown>) => ({ ...base('pct_create'), params: { ...VALID.pct_create.params, ...params } });
	const fieldCases: Array<[string, unknown[]]> = [
		[
			'hostname',
			[
				'',
				'UPPER',
				'Typetype',
				'-lead',
				'trail-',
				'a_b',
				'a.b',
				'a b',
				'x'.repeat(64),
				'host;rm',
				'$(id)',
				'`id`',
				'ünï',
				'a\nb',
				'a\0b',
				123,
				null,
				true,
				[],
				{}
			]
		],
		[
			'template',
			[
				'',
				'debian.tar.zst',
				'local:iso/debian.iso',
				'local:vztmpl/../../etc/passwd.tar.gz',
				'local:vztmpl/x.tar',
				'local:vztmpl/x.tar.bz2',
				'/var/lib/vz/template/cache/x.tar.zst',
				'local:vztmpl/x.tar.zst;rm -rf /',
				'local:vztmpl/$(id).tar.zst',
				'1local:vztmpl/x.tar.zst',
				'local:vztmpl/.hidden.tar.zst',
				'local:vztmpl/x y.tar.zst',
				'local:vztmpl/x.tar.zst\n',
				'http://evil/x.tar.zst',
				7,
				null,
				false
			]
		],
		['storage', ['', '1local', 'local lvm', 'local;rm', 'a'.repeat(65), '-local', 'local/lvm', 8, null]],
		['bridge', ['', 'eth0', 'vmbr', 'vmbr0;x', 'vmbr00000', 'VMBR0', ' vmbr0', 0, null]],
		[
			'ip',
			[
				'',
				'10.0.0.1',
				'10.0.0.256/24',
				'10.0.0.1/33',
				'dhcp6',
				'DHCP',
				'auto',
				'::1/128',
				'10.0.0.1/24,gw=1.2.3.4',
				'010.0.0.1/24',
				'1.2.3/24',
				' 10.0.0.1/24',
				'10.0.0.1/24 ',
				'dhcp;reboot',
				42,
				null
			]
		],
		['gateway', ['', '10.0.0.1/24', '256.1.1.1', 'gw', '1.2.3.4 ', '1.2.3', '1.2.3.4,ip=dhcp', 10, null]],
		['cores', [0, 129, 1.5, -1, '2', '', null, true, [], 1e9]],
		['memory', [0, 15, 1_048_577, 2048.5, '2048', '2G', null, -512]],
		['swap', [-1, 1_048_577, 0.5, 'x', null]],
		['disk', [0, 65_537, 8.5, '8', '8G', null, -8]],
		['unprivileged', ['yes', 1, 0, 'true', null, [], false]],
		['start', ['no', 0, 'false', null]],
		['features', ['nesting=1', 1, true, null, [], { nesting: 'yes' }, { nesting: 1 }, { bogus: true }, { nesting: true, mount: 'nfs' }, { keyctl: null }]]
	];
	for (const [field, values] of fieldCases)
		for (const v of values) add(`pct_create: ${field}=${JSON.stringify(v)?.slice(0, 40)}`, create({ [field]: v }), new RegExp(field));
	add('pct_create: no hostname', { ...base('pct_create'), params: { template: DEBIAN } }, /hostname/);
	add('pct_create: no template', { ...base('pct_create'), params: { hostname: 'x' } }, /template/);
	add('pct_create: empty params', { ...base('pct_create'), params: {} }, /hostname/);
	add('pct_create: nested features 1000 deep', create({ features: JSON.parse('{"nesting":'.repeat(1000) + 'true' + '}'.repeat(1000)) }), /features/);

	const badUnits: unknown[] = [
		'',
		'-nginx',
		'--now',
		'nginx service',
		'nginx;reboot',
		'$(id).service',
		'a/b.service',
		'x'.repeat(250),
		'nginx.service\n',
		'ünit',
		'*',
		'nginx.service extra',
		5,
		null,
		true,
		['nginx']
	];
	for (const action of ['service_status', 'systemctl']) {
		for (const v of badUnits)
			add(`${action}: unit=${JSON.stringify(v)?.slice(0, 40)}`, { ...base(action), params: { ...VALID[action].params, unit: v } }, /unit/);
		const noUnit = { ...VALID[action].params };
		delete noUnit.unit;
		add(`${action}: no unit`, { ...base(action), params: noUnit }, /unit/);
	}
	for (const v of ['kill', 'mask', 'START', '', 'restart;reboot', 'restart ', 'daemon-reload', 1, null, ['start']]) {
		add(`systemctl: op=${JSON.stringify(v)}`, { ...base('systemctl'), params: { unit: 'nginx.service', op: v } }, /op/);
	}
	add('systemctl: no op', { ...base('systemctl'), params: { unit: 'nginx.service' } }, /op/);
	// Node paths qm would read as root: only a storage volume or a file in a storage's ISO/import directory is an image.
	for (const v of [
		'/rpool/data/subvol-100-disk-0/root/host.raw',
		'/dev/disk/by-id/nvme-host.raw',
		'/var/lib/vz/template/iso/../../images/101/vm-101-disk-0.raw',
		'/var/lib/vz/images/101/vm-101-disk-0.qcow2',
		'/var/lib/vz/template/iso/sub/x.qcow2',
		'/mnt/pve/nas/images/101/vm-101-disk-0.raw',
		'local:iso/../x.img'
	])
		add(`vm_create: image=${v.slice(0, 40)}`, { ...base('vm_create'), params: { name: 'k3s', image: v } }, /image/);

	const badArgv: unknown[] = [
		[],
		'ls',
		'ls -la',
		[1],
		[null],
		[true],
		[{}],
		[[]],
		['ls', 5],
		['ls', null],
		['a\0b'],
		['ls', '\0'],
		['\0'],
		Array(65).fill('x'),
		['x'.repeat(4097)],
		['ls', 'y'.repeat(100_000)],
		null,
		{ 0: 'ls' },
		42,
		true
	];
	for (const v of badArgv) add(`pct_exec: argv=${JSON.stringify(v)?.slice(0, 40)}`, { ...base('pct_exec'), params: { argv: v } }, /argv/);
	add('pct_exec: no argv', { ...base('pct_exec'), params: {} }, /argv/);
	// Every word valid, but the quoted command cannot go through one SSH exec request.
	for (const [word, n] of [
		["'".repeat(4096), 63],
		["'".repeat(4096), 3],
		['x'.repeat(4096), 9],
		['😀'.repeat(2048), 5],
		['日'.repeat(4096), 3]
	] as const) {
		add(
			`pct_exec: ${n} words of ${Buffer.byteLength(word)} bytes`,
			{ ...base('pct_exec'), params: { argv: ['printf', ...Array(n).fill(word)] } },
			/the command would be \d+ bytes once quoted; at most 32768 .*argv/
		);
	}

	// 8. Well-typed but impossible targets (resolved against the hosts and the inventory).
	for (const action of ACTION_NAMES) {
		for (const target of [
			'nowhere',
			'lxc:nowhere/101',
			'ghost',
			'lxc:strong',
			'ct:',
			'host:',
			'strong/',
			'/101',
			'strong//101',
			'strong/101/extra',
			'lxc:strong/101;reboot',
			'$(hostname)',
			'*',
			'STRONG/abc'
		]) {
			add(`${action}: target ${target}`, { ...base(action), target }, /target|host/);
		}
	}
	for (const action of ACTION_NAMES.filter((a) => ACTIONS[a].scope === 'ct')) {
		add(`${action}: host target without vmid`, { ...base(action), target: 'strong', params: { ...VALID[action].params } }, /needs a container/);
		add(
			`${action}: target/params vmid mismatch`,
			{ ...base(action), target: 'strong/100', params: { ...VALID[action].params, vmid: '101' } },
			/params\.vmid is 101/
		);
	}
	add('pct_create on a container', { ...base('pct_create'), target: 'strong/100' }, /runs on a host: target must be a host/);
	add('pct_create on a container by name', { ...base('pct_create'), target: 'caddy' }, /target must be a host/);

	// 9. Huge strings.
	add('huge target', { ...base('pct_start'), target: 'a'.repeat(1_000_000) }, /target/);
	add('huge action', { ...base('pct_start'), action: 'pct_start'.repeat(100_000) }, /action/);
	add('huge reason', { ...base('pct_start'), reason: 'r'.repeat(100_000) }, /reason/);
	add('huge hostname', create({ hostname: 'a'.repeat(1_000_000) }), /hostname/);
	add('huge unit', { ...base('systemctl'), params: { unit: 'u'.repeat(1_000_000), op: 'start' } }, /unit/);
	add('huge extra key', { ...base('pct_start'), params: { ['k'.repeat(100_000)]: 1 } }, /Unrecognized key/);
	add(
		'10,000 extra params',
		{ ...base('pct_start'), params: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i])) },
		/Unrecognized keys: "k0", "k1"/
	);
	return cases;
}

/** What the model would see: the schema's issues, with their paths. */
function describeIssues(e: z.ZodError): string {
	return e.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}

let sessionId: string;

beforeAll(async () => {
	sessionId = await newSession(await newOperator());
});

describe('malformed request_execution calls', () => {
	it('the valid baselines are valid (so each case fails for its one defect)', async () => {
		for (const action of ACTION_NAMES) {
			expect(requestExecutionInput.safeParse(base(action)).success, action).toBe(true);
			expect(ACTIONS[action].params.safeParse(VALID[action].params).success, action).toBe(true);
		}
	});

	it(
		'rejects every one of 1,000+ malformed calls with a readable error and writes nothing',
		async () => {
			const cases = corpus();
			expect(cases.length).toBeGreaterThanOrEqual(1000);
			const argvBefore = (await pve.argvLog()).length;
			const bad: string[] = [];
			let bySchema = 0;
			let byJson = 0;
			let byRequest = 0;
			for (const c of cases) {
				let input: unknown;
				let message: string | null = null;
				if ('json' in c) {
					try {
						input = JSON.parse(c.json);
					} catch (e) {
						message = `the tool arguments are not valid JSON: ${(e as Error).message}`;
						byJson++;
					}
				} else input = c.input;

				if (message === null) {
					const parsed = requestExecutionInput.safeParse(input);
					if (!parsed.success) {
						message = describeIssues(parsed.error);
						bySchema++;
					} else {
						const r = await requestExecution(sessionId, parsed.data);
						if (!('error' in r)) {
							bad.push(`${c.name}: ACCEPTED as ${r.execution.status} (${r.execution.commandPreview})`);
							continue;
						}
						expect(typeof r.error).toBe('string');
						message = r.hint ? `${r.error} (${r.hint})` : r.error;
						byRequest++;
					}
				}
				if (!message || message.length < 10) bad.push(`${c.name}: unreadable error ${JSON.stringify(message)}`);
				else if (!c.mention.test(message)) bad.push(`${c.name}: error does not mention ${c.mention}: ${message.slice(0, 300)}`);
				// Bounded, whatever the input: the error goes back into the model's context.
				else if (message.length > 4000) bad.push(`${c.name}: error is ${message.length} characters`);
			}
			expect(bad.slice(0, 20), `${bad.length} cases`).toEqual([]);
			// All three layers did real work.
			expect(byJson).toBeGreaterThan(20);
			expect(bySchema).toBeGreaterThan(200);
			expect(byRequest).toBeGreaterThan(500);

			const count = async (q: Promise<{ n: number }[]>) => (await q)[0].n;
			expect(await count(sql()`select count(*)::int as n from executions`)).toBe(0);
			expect(await count(sql()`select count(*)::int as n from execution_sessions`)).toBe(0);
			expect(await count(sql()`select count(*)::int as n from approvals`)).toBe(0);
			expect(await count(sql()`select count(*)::int as n from events where type like 'execution%'`)).toBe(0);
			expect(await count(sql()`select count(*)::int as n from events where type not in ('session.updated', 'inventory.synced')`)).toBe(0);
			expect(await count(sql()`select count(*)::int as n from graphile_worker._private_jobs`)).toBe(0);
			// Nothing reached the host either (not even a vmid lookup).
			expect((await pve.argvLog()).slice(argvBefore)).toEqual([]);
		},
		scaled(180_000)
	);
});
