// The typed seams (#34): events, job payloads and tool parts each have one registry, and a wrong
// payload does not compile. The `@ts-expect-error` lines below are the proof: `npm run check`
// (svelte-check covers tests/) fails if any of them stops being an error. The run-time half —
// what the compiler cannot see is refused by name — is here for the schemas and in
// tests/integration/contracts.test.ts for the emitter, the SSE stream and the tasks.
import type { TransactionSql } from 'postgres';
import { describe, expect, it } from 'vitest';
import { eventSchemas, isEventType, parseEventPayload } from '../../src/lib/schemas/events';
import { emitEvent } from '../../src/lib/server/db/queries/events';
import { enqueueJob } from '../../src/lib/server/jobs/enqueue';
import { isJobName, jobPayloads, parseJobPayload } from '../../src/lib/server/jobs/payloads';
import { taskList } from '../../tasks/index';
import type { LiveEvents } from '../../src/lib/state/live-events.svelte';
import type { MessagePart, ToolPart } from '../../src/lib/types/messages';

/** Never called: it only has to compile, with an error on every line marked so. */
export async function wrongPayloadsDoNotCompile(tx: TransactionSql, events: LiveEvents): Promise<unknown[]> {
	const out: unknown[] = [];
	// Events: the payload is its type's.
	await emitEvent(tx, { sessionId: null, type: 'plan.updated', payload: { planId: 'p1', decision: 'approved' } });
	// @ts-expect-error plan.updated carries a planId, not an executionId
	await emitEvent(tx, { sessionId: null, type: 'plan.updated', payload: { executionId: 'e1' } });
	// @ts-expect-error no such event type
	await emitEvent(tx, { type: 'plan.updatd', payload: { planId: 'p1' } });
	// @ts-expect-error a decision is 'approved' or 'denied'
	await emitEvent(tx, { type: 'plan.updated', payload: { planId: 'p1', decision: 'maybe' } });
	events.on('question.raised', (e) => out.push(e.payload.questionId, e.payload.prompt.length));
	// @ts-expect-error a question.raised handler gets a question's payload: no planId in it
	events.on('question.raised', (e) => out.push(e.payload.planId));
	// @ts-expect-error no such event type to listen to
	events.on('question.rised', () => undefined);
	events.onAny(['execution.updated', 'execution.step'], (e) => out.push(e.payload.executionId));

	// Jobs: graphile-worker's GraphileWorker.Tasks, filled from jobs/payloads.ts.
	await enqueueJob(tx, 'executions__run', { executionId: 'e1' });
	// @ts-expect-error executions__run takes an executionId
	await enqueueJob(tx, 'executions__run', { planId: 'p1' });
	// @ts-expect-error a turn's origin is one of messageOrigins
	await enqueueJob(tx, 'agent__run_turn', { sessionId: 's1', origin: 'telepathy' });
	// @ts-expect-error a notice needs all of its fields
	await enqueueJob(tx, 'notify__webhook', { webhookId: 'w1', notice: { kind: 'approval', title: 't' } });

	// Tool parts: typed from the tool registry (server/agent/tools/index.ts) with InferUITools.
	const good: ToolPart = { type: 'tool-get_entity', toolCallId: 'c1', state: 'input-available', input: { id: 'lxc:strong/101' } };
	// @ts-expect-error get_entity's input is `{ id }`
	const wrongInput: ToolPart = { type: 'tool-get_entity', toolCallId: 'c1', state: 'input-available', input: { ref: 'lxc:strong/101' } };
	// @ts-expect-error no such tool
	const noTool: MessagePart = { type: 'tool-get_entiti', toolCallId: 'c1', state: 'input-available', input: { id: 'x' } };
	// @ts-expect-error ask_operator's input has a prompt, not a question
	const askPart: ToolPart = { type: 'tool-ask_operator', toolCallId: 'c2', state: 'input-available', input: { question: 'which size?' } };
	out.push(good, wrongInput, noTool, askPart);
	return out;
}

describe('one registry per seam', () => {
	it('the event registry refuses a wrong payload and an unknown type by name', () => {
		expect(parseEventPayload('plan.updated', { planId: 'p1' })).toEqual({ planId: 'p1' });
		expect(() => parseEventPayload('plan.updated', { executionId: 'e1' })).toThrow(/^event plan\.updated: planId: /);
		expect(() => parseEventPayload('question.answered', { questionId: 'q1', via: 'fax' })).toThrow(/^event question\.answered: via: /);
		expect(() => parseEventPayload('no.such' as 'plan.updated', {})).toThrow('unknown event type "no.such"');
		expect(isEventType('toString')).toBe(false);
		expect(isEventType('message.delta')).toBe(true);
	});

	it('the job registry names exactly the tasks the worker runs, and refuses a wrong payload with the task and field', () => {
		expect(Object.keys(jobPayloads).sort()).toEqual(Object.keys(taskList).sort());
		expect(() => parseJobPayload('plans__advance', { plan: 'p1' })).toThrow(/^plans__advance: invalid payload: planId: /);
		expect(() => parseJobPayload('agent__continue_session', { sessionId: 's1' })).toThrow(
			/^agent__continue_session: invalid payload: executionId: executionId or planId is required$/
		);
		expect(() => parseJobPayload('executions__run', null)).toThrow(/^executions__run: invalid payload: executionId: /);
		// Cron adds `_cron` to what it queues: those tasks keep it.
		expect(parseJobPayload('inventory__sync', { _cron: { ts: 'x' } })).toEqual({ _cron: { ts: 'x' } });
		expect(isJobName('test__slow')).toBe(false);
	});

	it('every event the server may stream has a schema the browser can import', () => {
		expect(Object.keys(eventSchemas)).toContain('message.delta');
		expect(Object.keys(eventSchemas)).toContain('auth.revoked');
	});
});
