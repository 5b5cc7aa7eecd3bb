import type { Sql } from '../db/index';
import type { TransactionSql } from 'postgres';
import type { OriginCounts } from './types';

/**
 * Sessions by what started them (an operator, an alert hook, a schedule) in the overview's date
 * range, and for alert investigations how long until the findings (the first complete agent reply
 * with text) and until an approved fix (the first plan or execution of the session an operator
 * approved), from the alert that opened the session (its creation). Medians over the sessions that got there.
 */
export async function reviewOrigins(sql: Sql | TransactionSql, from: string | null, to: string | null): Promise<OriginCounts> {
	const [r] = await sql<
		{ operator: number; alert: number; schedule: number; findings: number; findings_s: number | null; fixed: number; fix_s: number | null }[]
	>`
		with c as (
			select s.id, s.created_at, s.started_by_hook, s.started_by_schedule from chat_sessions s
			where s.replay is null and (${from}::date is null or s.created_at >= (${from}::date)::timestamp at time zone 'UTC')
				and (${to}::date is null or s.created_at < ((${to}::date) + 1)::timestamp at time zone 'UTC')
		),
		a as (
			select c.id,
				extract(epoch from (
					select min(m.updated_at) from messages m
					where m.session_id = c.id and m.role = 'assistant' and m.status = 'complete'
						and exists (select 1 from jsonb_array_elements(m.parts) p where p->>'type' = 'text' and length(trim(p->>'text')) > 0)
				) - c.created_at)::float8 as findings_s,
				extract(epoch from least(
					(select min(p.decided_at) from plans p where p.session_id = c.id and p.decided_at is not null and p.status not in ('denied', 'proposed')),
					(select min(ap.decided_at) from approvals ap join executions e on e.id = ap.execution_id where e.requested_by_session = c.id and ap.decision = 'approved')
				) - c.created_at)::float8 as fix_s
			from c where c.started_by_hook is not null
		)
		select
			(select count(*)::int from c where started_by_hook is null and started_by_schedule is null) as operator,
			(select count(*)::int from c where started_by_hook is not null) as alert,
			(select count(*)::int from c where started_by_schedule is not null) as schedule,
			(select count(findings_s)::int from a) as findings,
			(select percentile_cont(0.5) within group (order by findings_s) from a where findings_s is not null) as findings_s,
			(select count(fix_s)::int from a) as fixed,
			(select percentile_cont(0.5) within group (order by fix_s) from a where fix_s is not null) as fix_s`;
	return {
		operator: r.operator,
		alert: r.alert,
		schedule: r.schedule,
		alerts: { withFindings: r.findings, findingsMedianS: r.findings_s, withFix: r.fixed, fixMedianS: r.fix_s }
	};
}
