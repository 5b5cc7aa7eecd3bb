import type { Sql } from '../index';
import type { StepUsage } from '../../../types/messages';

/**
 * The model's usage over one session, summed per model (from the steps of its messages'
 * `data-usage` parts): what a price table turns into a cost. A value that is not a number counts 0.
 */
export async function sessionUsageByModel(sql: Sql, sessionId: string): Promise<StepUsage[]> {
	const num = (key: string) => sql`coalesce(sum(case when jsonb_typeof(st -> ${key}::text) = 'number' then (st ->> ${key}::text)::numeric end), 0)::float8`;
	return sql<StepUsage[]>`
		select coalesce(st ->> 'model', '?') as model, ${num('input')} as input, ${num('output')} as output, ${num('cached')} as cached
		from messages m
		cross join lateral jsonb_array_elements(m.parts) p
		cross join lateral jsonb_array_elements(case when jsonb_typeof(p -> 'data' -> 'steps') = 'array' then p -> 'data' -> 'steps' else '[]'::jsonb end) st
		where m.session_id = ${sessionId} and m.role = 'assistant' and p ->> 'type' = 'data-usage'
		group by 1 order by 1`;
}
