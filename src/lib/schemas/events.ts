// The event log's contract: every event type Nomos emits, with its payload's schema. One registry
// for the emitter (db/queries/events.ts parses against it), the SSE serializer (refuses a type
// not in it) and the browser (LiveEvents hands each handler its type's payload). Browser-safe:
// zod only, no server imports.
import { z } from 'zod';
import { describeZodError } from './zod-error';
import { messageStatuses, type MessageChunk } from '../types/messages';

const id = z.string().min(1);

/** A chunk of the SDK's UI message stream; the SDK's own reader checks its inside when it folds it. */
const messageChunk = z.custom<MessageChunk>((c) => !!c && typeof c === 'object' && typeof (c as { type?: unknown }).type === 'string', 'a UI message chunk');

export const eventSchemas = {
	/** A message's row changed; the SSE stream attaches its snapshot (`message`). Session streams only. */
	'message.updated': z.object({ messageId: id }),
	/** The chunks that took a streaming message from `rev - 1` to `rev` (see types/messages.ts MessageDelta). Session streams only. */
	'message.delta': z.object({
		messageId: id,
		rev: z.number().int(),
		chunks: z.array(messageChunk),
		status: z.enum(messageStatuses).optional(),
		error: z.string().nullable().optional()
	}),
	'session.updated': z.object({
		created: z.literal(true).optional(),
		taskState: z.string().optional(),
		alertMuted: z.boolean().optional(),
		title: z.string().optional(),
		pinned: z.boolean().optional(),
		archived: z.boolean().optional(),
		model: z.string().nullable().optional(),
		/** Shared with every operator (`read`, `write`) or no longer (null). */
		shared: z.enum(['read', 'write']).nullable().optional(),
		deleted: z.literal(true).optional()
	}),
	/** A replay's progress (replay/run.ts): queued, running (operator messages sent of total), done or failed. */
	'replay.updated': z.object({ replayId: id, status: z.string(), sent: z.number().int().optional(), total: z.number().int().optional() }),
	/** An execution changed; the stream attaches its snapshot (`execution`). */
	'execution.updated': z.object({ executionId: id, created: z.literal(true).optional(), terminal: z.string().optional() }),
	'execution.step': z.object({ executionId: id, steps: z.number().int() }),
	/** Stop asked for a running execution: the process running it aborts. */
	'execution.cancel': z.object({ executionId: id, by: z.string().nullable() }),
	'approval.decided': z.object({ executionId: id, decision: z.enum(['approved', 'denied']), route: z.string() }),
	/** A plan changed; the stream attaches its snapshot (`plan`). */
	'plan.updated': z.object({
		planId: id,
		decision: z.enum(['approved', 'denied']).optional(),
		finished: z.string().optional(),
		/** Nobody approved it in time (the sweep marked it `expired`). */
		expired: z.literal(true).optional()
	}),
	/** An incident opened, an alert joined it, or it resolved (its session's stream; the fleet stream to those who may read it). */
	'incident.updated': z.object({ incidentId: id }),
	'question.raised': z.object({ questionId: id, prompt: z.string() }),
	'question.answered': z.object({ questionId: id, via: z.enum(['panel', 'chat', 'rest']) }),
	'assent.updated': z.object({ open: z.boolean(), by: z.string().nullable() }),
	/** Stop asked for a session's running turn. */
	'turn.cancel': z.object({ by: z.string() }),
	/** A host's inventory was read: every container, or one (`container`, `gone` when it no longer exists). */
	'inventory.synced': z.object({
		host: z.string(),
		containers: z.number().int().optional(),
		container: z.number().int().optional(),
		vm: z.number().int().optional(),
		gone: z.boolean().optional()
	}),
	/** A cluster's recorded view changed (a node went up or down, quorum, a guest moved): see db/queries/entities.ts recordClusterView. */
	'cluster.updated': z.object({ cluster: z.string() }),
	'jobs.changed': z.object({ change: z.enum(['gave_up', 'dismissed', 'retried']), tasks: z.array(z.string()) }),
	'workers.changed': z.object({
		started: z.string().optional(),
		revived: z.string().optional(),
		stopped: z.string().optional(),
		died: z.string().optional(),
		alive: z.number().int().optional()
	}),
	/** An alert hook was made, changed (secret, signature, mute) or revoked: each process's intake reads hooks afresh (watches/hook-cache.ts). */
	'hooks.changed': z.object({}),
	/** Never sent to browsers: ends the streams of the operator it names (see realtime/sse.ts). */
	'auth.revoked': z.object({ operatorId: id, keep: z.string().nullable().optional(), only: z.string().optional() })
} as const;

export type EventType = keyof typeof eventSchemas;
export type EventPayload<T extends EventType> = z.infer<(typeof eventSchemas)[T]>;

export const eventTypes = Object.keys(eventSchemas) as EventType[];

export function isEventType(type: string): type is EventType {
	return Object.hasOwn(eventSchemas, type);
}

/** The payload checked against its type's schema; throws naming the type (and the field) when either is wrong. */
export function parseEventPayload<T extends EventType>(type: T, payload: unknown): EventPayload<T> {
	if (!isEventType(type)) throw new Error(`unknown event type "${String(type)}"`);
	const r = eventSchemas[type].safeParse(payload);
	if (!r.success) throw new Error(`event ${type}: ${describeZodError(r.error)}`);
	return r.data as EventPayload<T>;
}
