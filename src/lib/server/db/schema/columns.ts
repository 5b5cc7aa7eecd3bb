// The column helpers every table file shares.
import { customType, timestamp } from 'drizzle-orm/pg-core';

export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
// 'string': what the app's postgres.js parsers return (ISO 8601, see db/index.ts); no effect on the SQL.
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });
export const createdAt = () => ts('created_at').notNull().defaultNow();
