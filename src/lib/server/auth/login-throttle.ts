import ipaddr from 'ipaddr.js';
import type { Sql } from '../db/index';
import { clearLoginFailures, loginBlockedFor, recordLoginFailure, userFailures } from '../db/queries/login-throttle';

/*
 * Threat model for password checks (sign-in, step-up, a token's creation).
 *
 * - A guesser at one address tries many passwords for one account: the (username, address) pair
 *   is blocked after PAIR_THRESHOLD failures, with a doubling wait up to NOMOS_LOGIN_BACKOFF_MAX_S.
 * - A guesser at one address sprays many accounts: the address is blocked after
 *   ADDRESS_THRESHOLD failures, whatever the usernames. An IPv6 address counts by its /64 (one
 *   machine usually holds a whole /64, so single addresses would be free to rotate through).
 * - A guesser with many addresses (a botnet) aims at one account: every failure also counts
 *   against the username, and past USER_SLOW_AFTER failures each check of that username waits a
 *   little before argon2 runs (doubling, never more than USER_DELAY_MAX_MS). That only slows the
 *   guessing down; argon2's own queue (password.ts) bounds the work.
 * - The same guesser trying to keep the real operator out: nothing keyed by the username alone
 *   ever refuses. The right password from an address (and pair) with no recent failures of its
 *   own signs in, at worst after the bounded delay, however many guesses came from elsewhere.
 *   (Before this, six guesses from anywhere locked the account for everyone.)
 * The counts live in Postgres (login_throttle), so every web process sees the same ones.
 */

/** Failures of one username from one address before its backoff starts. */
export const PAIR_THRESHOLD = 5;
/** Failures from one address (any usernames) before its backoff starts (several people may share it). */
export const ADDRESS_THRESHOLD = 20;
/** Failures of one username from everywhere before its checks start to slow down. */
export const USER_SLOW_AFTER = 10;
/** The longest a check of a much-guessed username waits (it never refuses). */
export const USER_DELAY_MAX_MS = 2_000;
/** Failures older than this are forgotten. */
export const WINDOW_S = 15 * 60;

/** What an address is counted as: IPv4 as is, IPv6 by its /64, IPv4-mapped IPv6 as IPv4. */
export function addressKey(address: string): string {
	try {
		const a = ipaddr.process(address);
		if (a.kind() === 'ipv4') return a.toString();
		const parts = (a as ipaddr.IPv6).parts.slice(0, 4);
		return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
	} catch {
		return address;
	}
}

export type ThrottleKeys = { pair: string; address: string; user: string };

export function throttleKeys(username: string, address: string): ThrottleKeys {
	const user = username.trim().toLowerCase();
	const addr = addressKey(address);
	return { pair: `pair:${user}|${addr}`, address: `addr:${addr}`, user: `user:${user}` };
}

/** How long a check of a username with this many recent failures waits, in ms (bounded). */
export function userDelayMs(failures: number): number {
	if (failures < USER_SLOW_AFTER) return 0;
	return Math.min(USER_DELAY_MAX_MS, 100 * 2 ** Math.min(20, failures - USER_SLOW_AFTER));
}

/**
 * Before a password check: seconds this pair or address must still wait (refuse when > 0), and
 * the delay the username's own count imposes (wait it, never refuse for it).
 */
export async function throttleBefore(sql: Sql, k: ThrottleKeys): Promise<{ blockedFor: number; delayMs: number }> {
	const [blockedFor, failures] = await Promise.all([loginBlockedFor(sql, [k.pair, k.address]), userFailures(sql, k.user, WINDOW_S)]);
	return { blockedFor, delayMs: userDelayMs(failures) };
}

/** Counts a failed check; returns the seconds this pair or address is now blocked for (0: none). */
export async function throttleFailure(sql: Sql, k: ThrottleKeys, maxSeconds: number): Promise<number> {
	const wait = await recordLoginFailure(
		sql,
		[
			{ key: k.pair, threshold: PAIR_THRESHOLD },
			{ key: k.address, threshold: ADDRESS_THRESHOLD }
		],
		{ maxSeconds, windowSeconds: WINDOW_S }
	);
	// Counted only: the username's key slows checks down (userDelayMs), it never blocks.
	await recordLoginFailure(sql, [{ key: k.user, threshold: 2 ** 31 - 1 }], { maxSeconds, windowSeconds: WINDOW_S });
	return wait;
}

/** A right password clears its pair; the address and the username keep their counts (a guesser's). */
export async function throttleSuccess(sql: Sql, k: ThrottleKeys): Promise<void> {
	await clearLoginFailures(sql, k.pair);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
