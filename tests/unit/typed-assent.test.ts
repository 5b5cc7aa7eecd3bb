import { describe, expect, it } from 'vitest';
import { resolveTypedAssent, type AssentCandidate } from '../../src/lib/server/executions/typed-assent';
import { approveLabel } from '../../src/lib/execution-labels';

const c = (id: string, action: string, target: string, extra: Partial<AssentCandidate> = {}): AssentCandidate => ({
	id,
	action,
	target,
	classification: action === 'pct_destroy' ? 'destructive' : 'config_mutation',
	params: {},
	...extra
});
const start102 = c('a', 'pct_start', 'lxc:strong/102', { name: 'backup' });
const start103 = c('b', 'pct_start', 'lxc:strong/103', { name: 'media' });
const restartCaddy = c('r', 'systemctl', 'lxc:strong/100', { name: 'caddy', params: { unit: 'caddy.service', verb: 'restart' } });
const destroy100 = c('d', 'pct_destroy', 'lxc:strong/100', { name: 'caddy' });
const ids = (r: ReturnType<typeof resolveTypedAssent>) =>
	r.kind === 'approve' ? { approve: r.approve.map((x) => x.id), refused: r.refused.map((x) => x.id) } : r.kind;

describe('typed assent', () => {
	it('approves the one candidate on a plain yes', () => {
		expect(ids(resolveTypedAssent('go ahead', [start102]))).toEqual({ approve: ['a'], refused: [] });
	});

	it('approves nothing when there is nothing on screen', () => {
		expect(resolveTypedAssent('yes', []).kind).toBe('none');
	});

	it('never approves a destructive execution, even when it is the only one', () => {
		expect(ids(resolveTypedAssent('yes', [destroy100]))).toEqual({ approve: [], refused: ['d'] });
		expect(ids(resolveTypedAssent('yes, destroy 100', [destroy100, start102]))).toEqual({ approve: [], refused: ['d'] });
		// Issue #43: irreversible is not "destructive" by classification, but typing never approves it either (needsPerson).
		const resize102: AssentCandidate = {
			id: 'z',
			action: 'pct_resize',
			target: 'lxc:strong/102',
			classification: 'config_mutation',
			params: { disk: 'rootfs', size: '+1G' }
		};
		expect(ids(resolveTypedAssent('yes, resize 102', [resize102]))).toEqual({ approve: [], refused: ['z'] });
		expect(ids(resolveTypedAssent('go ahead', [resize102]))).toEqual({ approve: [], refused: ['z'] });
	});

	it('with several candidates a plain yes is ambiguous', () => {
		expect(resolveTypedAssent('yes', [start102, start103]).kind).toBe('ambiguous');
		expect(resolveTypedAssent('yes', [start102, destroy100]).kind).toBe('ambiguous');
		expect(resolveTypedAssent('go ahead and start it', [start102, start103]).kind).toBe('ambiguous');
	});

	it.each([
		['yes, start 102', ['a']],
		['go ahead with 103', ['b']],
		['yes, start backup', ['a']],
		['approve 102 and 103', ['a', 'b']],
		['yes, both', ['a', 'b']],
		['yes, start lxc:strong/103', ['b']]
	])('"%s" approves what it names', (text, want) => {
		expect(ids(resolveTypedAssent(text, [start102, start103]))).toEqual({ approve: want, refused: [] });
	});

	it('names by service and container name', () => {
		expect(ids(resolveTypedAssent('yes, restart caddy', [restartCaddy, start102]))).toEqual({ approve: ['r'], refused: [] });
	});

	it.each(['yes, start 104', 'yes but only 102', 'start 102', 'yes, start 102 and destroy the rest', 'no', 'yes?', 'ok, start the mail server'])(
		'"%s" approves nothing',
		(text) => expect(resolveTypedAssent(text, [start102, start103]).kind).not.toBe('approve')
	);

	it('labels a destructive approve button with its verb and target', () => {
		expect(approveLabel({ action: 'pct_destroy', target: 'lxc:strong/100', classification: 'destructive' })).toBe('Destroy CT 100');
		expect(approveLabel({ action: 'pct_start', target: 'lxc:strong/100', classification: 'config_mutation' })).toBe('Approve');
	});
});
