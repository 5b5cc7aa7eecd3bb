import { describe, expect, it } from 'vitest';
import { isClearAssent } from '../../src/lib/server/executions/assent';

describe('chat assent', () => {
	it.each(['go ahead', 'Go ahead!', 'yes, run it', 'approve', 'approved', 'yes', 'ok', 'do it', 'proceed', 'lgtm', 'yes please', 'sure, go ahead', 'run it'])(
		'"%s" approves',
		(t) => expect(isClearAssent(t)).toBe(true)
	);
	it.each([
		'go ahead?',
		'yes but with 2 GB',
		"don't",
		'no',
		'not yet',
		'wait',
		'why?',
		'yes, but change the hostname',
		'approve only the first one',
		'go ahead and delete everything else too, also add a backup job and tell me what you think about the network',
		'',
		'maybe',
		'hold on',
		'cancel it',
		'what does it do',
		'ok later'
	])('"%s" approves nothing', (t) => expect(isClearAssent(t)).toBe(false));
});
