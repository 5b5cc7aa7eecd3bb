// Whether a configured host answers Nomos: up, offline (no answer since a moment, or seen down by
// another cluster member) or unknown. The one reading of it for Settings, the agent's tools and the
// checks before approval. Unknown is never absent: a host that did not answer says nothing about
// its guests.
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/index';
import { clusterOfHost } from '../db/queries/entities';
import { getHostByName, type Host } from '../db/queries/hosts';
import { ProxmoxError, NoAnswerError } from '../proxmox/inventory';
import { HostKeyError, SshError } from '../ssh/client';

export type ReachabilityState = 'up' | 'offline' | 'unknown';

/** How a host stands for Nomos. `since`: ISO 8601 (up: its last answer; offline: the first check without one, or when a cluster member first saw it down). */
export interface Reachability {
	state: ReachabilityState;
	since: string | null;
	/** one sentence the operator and the agent can be told as is */
	why: string;
	/** the last time it answered (null: never) */
	lastAnswerAt: string | null;
}

/**
 * Whether an error from reading a host means the host answered (true: it spoke, even to refuse or
 * fail: a wrong host key, an exit status, unparseable output), gave no answer (false: refused,
 * timed out, dropped), or cannot be told (null: Nomos's own side, e.g. an unreadable private key or
 * an aborted read).
 */
export function answeredBy(e: unknown): boolean | null {
	if (e instanceof HostKeyError) return true;
	if (e instanceof NoAnswerError) return false;
	if (e instanceof ProxmoxError) return /: aborted$/.test(e.message) ? null : true;
	if (e instanceof SshError) return e.localDetail ? null : false;
	return false;
}

/** `14:02 UTC` today, else `2026-12-05 14:02 UTC`. */
export function clockTime(iso: string, now = new Date()): string {
	const d = new Date(iso);
	const day = d.toISOString().slice(0, 10);
	const hm = d.toISOString().slice(11, 16);
	return day === now.toISOString().slice(0, 10) ? `${hm} UTC` : `${day} ${hm} UTC`;
}

/** `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
export function ageText(iso: string, now = new Date()): string {
	const s = Math.max(0, Math.round((now.getTime() - new Date(iso).getTime()) / 1000));
	if (s < 60) return `${s} s`;
	const m = Math.floor(s / 60);
	if (m < 60) return `${m} min`;
	const h = Math.floor(m / 60);
	if (h < 24) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
	return `${Math.floor(h / 24)} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

type HostFacts = Pick<Host, 'name' | 'hostKeyFingerprint' | 'lastCheckedAt' | 'lastError' | 'lastAnswerAt' | 'unansweredSince'>;
type Standing = { cluster: string; nodeStatus: string; seenBy: string; offlineSince?: string | null };

/** The reading from a host row and (for a cluster member) its recorded standing; pure, for lists. */
export function reachabilityOf(host: HostFacts, standing: Standing | null = null, now = new Date()): Reachability {
	const lastAnswerAt = host.lastAnswerAt;
	if (host.unansweredSince) {
		const since = host.unansweredSince;
		const what = lastAnswerAt ? `has not answered since ${clockTime(lastAnswerAt, now)}` : `has never answered (tried since ${clockTime(since, now)})`;
		return { state: 'offline', since, lastAnswerAt, why: `${host.name} ${what}${host.lastError ? `: ${host.lastError}` : ''}` };
	}
	if (standing && standing.nodeStatus !== 'online' && standing.seenBy !== host.name) {
		const since = standing.offlineSince ?? null;
		return {
			state: 'offline',
			since,
			lastAnswerAt,
			why: `node ${host.name} is ${standing.nodeStatus} in cluster ${standing.cluster} (seen from ${standing.seenBy}${since ? ` since ${clockTime(since, now)}` : ''})`
		};
	}
	if (!host.hostKeyFingerprint)
		return { state: 'unknown', since: null, lastAnswerAt, why: `${host.name}: host key not pinned, so Nomos does not connect to it` };
	if (!lastAnswerAt) {
		return {
			state: 'unknown',
			since: null,
			lastAnswerAt,
			why: host.lastError ? `${host.name} could not be checked: ${host.lastError}` : `${host.name} has not been checked yet`
		};
	}
	return {
		state: 'up',
		since: lastAnswerAt,
		lastAnswerAt,
		why: host.lastError ? `${host.name} answers, but its last read failed: ${host.lastError}` : `${host.name} answered at ${clockTime(lastAnswerAt, now)}`
	};
}

/**
 * Whether the configured host `hostName` answers Nomos, as its checks and (for a cluster member)
 * the last quorate view recorded: `offline` when its checks get no answer (refused, timed out,
 * dropped; `since` the first such check after its last answer) or a member sees it down;
 * `unknown` when it is not configured, not pinned, never checked, or only Nomos's side failed.
 * Reads only the database (no SSH): cheap enough to call before every request.
 */
export async function hostReachability(db: Sql | TransactionSql, hostName: string): Promise<Reachability> {
	const host = await getHostByName(db, hostName);
	if (!host) return { state: 'unknown', since: null, lastAnswerAt: null, why: `no host named "${hostName}" is configured in Nomos` };
	const cluster = await clusterOfHost(db, hostName);
	return reachabilityOf(host, cluster && { ...cluster.standing, offlineSince: cluster.offlineSince });
}
