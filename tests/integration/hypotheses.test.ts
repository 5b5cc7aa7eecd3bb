// Hypotheses (#33, feature row 43): with the scripted model and the SSH Proxmox double, the agent
// presents three hypotheses citing earlier tool results, runs two checks read-only (no approval
// is asked for), marks one confirmed and one refuted, and the session's stored parts fold into
// that state. A check that would change something, evidence that is not a tool call of the
// session, and a verdict whose evidence never ran the check are refused, and nothing runs.
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { listMessages } from '../../src/lib/server/conversation/messages';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { hypothesisSets } from '../../src/lib/messages/hypotheses';
import { callError, getToolName, isToolPart } from '../../src/lib/messages/parts';
import { reviewSession, reviewSessionMarkdown } from '../../src/lib/server/review';
import { sendOperatorMessage } from '../../src/lib/server/chat/send';
import { freshSession, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const { llm } = useStage({ model: true, sync: false, hosts: [{ nodeName: 'strong', seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }] }] });
let operatorId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
});

async function ask(text: string): Promise<string> {
	const sessionId = await newSession(operatorId, 'why');
	await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' }));
	return sessionId;
}

const CT = 'lxc:strong/100';
const three = [
	{ id: 'h1', statement: 'The container is stopped', evidence: ['c-list'], check: { action: 'pct_status', target: CT }, confidence: 'high' },
	{
		id: 'h2',
		statement: 'The caddy unit failed',
		evidence: ['c-state'],
		check: { action: 'service_status', target: CT, params: { unit: 'caddy' } },
		confidence: 'medium'
	},
	{
		id: 'h3',
		statement: 'The container ran out of memory',
		evidence: ['c-list', 'c-state'],
		check: { action: 'get_lxc_state', params: { name: 'caddy' } },
		confidence: 'low'
	}
];
const look = {
	toolCalls: [
		{ id: 'c-list', name: 'list_lxcs', args: {} },
		{ id: 'c-state', name: 'get_lxc_state', args: { name: 'caddy' } }
	]
};

/** The results of a session's calls of one tool, in order. */
async function results(sessionId: string, tool: string): Promise<unknown[]> {
	const parts = (await listMessages(sql(), sessionId)).flatMap((m) => m.parts);
	return parts
		.filter((p) => isToolPart(p) && getToolName(p) === tool)
		.map((p) => (isToolPart(p) ? (callError(p) ?? (p.state === 'output-available' ? p.output : p.state)) : null));
}

async function executionsNow(): Promise<Array<{ action: string; status: string; classification: string }>> {
	return sql()<{ action: string; status: string; classification: string }[]>`select action, status, classification from executions order by created_at`;
}

describe('hypotheses', () => {
	it('presents three, runs two checks read-only without an approval, marks one confirmed and one refuted; the parts hold it', async () => {
		const sessionId = await ask('caddy does not answer, why?');
		const before = (await executionsNow()).length;
		llm.push(
			look,
			{ toolCalls: [{ id: 'c-hyp', name: 'present_hypotheses', args: { hypotheses: three } }] },
			{
				toolCalls: [
					{ id: 'c-chk1', name: 'request_execution', args: { target: CT, action: 'pct_status', params: {}, reason: 'check h1' } },
					{ id: 'c-chk2', name: 'request_execution', args: { target: CT, action: 'service_status', params: { unit: 'caddy' }, reason: 'check h2' } }
				]
			},
			{
				toolCalls: [
					{ id: 'c-m1', name: 'mark_hypothesis', args: { id: 'h1', verdict: 'refuted', result: 'pct status says running', evidence: ['c-chk1'] } },
					{ id: 'c-m2', name: 'mark_hypothesis', args: { id: 'h2', verdict: 'confirmed', result: 'the unit is not active', evidence: ['c-chk2'] } }
				]
			},
			{ text: 'The caddy unit is the cause; shall I restart it?' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');

		// The checks ran as read-only executions: nothing waits for an approval.
		const ran = (await executionsNow()).slice(before);
		expect(ran.map((e) => e.action).sort()).toEqual(['pct_status', 'service_status']);
		expect(ran.every((e) => e.classification === 'read_only' && e.status !== 'awaiting_approval')).toBe(true);
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from executions where status = 'awaiting_approval'`;
		expect(n).toBe(0);

		const [presented] = await results(sessionId, 'present_hypotheses');
		expect(presented).toMatchObject({ setId: 'c-hyp', shown: ['h1', 'h2', 'h3'] });
		const sets = hypothesisSets(await listMessages(sql(), sessionId));
		expect(sets).toHaveLength(1);
		expect(sets[0].hypotheses.map((h) => [h.id, h.verdict, h.result ?? null, h.verdictEvidence ?? null])).toEqual([
			['h1', 'refuted', 'pct status says running', ['c-chk1']],
			['h2', 'confirmed', 'the unit is not active', ['c-chk2']],
			['h3', 'open', null, null]
		]);

		// The tools are offered in every request, the first included (the tool list never changes: prefix caches, #46).
		const offered = llm.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => (r.body!.tools ?? []).map((t) => t.function.name));
		for (const names of offered) expect(names.slice(-2)).toEqual(['present_hypotheses', 'mark_hypothesis']);

		// "Pursue this": the operator's message names the stored hypothesis (whatever text came with it) and keeps the pick.
		const pick = (hypothesisId: string) =>
			sendOperatorMessage({
				sessionId,
				text: 'whatever the page said',
				shownExecutionIds: [],
				operatorId,
				viewer: { id: operatorId, role: 'admin' },
				credential: freshSession(),
				token: null,
				pursue: { setId: 'c-hyp', hypothesisId }
			});
		await expect(pick('h9')).rejects.toThrow('That hypothesis is not in this chat.');
		await pick('h2');
		const sent = (await listMessages(sql(), sessionId)).at(-1)!;
		expect(sent.role).toBe('user');
		expect(sent.parts).toEqual([
			{ type: 'text', text: 'Pursue hypothesis h2: The caddy unit failed' },
			{ type: 'data-pursue', data: { setId: 'c-hyp', hypothesisId: 'h2' } }
		]);
		expect(hypothesisSets(await listMessages(sql(), sessionId))[0].pursued).toBe('h2');

		// The admin review shows them, and so does its Markdown export.
		const review = await reviewSession(sessionId);
		expect(review!.hypotheses.map((s) => [s.index, s.pursued, s.hypotheses.map((h) => h.verdict)])).toEqual([[1, 'h2', ['refuted', 'confirmed', 'open']]]);
		const md = (await reviewSessionMarkdown(sessionId))!;
		expect(md).toContain('## Hypotheses');
		expect(md).toContain(
			'- `h2` **confirmed** (medium confidence): The caddy unit failed; evidence c-state; check `service_status lxc:strong/100` — the unit is not active (c-chk2) — **pursued by the operator**'
		);
	});

	it('refuses a mutation as a check, evidence that is no tool call of the session, and a verdict whose evidence never ran the check', async () => {
		const sessionId = await ask('caddy is down');
		const other = await ask('another chat');
		llm.push({ toolCalls: [{ id: 'o-list', name: 'list_lxcs', args: {} }] }, { text: 'ok' });
		await runTurn({ sessionId: other, origin: 'chat' });
		llm.reset();
		const before = (await executionsNow()).length;
		const stop = { ...three[0], check: { action: 'pct_stop', target: CT } };
		const exec = { ...three[1], check: { action: 'pct_exec', target: CT, params: { argv: ['reboot'] } } };
		llm.push(
			look,
			{ toolCalls: [{ id: 'r1', name: 'present_hypotheses', args: { hypotheses: [stop, three[1]] } }] },
			{ toolCalls: [{ id: 'r2', name: 'present_hypotheses', args: { hypotheses: [three[0], exec] } }] },
			{ toolCalls: [{ id: 'r3', name: 'present_hypotheses', args: { hypotheses: [three[0], { ...three[1], evidence: ['o-list'] }] } }] },
			{
				toolCalls: [
					{
						id: 'r4',
						name: 'present_hypotheses',
						args: { hypotheses: [three[0], { ...three[1], check: { action: 'http_get', params: { url: 'http://x' } } }] }
					}
				]
			},
			{ toolCalls: [{ id: 'ok', name: 'present_hypotheses', args: { hypotheses: [three[0], three[1]] } }] },
			{ toolCalls: [{ id: 'r5', name: 'mark_hypothesis', args: { id: 'h1', verdict: 'confirmed', result: 'it is stopped', evidence: ['c-list'] } }] },
			{ toolCalls: [{ id: 'r6', name: 'mark_hypothesis', args: { id: 'h9', verdict: 'confirmed', result: 'x', evidence: ['c-list'] } }] },
			{ text: 'I could not settle it.' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const [r1, r2, r3, r4, ok] = await results(sessionId, 'present_hypotheses');
		expect(r1).toMatch(/h1: pct_stop is config mutation, not read-only/);
		expect(r2).toMatch(/h2: pct_exec is config mutation, not read-only/);
		expect(r3).toMatch(/h2: o-list is not a tool call of this session/);
		expect(r4).toMatch(/h2: the check http_get is neither a catalogued action nor a read-only tool/);
		expect(ok).toMatchObject({ setId: 'ok' });
		const [r5, r6] = await results(sessionId, 'mark_hypothesis');
		expect(r5).toMatch(/none of the evidence ran the check of h1 \(request_execution of pct_status\)/);
		expect(r6).toMatch(/no presented hypothesis h9/);
		// Nothing ran, and the one set accepted is still open.
		expect((await executionsNow()).length).toBe(before);
		const sets = hypothesisSets(await listMessages(sql(), sessionId));
		expect(sets.map((s) => [s.setId, s.hypotheses.map((h) => h.verdict)])).toEqual([['ok', ['open', 'open']]]);
	});
});
