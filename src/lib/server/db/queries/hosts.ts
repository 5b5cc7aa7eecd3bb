import type { TransactionSql } from 'postgres';
import { lockHostInventory } from './entities';
import type { Sql } from '../index';
import type { HostConfig } from '../../env';
import type { hosts } from '../schema';
import type { GateState } from '../../../types/gate';

/** A configured Proxmox host, as its table has it. Timestamps are ISO 8601 text. */
export type Host = typeof hosts.$inferSelect;

const columns = (sql: Sql | TransactionSql) =>
	sql`id, name, address, port, username, key_path as "keyPath", mutation_key_path as "mutationKeyPath", host_key_fingerprint as "hostKeyFingerprint",
		seen_fingerprint as "seenFingerprint", source, last_checked_at as "lastCheckedAt", last_error as "lastError",
		last_answer_at as "lastAnswerAt", unanswered_since as "unansweredSince", gate_state as "gateState", gate_problem as "gateProblem",
		gate_checked_at as "gateCheckedAt", created_at as "createdAt", updated_at as "updatedAt"`;

export async function listHosts(sql: Sql | TransactionSql): Promise<Host[]> {
	return sql<Host[]>`select ${columns(sql)} from hosts order by name`;
}

export async function getHostByName(sql: Sql | TransactionSql, name: string): Promise<Host | null> {
	const [row] = await sql<Host[]>`select ${columns(sql)} from hosts where name = ${name}`;
	return row ?? null;
}

export async function getHostById(sql: Sql | TransactionSql, id: string): Promise<Host | null> {
	const [row] = await sql<Host[]>`select ${columns(sql)} from hosts where id = ${id}`;
	return row ?? null;
}

/**
 * Whether a host's row still names what its last gate check asked (address, port, user and both
 * keys): when not, that check is forgotten, so the host card never vouches for keys it did not
 * ask about (the next sync asks again, hosts/gate.ts).
 */
function sameKeys(sql: Sql | TransactionSql, to: 'excluded' | Pick<Host, 'address' | 'port' | 'username' | 'keyPath' | 'mutationKeyPath'>) {
	const now = sql`(hosts.address, hosts.port, hosts.username, hosts.key_path, hosts.mutation_key_path)`;
	return to === 'excluded'
		? sql`${now} is not distinct from (excluded.address, excluded.port, excluded.username, excluded.key_path, excluded.mutation_key_path)`
		: sql`${now} is not distinct from (${to.address}::text, ${to.port}::int, ${to.username}::text, ${to.keyPath}::text, ${to.mutationKeyPath}::text)`;
}

/** Upserts the hosts from NOMOS_HOSTS; a configured fingerprint pins the host (none keeps the pin). */
export async function upsertConfiguredHosts(sql: Sql | TransactionSql, list: HostConfig[]): Promise<void> {
	for (const h of list) {
		await sql`
			insert into hosts (name, address, port, username, key_path, mutation_key_path, source, host_key_fingerprint)
			values (${h.name}, ${h.address}, ${h.port}, ${h.user}, ${h.keyPath}, ${h.mutationKeyPath ?? null}, 'config', ${h.hostKeyFingerprint ?? null})
			on conflict (name) do update set
				address = excluded.address, port = excluded.port, username = excluded.username,
				key_path = excluded.key_path, mutation_key_path = excluded.mutation_key_path, source = excluded.source, updated_at = now(),
				gate_checked_at = case when ${sameKeys(sql, 'excluded')} then hosts.gate_checked_at end,
				gate_state = case when ${sameKeys(sql, 'excluded')} then hosts.gate_state end,
				gate_problem = case when ${sameKeys(sql, 'excluded')} then hosts.gate_problem end,
				host_key_fingerprint = coalesce(excluded.host_key_fingerprint, hosts.host_key_fingerprint)`;
	}
}

export type HostInput = Pick<Host, 'name' | 'address' | 'port' | 'username' | 'keyPath' | 'mutationKeyPath'>;

export async function createHost(sql: Sql | TransactionSql, input: HostInput): Promise<Host> {
	const [row] = await sql<Host[]>`
		insert into hosts (name, address, port, username, key_path, mutation_key_path, source)
		values (${input.name}, ${input.address}, ${input.port}, ${input.username}, ${input.keyPath}, ${input.mutationKeyPath}, 'ui')
		returning ${columns(sql)}`;
	return row;
}

/** Editing the address or port unpins the key: a different machine must be re-confirmed. */
export async function updateHost(sql: Sql | TransactionSql, id: string, input: HostInput): Promise<Host | null> {
	const [row] = await sql<Host[]>`
		update hosts set
			name = ${input.name}, address = ${input.address}, port = ${input.port}, username = ${input.username},
			key_path = ${input.keyPath}, mutation_key_path = ${input.mutationKeyPath}, updated_at = now(),
			gate_checked_at = case when ${sameKeys(sql, input)} then gate_checked_at end,
			gate_state = case when ${sameKeys(sql, input)} then gate_state end,
			gate_problem = case when ${sameKeys(sql, input)} then gate_problem end,
			host_key_fingerprint = case when address = ${input.address} and port = ${input.port} then host_key_fingerprint end
		where id = ${id}
		returning ${columns(sql)}`;
	return row ?? null;
}

/**
 * Removes a host and everything the inventory knew about it (its containers are not "present"
 * anymore); false when it was not there. Holds the host's inventory lock, so a sync of it that is
 * writing finishes first and one that writes later finds the host gone (lockHostInventory).
 */
export async function deleteHost(tx: TransactionSql, id: string): Promise<boolean> {
	const [host] = await tx<{ name: string }[]>`select name from hosts where id = ${id} for update`;
	if (!host) return false;
	await lockHostInventory(tx, host.name);
	await tx`delete from hosts where id = ${id}`;
	await tx`delete from entities where host_name = ${host.name} or (kind = 'host' and external_id = ${host.name})`;
	return true;
}

/** The host, its row locked until the transaction ends (a change reads what it replaces). */
export async function lockHost(tx: TransactionSql, id: string): Promise<Host | null> {
	const [row] = await tx<Host[]>`select ${columns(tx)} from hosts where id = ${id} for update`;
	return row ?? null;
}

/**
 * Records a check of the host (a sync, a test, a key scan). `answered`: the host answered over SSH
 * (true, also when its command failed), gave no answer at all (false: refused, timed out, dropped:
 * `unanswered_since` starts, or keeps its first moment), or it cannot be told (null: Nomos's own
 * problem, e.g. an aborted read or an unreadable key; neither stamp moves). Default: answered when
 * there is no error. `flipped`: it answered before and does not now, or the other way round.
 */
export async function recordHostCheck(
	sql: Sql | TransactionSql,
	id: string,
	seenFingerprint: string | null,
	error: string | null,
	answered: boolean | null = error === null
): Promise<{ flipped: boolean }> {
	const [row] = await sql<{ flipped: boolean }[]>`
		with before as (select unanswered_since is null as answering from hosts where id = ${id} for update)
		update hosts set seen_fingerprint = ${seenFingerprint}, last_error = ${error}, last_checked_at = now(),
			last_answer_at = case when ${answered}::boolean then now() else last_answer_at end,
			unanswered_since = case when ${answered}::boolean then null when not ${answered}::boolean then coalesce(unanswered_since, now()) else unanswered_since end
		where id = ${id}
		returning (unanswered_since is null) <> (select answering from before) as flipped`;
	return { flipped: row?.flipped ?? false };
}

/** Pins exactly the fingerprint the operator confirmed (it must be the one last seen). */
export async function pinHostFingerprint(sql: Sql | TransactionSql, id: string, fingerprint: string): Promise<Host | null> {
	const [row] = await sql<Host[]>`
		update hosts set host_key_fingerprint = ${fingerprint}, updated_at = now()
		where id = ${id} and seen_fingerprint = ${fingerprint}
		returning ${columns(sql)}`;
	return row ?? null;
}

/** Stores the last gate check of a host's keys (hosts/gate.ts): the host card warns from it without a click. */
export async function recordGateCheck(sql: Sql | TransactionSql, id: string, state: GateState, problem: string | null): Promise<void> {
	await sql`update hosts set gate_state = ${state}, gate_problem = ${problem}, gate_checked_at = now() where id = ${id}`;
}
