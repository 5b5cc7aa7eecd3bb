import { sql } from '../db/index';
import { getLiveHook, type AlertHookRow } from '../db/queries/watches';
import type { Hub } from '../realtime/hub';

/*
 * The live hooks the intake has read, by id, so a delivery costs no lookup (watches/intake.ts).
 * Kept only while this process follows the event log: every change of a hook emits
 * `hooks.changed` in its transaction (watches/hooks.ts), and the hub's listener empties the cache
 * in every process; the process that made the change also empties it at once after its commit, so
 * its own next delivery never sees the old secret. A hook changed behind the app's back (SQL by
 * hand) is read again after MAX_AGE_MS at the latest. Unknown ids are not kept (a stranger's
 * guesses would fill memory).
 */

/** How long an entry is trusted without a `hooks.changed`: the bound for a change made by hand in the database. */
const MAX_AGE_MS = 60_000;
/** Entries kept at most (a hook is a handful of rows; this bounds a pathological table). */
const MAX_ENTRIES = 1000;

type Entry = { row: AlertHookRow; at: number };
const g = globalThis as unknown as { __nomosHookCache?: { rows: Map<string, Entry>; following: boolean; generation: number } };
const state = (g.__nomosHookCache ??= { rows: new Map(), following: false, generation: 0 });

/** The live (not revoked) hook `id`, from the cache when this process follows hook changes, else from the database. */
export async function liveHook(id: string): Promise<AlertHookRow | null> {
	if (!state.following) return getLiveHook(sql(), id);
	const hit = state.rows.get(id);
	if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.row;
	// A change that lands while this read is out empties the cache again; the read's result is then
	// not kept (it may be from before the change).
	const generation = state.generation;
	const row = await getLiveHook(sql(), id);
	if (row && generation === state.generation) {
		if (state.rows.size >= MAX_ENTRIES) state.rows.clear();
		state.rows.set(id, { row, at: Date.now() });
	} else state.rows.delete(id);
	return row;
}

/** Forgets every hook read (a hook changed). */
export function forgetHooks(): void {
	state.generation++;
	state.rows.clear();
}

/** Follows `hooks.changed` on the process's hub (boot); from then on the intake caches hooks. Returns the stop. */
export function installHookCache(hub: Hub): () => void {
	forgetHooks();
	const off = hub.onEvent((e) => {
		if (e.type === 'hooks.changed') forgetHooks();
	});
	state.following = true;
	return () => {
		off();
		state.following = false;
		forgetHooks();
	};
}
