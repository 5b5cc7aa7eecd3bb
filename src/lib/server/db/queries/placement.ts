import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';

/**
 * Whether the inventory knows a cluster (a sync of a member recorded a `cluster` entity): the
 * agent is offered the migrate actions and suggest_node only then.
 */
export async function clusterKnown(sql: Sql | TransactionSql): Promise<boolean> {
	const [row] = await sql<{ known: boolean }[]>`select exists (select 1 from entities where kind = 'cluster') as known`;
	return row.known;
}
