// Outgoing webhooks and their delivery attempts.
import { bigserial, boolean, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns';
import { operators } from './operators-auth';

export const webhookKinds = ['ntfy', 'json'] as const;
export type WebhookKind = (typeof webhookKinds)[number];

/**
 * Outgoing webhooks an admin configured: told when an approval or a question starts waiting.
 * `url` and `headers` may carry secrets (ntfy topics, tokens): they are sent, never shown back
 * in full (see notify/mask.ts).
 */
export const webhooks = pgTable('webhooks', {
	id: uuid('id').primaryKey().defaultRandom(),
	name: text('name').notNull(),
	kind: text('kind', { enum: webhookKinds }).notNull(),
	url: text('url').notNull(),
	headers: jsonb('headers').$type<Record<string, string>>().notNull().default({}),
	enabled: boolean('enabled').notNull().default(true),
	createdBy: uuid('created_by').references(() => operators.id, { onDelete: 'set null' }),
	createdAt: createdAt()
});

/** One delivery attempt of a webhook (kept short per webhook): what Settings shows as its last failures. */
export const webhookDeliveries = pgTable(
	'webhook_deliveries',
	{
		id: bigserial('id', { mode: 'number' }).primaryKey(),
		webhookId: uuid('webhook_id')
			.notNull()
			.references(() => webhooks.id, { onDelete: 'cascade' }),
		noticeKind: text('notice_kind').notNull(),
		ok: boolean('ok').notNull(),
		httpStatus: integer('http_status'),
		error: text('error'),
		attempt: integer('attempt').notNull().default(1),
		/** No retry follows (it worked, it was a test, or the attempts are used up). */
		final: boolean('final').notNull().default(true),
		at: ts('at').notNull().defaultNow()
	},
	(t) => [index('webhook_deliveries_webhook_idx').on(t.webhookId, t.at)]
);
