import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { storageSamples } from '../schema';

/** One reading of a storage's use on a host (inventory/storage-trend.ts says the trend). */
export type StorageSample = typeof storageSamples.$inferSelect;

/**
 * Adds a sample unless the storage has one newer than `everyMs` before `at`, then keeps only its
 * newest `keep` samples.
 */
export async function addStorageSample(
	sql: Sql | TransactionSql,
	s: Omit<StorageSample, 'at'> & { at: string },
	o: { everyMs: number; keep: number }
): Promise<void> {
	await sql`
		insert into storage_samples (host_name, storage, at, used, total)
		select ${s.hostName}, ${s.storage}, ${s.at}, ${s.used}, ${s.total}
		where not exists (
			select 1 from storage_samples
			where host_name = ${s.hostName} and storage = ${s.storage} and at > ${s.at}::timestamptz - ${`${o.everyMs} milliseconds`}::interval)`;
	await sql`
		delete from storage_samples s
		where host_name = ${s.hostName} and storage = ${s.storage}
			and at < (select min(at) from (select at from storage_samples where host_name = ${s.hostName} and storage = ${s.storage}
				order by at desc limit ${o.keep}) kept)`;
}

/** A host's samples, by storage, oldest first (`used` as a number: a bigint would come back as text). */
export async function listStorageSamples(sql: Sql | TransactionSql, hostName: string): Promise<Pick<StorageSample, 'storage' | 'at' | 'used'>[]> {
	return sql<Pick<StorageSample, 'storage' | 'at' | 'used'>[]>`
		select storage, at, used::float8 as used from storage_samples where host_name = ${hostName} order by storage, at`;
}
