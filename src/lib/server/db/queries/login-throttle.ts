import type { Sql } from '../index';
import type { loginThrottle } from '../schema';

/** Seconds a key is blocked for, computed from its `blocked_until` (null or 0: not blocked). */
type Wait = { wait: number | null };

export type ThrottleRule = { key: string; threshold: number };

/** Seconds until every one of these keys may try again (0 when none is blocked). */
export async function loginBlockedFor(sql: Sql, keys: string[]): Promise<number> {
	const [row] = await sql<Wait[]>`
		select ceil(extract(epoch from max(blocked_until) - now()))::int as wait
		from login_throttle where key = any(${keys}) and blocked_until > now()`;
	return Math.max(0, row?.wait ?? 0);
}

/**
 * Counts a failed sign-in against each key. From the `threshold`-th failure within the
 * `windowSeconds` on, the key is blocked for 1, 2, 4 … seconds, never longer than `maxSeconds`.
 * Returns the longest block now in force, in seconds.
 */
export async function recordLoginFailure(sql: Sql, rules: ThrottleRule[], o: { maxSeconds: number; windowSeconds: number }): Promise<number> {
	let longest = 0;
	for (const r of rules) {
		const [row] = await sql<{ wait: number }[]>`
			insert into login_throttle as t (key, failures, last_failure_at, blocked_until)
			values (${r.key}, 1, now(), case when ${r.threshold} <= 1 then now() + make_interval(secs => 1) end)
			on conflict (key) do update set
				failures = case when t.last_failure_at < now() - make_interval(secs => ${o.windowSeconds}) then 1 else t.failures + 1 end,
				last_failure_at = now(),
				blocked_until = case
					when (case when t.last_failure_at < now() - make_interval(secs => ${o.windowSeconds}) then 1 else t.failures + 1 end) >= ${r.threshold}
					then now() + make_interval(secs => least(${o.maxSeconds}::float8,
						power(2, least(30, (case when t.last_failure_at < now() - make_interval(secs => ${o.windowSeconds}) then 1 else t.failures + 1 end) - ${r.threshold}))))
					else t.blocked_until end
			returning coalesce(ceil(extract(epoch from blocked_until - now()))::int, 0) as wait`;
		longest = Math.max(longest, row.wait);
	}
	return longest;
}

/** Failures counted against a key within the window (0 when none). */
export async function userFailures(sql: Sql, key: string, windowSeconds: number): Promise<number> {
	const [row] = await sql<Pick<typeof loginThrottle.$inferSelect, 'failures'>[]>`
		select failures from login_throttle where key = ${key} and last_failure_at > now() - make_interval(secs => ${windowSeconds})`;
	return row?.failures ?? 0;
}

/** A successful check clears one key's count (see auth/login-throttle.ts for which). */
export async function clearLoginFailures(sql: Sql, key: string): Promise<void> {
	await sql`delete from login_throttle where key = ${key}`;
}
