import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { reviewSession, reviewSessionMarkdown } from '../../src/lib/server/review';
import { useTestDatabase } from '../helpers/db';
import { insertSilentSessionFixture } from '../helpers/review-fixture';

useTestDatabase();

describe('the session review tells "not run" from "failed"', () => {
	it('counts an execution refused before it ran as not run, in the totals, the silent failure and the export', async () => {
		const id = await insertSilentSessionFixture(sql(), { title: 'not run' });
		await sql()`update executions set error = 'not run: CT 102 is running, expected stopped', steps = '[]'::jsonb where requested_by_session = ${id}`;
		const r = (await reviewSession(id))!;
		expect(r.totals.executions).toMatchObject({ failed: 0, notRun: 1 });
		const silent = r.findings.find((f) => f.kind === 'silent_failure')!;
		expect(silent.evidence.detail.join('\n')).toMatch(/\(pct_start on lxc:strong\/102\) was not run: CT 102 is running, expected stopped — /);
		expect(silent.evidence.detail.join('\n')).not.toMatch(/failed: not run/);
		expect(silent.title).toBe('Silent failure: 1 execution not run never reported');
		expect(await reviewSessionMarkdown(id)).toContain('0 failed, 1 not run, ');
	});

	it('keeps "failed" when a step of the approved command ran', async () => {
		const id = await insertSilentSessionFixture(sql(), { title: 'ran' });
		const steps = JSON.stringify([{ index: 0, label: 'pct start', command: 'pct start 102', startedAt: new Date().toISOString(), exitCode: 1 }]);
		await sql()`update executions set error = 'not run: odd', steps = ${steps}::text::jsonb where requested_by_session = ${id}`;
		const r = (await reviewSession(id))!;
		expect(r.totals.executions).toMatchObject({ failed: 1, notRun: 0 });
		const silent = r.findings.find((f) => f.kind === 'silent_failure')!;
		expect(silent.evidence.detail.join('\n')).toContain(') failed: not run: odd — ');
		expect(silent.title).toBe('Silent failure: 1 failed execution never reported');
	});
});
