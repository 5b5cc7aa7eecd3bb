// The browser's check of edited params agrees with the actions' zod schemas on what is wrong.
import { describe, expect, it } from 'vitest';
import { diffParams, formatChanges, validate } from '../../src/lib/schemas/param-form';
import { describeParams, fieldErrorsOf } from '../../src/lib/server/proxmox/params-schema';
import { ACTIONS } from '../../src/lib/server/proxmox/actions';

const TEMPLATE = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';

describe('param form', () => {
	const cases: [keyof typeof ACTIONS, Record<string, unknown>][] = [
		['pct_create', { hostname: 'ok', template: TEMPLATE, memory: 4096 }],
		['pct_create', { hostname: 'Not OK', template: 'nope', memory: 4.5, cores: 0, features: { nesting: 'yes' } }],
		['pct_create', { hostname: 'ok', template: TEMPLATE, extra: 1 }],
		['systemctl', { unit: 'nginx.service', op: 'reload' }],
		['systemctl', { unit: 'nginx service', op: 'explode' }],
		['pct_exec', { argv: ['echo', 'a b', 'x'.repeat(5000)] }],
		['pct_exec', { argv: [] }],
		['pct_exec', { argv: ['sh', '-c', 'echo "$HOME"\nls'] }]
	];
	it.each(cases)('%s %j: same failing fields as zod', (action, params) => {
		const r = ACTIONS[action].params.safeParse(params);
		const zodFields = new Set(Object.keys(r.success ? {} : fieldErrorsOf(r.error)));
		expect(new Set(Object.keys(validate(describeParams(action), params)))).toEqual(zodFields);
	});

	it('uses the schema’s own message for a pattern', () => {
		expect(validate(describeParams('pct_create'), { hostname: 'ok', template: TEMPLATE, bridge: 'eth0' })).toEqual({ bridge: 'a bridge such as vmbr0' });
	});

	it('names each changed field, nested ones with dots', () => {
		const changes = diffParams({ memory: 2048, features: { nesting: true }, argv: ['a'] }, { memory: 4096, features: { nesting: false, fuse: true }, argv: ['a', 'b'] });
		expect(formatChanges(changes)).toBe('argv ["a"] → ["a","b"], features.fuse (unset) → true, features.nesting true → false, memory 2048 → 4096');
	});
});
