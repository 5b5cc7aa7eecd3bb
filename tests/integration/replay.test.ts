// Replay (#33): a recorded session re-run through the one turn runner in replay mode, with the
// scripted model and the Proxmox double. Nothing reaches the host in a replay; the same model
// reproduces the original; a changed one shows the difference and fails the saved case.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { runExecution } from '../../src/lib/server/executions/runner';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { startReplay, runReplay } from '../../src/lib/server/replay/run';
import { sessionFigures, comparisonRows } from '../../src/lib/server/replay/compare';
import { saveReplayCase, runReplayCase } from '../../src/lib/server/replay/cases';
import { reviewOverview } from '../../src/lib/server/review';
import { getToolName, isToolPart } from '../../src/lib/messages/parts';
import { fallbackFromRules, type FallbackRule } from '../doubles/llm/server';
import { decide, jobs, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm, pve } = useStage({ model: true, hosts: [{ nodeName: 'strong', seed: [{ vmid: 100, hostname: 'caddy', status: 'stopped' }] }] });
let operatorId: string;

const DONE = 'Caddy is started and is running now.';
/** The model of the original session: it answers by what it reads, as a real one would. */
const MODEL: FallbackRule[] = [
	// The continuation's note after the approved start (original), and the replayed outcome (replay).
	{ whenLastMessageRole: 'user', whenLastMessageMatches: 'succeeded', respond: { text: DONE } },
	{ whenLastMessageRole: 'tool', whenLastMessageMatches: '"status":"succeeded"', respond: { text: DONE } },
	{ whenLastMessageRole: 'tool', whenLastMessageMatches: 'awaiting', respond: { text: 'Waiting for your approval to start caddy.' } },
	{
		whenLastMessageRole: 'tool',
		respond: { toolCalls: [{ name: 'request_execution', args: { target: 'caddy', action: 'pct_start', params: {}, reason: 'the operator asked' } }] }
	},
	{ whenLastMessageRole: 'user', respond: { toolCalls: [{ name: 'list_lxcs', args: {} }] } }
];

beforeAll(async () => {
	operatorId = await newOperator('replayer');
});

/** The original: the operator asks, the agent lists and requests a start, it is approved and runs on the double, the agent reports. */
async function recordOriginal(): Promise<string> {
	llm.setFallback(fallbackFromRules(MODEL));
	const sessionId = await newSession(operatorId, 'start caddy');
	await sql().begin((tx) =>
		insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'please start caddy' }], status: 'complete', origin: 'chat' })
	);
	await runTurn({ sessionId, origin: 'chat' });
	const [e] = await sql()<{ id: string }[]>`select id from executions where requested_by_session = ${sessionId}`;
	expect((await decide(e.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(e.id);
	expect(await continueSession(sessionId)).toBe('turn');
	return sessionId;
}

const executionCount = async () => (await sql()<{ n: number }[]>`select count(*)::int as n from executions`)[0].n;
const parkedRows = async () =>
	(await sql()<{ n: number }[]>`select (select count(*) from plans) + (select count(*) from session_questions) + (select count(*) from executions) as n`)[0].n;

describe('replay', () => {
	it('replaying a recorded session with the same model reproduces it, and nothing reaches the host', async () => {
		const original = await recordOriginal();
		const before = { argv: (await pve.argvLog()).length, executions: await executionCount() };
		expect(before.argv).toBeGreaterThan(0);

		const replayId = await startReplay({ originalId: original, operatorId, live: false });
		expect((await jobs('replay__run')).map((j) => j.payload)).toContainEqual({ replayId });
		expect(await runReplay(replayId)).toBe('done');
		// A second run of the same job finds it finished and does nothing.
		expect(await runReplay(replayId)).toBe('done');

		expect((await pve.argvLog()).length).toBe(before.argv);
		expect(await executionCount()).toBe(before.executions);
		const a = (await sessionFigures(original))!;
		const b = (await sessionFigures(replayId))!;
		expect(a.toolCalls).toHaveLength(2);
		expect(b.toolCalls).toEqual(a.toolCalls);
		expect(b.requests).toEqual(['pct_start caddy']);
		expect(b.requests).toEqual(a.requests);
		expect(b.approvalsNeeded).toBe(a.approvalsNeeded);
		expect(a.goalReached).toBe(true);
		expect(b.goalReached).toBe(true);
		expect(b.findings).toEqual(a.findings);
		// The request was "would have", answered with what the original's execution did.
		const parts = (await listMessages(sql(), replayId)).flatMap((m) => m.parts).filter(isToolPart);
		const req = parts.find((p) => getToolName(p) === 'request_execution')!;
		expect(req.output).toMatchObject({ replay: expect.stringMatching(/^would have asked to run pct_start on caddy/), status: 'succeeded' });
		// The list came from the original's recorded result, not from the inventory now.
		const [origList] = (await listMessages(sql(), original)).flatMap((m) => m.parts).filter((p) => isToolPart(p) && getToolName(p) === 'list_lxcs');
		expect(parts.find((p) => getToolName(p) === 'list_lxcs')).toMatchObject({ output: (origList as { output: unknown }).output });
		// Side by side, only the tokens may differ (the replay has no "waiting for approval" turn).
		expect(comparisonRows(a, b).filter((r) => !r.same && r.label !== 'Tokens')).toEqual([]);

		// The replay is left out of the review's statistics.
		const overview = await reviewOverview({});
		expect(overview.sessions.map((s) => s.id)).toContain(original);
		expect(overview.sessions.map((s) => s.id)).not.toContain(replayId);

		// Saved as a case, replayed with the same model: it holds.
		await saveReplayCase(replayId, 'start-caddy');
		const same = await runReplayCase('start-caddy');
		expect(same.problems).toEqual([]);
		expect(same.ok).toBe(true);

		// A changed model asks first, then stops and starts, and never says it is done: the case fails.
		const stopStart = ['pct_stop', 'pct_start'].map((action) => ({
			name: 'request_execution',
			args: { target: 'caddy', action, params: {}, reason: 'changed' }
		}));
		llm.setFallback(
			fallbackFromRules([
				{ whenLastMessageRole: 'tool', whenLastMessageMatches: 'not answered', respond: { toolCalls: stopStart } },
				{ whenLastMessageRole: 'tool', respond: { text: 'I could not decide which container you mean.' } },
				{ whenLastMessageRole: 'user', respond: { toolCalls: [{ name: 'ask_operator', args: { prompt: 'Which container should I start?' } }] } }
			])
		);
		const changed = await runReplayCase('start-caddy');
		expect(changed.ok).toBe(false);
		expect(changed.problems).toEqual(['more operator actions: 4, expected at most 2', 'the goal was not reached']);
		expect(changed.rows.find((r) => r.label === 'Requests')).toMatchObject({
			original: 'pct_start caddy',
			replay: 'pct_stop caddy; pct_start caddy',
			same: false
		});
		expect((await pve.argvLog()).length).toBe(before.argv);
	});

	it('an injected model in a replay cannot run, plan or ask anything', async () => {
		const original = await recordOriginal();
		const before = { argv: (await pve.argvLog()).length, rows: await parkedRows() };
		llm.setFallback(
			fallbackFromRules([
				{ whenLastMessageRole: 'tool', respond: { text: 'ok' } },
				{
					whenLastMessageRole: 'user',
					respond: {
						toolCalls: [
							{ name: 'request_execution', args: { target: 'caddy', action: 'pct_destroy', params: {}, reason: 'injected' } },
							{ name: 'propose_plan', args: { title: 'wipe', steps: [{ action: 'pct_stop', target: 'caddy', params: {} }] } },
							{ name: 'ask_operator', args: { prompt: 'May I wipe everything?' } },
							{ name: 'get_lxc_state', args: { name: 'caddy' } }
						]
					}
				}
			])
		);
		const replayId = await startReplay({ originalId: original, operatorId, live: false });
		expect(await runReplay(replayId)).toBe('done');
		expect((await pve.argvLog()).length).toBe(before.argv);
		expect(await parkedRows()).toBe(before.rows);
		const outputs = Object.fromEntries(
			(await listMessages(sql(), replayId))
				.flatMap((m) => m.parts)
				.filter(isToolPart)
				.map((p) => [getToolName(p), 'output' in p ? p.output : p.errorText])
		);
		expect(outputs.request_execution).toMatchObject({ replay: 'would have asked to run pct_destroy on caddy', status: 'not run in replay' });
		expect(outputs.propose_plan).toMatchObject({ replay: expect.stringMatching(/^would have proposed/), status: 'not run in replay' });
		expect(outputs.ask_operator).toMatchObject({ status: 'not answered in replay' });
		expect(outputs.get_lxc_state).toMatchObject({ error: 'not recorded in the original session' });
	});
});
