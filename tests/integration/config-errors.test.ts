import { spawnTsSync } from '../helpers/spawn';
import { describe, expect, it } from 'vitest';
import { scaled } from '../helpers/time';

describe('a wrong setting stops the process', () => {
	it('with exit 1 and one line naming the variable', () => {
		const r = spawnTsSync('scripts/worker.ts', [], {
			env: { ...process.env, NOMOS_PG_PORT: 'eighty', DATABASE_URL: '' },
			timeout: scaled(30_000)
		});
		expect(r.status).toBe(1);
		const lines = r.stderr.trim().split('\n');
		expect(lines).toHaveLength(1);
		expect(lines[0]).toMatch(/^Invalid configuration: NOMOS_PG_PORT /);
	});
});
