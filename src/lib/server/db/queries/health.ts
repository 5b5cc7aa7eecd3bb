import type { Sql } from '../index';

/** One round trip: the database answers. */
export async function pingDatabase(sql: Sql): Promise<void> {
	await sql`select 1`;
}
