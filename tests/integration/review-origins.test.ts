// Issue #31: the review overview counts sessions by what started them and, for alert
// investigations, how long until the findings and until an approved fix.
import { describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { createSession } from '../../src/lib/server/db/queries/sessions';
import { reviewOverview } from '../../src/lib/server/review/overview';
import { hashHookSecret } from '../../src/lib/server/watches/secret';
import { useTestDatabase } from '../helpers/db';
import { newOperator } from '../helpers/executions';

useTestDatabase();

async function session(opts: { startedByHook?: string; startedBySchedule?: string } = {}): Promise<string> {
	const id = await sql().begin((tx) => createSession(tx, null, 'x', opts));
	await sql()`update chat_sessions set created_at = now() - interval '1 hour' where id = ${id}`;
	return id;
}

/** An agent reply in a session `afterS` seconds after it opened (complete; with text or only a tool call). */
async function reply(sessionId: string, afterS: number, text: string | null) {
	const parts = text ? [{ type: 'text', text }] : [{ type: 'tool-list_lxcs', toolCallId: 'c', state: 'output-available', input: {}, output: [] }];
	const m = await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts: parts as never, status: 'complete', origin: 'alert' }));
	await sql()`update messages set updated_at = (select created_at from chat_sessions where id = ${sessionId}) + make_interval(secs => ${afterS}) where id = ${m.id}`;
}

/** An execution of the session approved `afterS` seconds after it opened. */
async function approvedFix(sessionId: string, afterS: number, operatorId: string) {
	const [e] = await sql()<{ id: string }[]>`
		insert into executions (requested_by_session, host_name, target, action, params, classification, hash, command_preview, reason, status, expires_at)
		values (${sessionId}, 'strong', 'lxc:strong/105', 'restart', '{}'::jsonb, 'config_mutation', ${'h-' + Math.random()}, 'pct reboot 105', 'fix', 'approved', now() + interval '1 hour')
		returning id`;
	await sql()`insert into approvals (execution_id, hash, decision, route, decided_by, decided_at)
		values (${e.id}, 'h', 'approved', 'button', ${operatorId}, (select created_at from chat_sessions where id = ${sessionId}) + make_interval(secs => ${afterS}))`;
}

describe('the review overview by origin', () => {
	it('counts operator, alert and schedule sessions, and the median time from an alert to its findings and to an approved fix', async () => {
		const operatorId = await newOperator();
		const [hook] = await sql()<
			{ id: string }[]
		>`insert into alert_hooks (name, kind, secret_hash) values ('pve', 'generic', ${hashHookSecret('s')}) returning id`;
		const [schedule] = await sql()<{ id: string }[]>`insert into schedules (name, cron, prompt) values ('nightly', '0 3 * * *', 'p') returning id`;
		await session();
		await session();
		await session({ startedBySchedule: schedule.id });
		const a1 = await session({ startedByHook: hook.id });
		const a2 = await session({ startedByHook: hook.id });
		await session({ startedByHook: hook.id }); // nothing yet
		// a1: a tool call first (no findings yet), findings at 40 s, a fix approved at 300 s.
		await reply(a1, 10, null);
		await reply(a1, 40, 'Findings: the disk is full.');
		await approvedFix(a1, 300, operatorId);
		// a2: findings at 60 s, no fix.
		await reply(a2, 60, 'Findings: nothing wrong.');

		const { origins } = await reviewOverview();
		expect(origins).toEqual({ operator: 2, alert: 3, schedule: 1, alerts: { withFindings: 2, findingsMedianS: 50, withFix: 1, fixMedianS: 300 } });
		// the same from every message's parts (while the stored facts are rebuilt)
		expect((await reviewOverview({}, sql(), { source: 'parts' })).origins).toEqual(origins);
		// The date range applies: none of them were made tomorrow.
		const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
		expect((await reviewOverview({ from: tomorrow })).origins).toMatchObject({ operator: 0, alert: 0, schedule: 0 });
	});
});
