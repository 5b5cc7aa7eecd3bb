// `npm run bench:stream` — what one streaming assistant turn costs on the wire and in Postgres,
// and how soon its text is on screen (issue #14), now that a turn reaches browsers as
// `message.delta` events (message-writer.ts) instead of whole-message snapshots.
//
//   1. starts its own embedded Postgres in a temp dir, migrates it, turns autovacuum off and
//      timed checkpoints away (nothing but the turn may write while WAL is measured), seeds
//      --calls containers whose `get_entity` result is --result-kb KB each (Markdown notes),
//      VACUUM FREEZE + CHECKPOINT, then runs every scenario once unmeasured (warm-up);
//   2. in this process, like tests/integration/stream-deltas.test.ts: the scripted model
//      (tests/doubles/llm), a Hub and session SSE streams (`eventStreamResponse`), `runTurn`;
//   3. per scenario and tab count: opens N session streams ("tabs", all live before the turn),
//      runs one turn, and measures
//      - final: JSON.stringify(stored parts) in bytes;
//      - SSE: bytes one stream received from the turn's start until it had the turn's last event;
//      - WAL: pg_wal_lsn_diff(pg_current_wal_lsn()) around the turn (and, with pg_walinspect,
//        where it went: relation, full-page images, commits);
//      - text-to-screen: for each model chunk, the time from the double writing it (its onChunk
//        hook) to the moment one tab's message, folded with applyDelta, contains its text; beside
//        it the same for a reader of the model's own HTTP stream (a second double with the same
//        script, read with fetch at the same time as the turn);
//      the last tab opened is the one that folds live and is measured (last in the hub's
//      fan-out); the others only read, and are checked afterwards to have received the same bytes;
//   4. prints the figures and where the bytes go; exits non-zero if a turn fails or a tab's
//      message differs from the stored one (not on a missed goal).
//
// Scenarios: text  — one --text-kb KB Markdown reply in --chunk-char chunks, --delay-ms apart;
//            tools — --calls steps, each a little text (8-char chunks) and one get_entity call
//                    whose result is --result-kb KB, then a closing text: --tools-text-kb KB of
//                    text in all.
//
//   npm run bench:stream -- --tabs 1,20 --text-kb 24 --chunk 16 --delay-ms 4
// Options: --scenarios text,tools  --tabs 1,20  --text-kb 24  --chunk 16  --delay-ms 4
//          --calls 40  --result-kb 8  --tools-text-kb 4
// Env:     BENCH_CHECKPOINT=1 (a CHECKPOINT before every measured turn: the WAL right after a
//          checkpoint, full-page images included, instead of between checkpoints)
//          BENCH_DEBUG=1 (lists the WAL records with full-page images of every turn)
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { connectDb, disconnectDb, sql } from '../src/lib/server/db/index';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/lib/server/db/embedded';
import { runMigrations } from '../src/lib/server/db/migrate';
import { replaceHostInventory, resolveEntity, type InventoryRow } from '../src/lib/server/db/queries/entities';
import { latestEventId } from '../src/lib/server/db/queries/events';
import { insertMessage } from '../src/lib/server/db/queries/messages';
import { getMessage } from '../src/lib/server/conversation/messages';
import { createSession } from '../src/lib/server/db/queries/sessions';
import { resetEnvCache } from '../src/lib/server/env';
import { runTurn } from '../src/lib/server/agent/run-turn';
import { entityDetail } from '../src/lib/server/agent/tools/get-entity';
import { Hub } from '../src/lib/server/realtime/hub';
import { eventStreamResponse } from '../src/lib/server/realtime/sse';
import { applyDelta, newerSnapshot } from '../src/lib/messages/apply';
import { canonicalJson } from '../src/lib/messages/fold';
import type { MessageDelta, MessagePart, MessageRow } from '../src/lib/types/messages';
import { startScriptedLlm, type ScriptedLlm, type ScriptedResponse } from '../tests/doubles/llm/server';
import { freePort } from '../tests/helpers/ports';
// A seeded PRNG, so every run streams the same text.
import { prng } from '../tests/helpers/hostile';
import { exitCleanly, loadAverage, sleep } from './harness';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(ROOT);

const { values: opts } = parseArgs({
	options: {
		scenarios: { type: 'string', default: 'text,tools' },
		tabs: { type: 'string', default: '1,20' },
		'text-kb': { type: 'string', default: '24' },
		chunk: { type: 'string', default: '16' },
		'delay-ms': { type: 'string', default: '4' },
		calls: { type: 'string', default: '40' },
		'result-kb': { type: 'string', default: '8' },
		'tools-text-kb': { type: 'string', default: '4' }
	}
});
const num = (name: string, raw: string | undefined, min: number): number => {
	const n = Number(raw);
	if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number ≥ ${min}, got ${raw}`);
	return n;
};
const SCENARIOS = opts.scenarios.split(',').map((s) => s.trim());
for (const s of SCENARIOS) if (s !== 'text' && s !== 'tools') throw new Error(`--scenarios: unknown scenario ${s} (text, tools)`);
const TABS = opts.tabs.split(',').map((t) => Math.round(num('--tabs', t, 1)));
const TEXT_CHARS = Math.round(num('--text-kb', opts['text-kb'], 0.1) * 1024);
const CHUNK = Math.round(num('--chunk', opts.chunk, 1));
const DELAY_MS = Math.round(num('--delay-ms', opts['delay-ms'], 0));
const CALLS = Math.round(num('--calls', opts.calls, 1));
const RESULT_BYTES = Math.round(num('--result-kb', opts['result-kb'], 1) * 1024);
const TOOLS_TEXT_CHARS = Math.round(num('--tools-text-kb', opts['tools-text-kb'], 0.1) * 1024);
/** The double sends a tool-call response's text in 8-character chunks. */
const TOOL_STEP_CHUNK = 8;
const CHECKPOINT_EACH = process.env.BENCH_CHECKPOINT === '1';
const WATCHDOG_MS = 15 * 60_000;

const log = (s: string) => console.log(`[bench] ${s}`);
const debug = (s: string) => {
	if (process.env.BENCH_DEBUG) log(s);
};
const kb = (bytes: number, digits = 1) => (bytes / 1024).toFixed(digits);
const bytesOf = (s: string) => Buffer.byteLength(s, 'utf8');

// ---------------------------------------------------------------------------- test content

const WORDS = (
	'the a an of to in on for with from after before when while and or but not only also then this that these those it its ' +
	'container backup snapshot storage volume network bridge vlan firewall certificate caddy nginx postgres replica schedule ' +
	'retention disk memory kernel update upgrade restart service unit journal rotation resolver gateway subnet route mount ' +
	'dataset scrub quota template debian package repository mirror timer health check alert metric dashboard exporter target ' +
	'label token secret key host fingerprint user group permission policy migration cluster node quorum fencing runs keeps ' +
	'moves writes reads fails retries waits starts stops needs uses shows daily weekly nightly every hour minutes slow fast ' +
	'old new local remote primary standby shared private public internal external small large full empty free used'
).split(' ');
const NAMES = ['caddy', 'nginx', 'postgres', 'gitea', 'grafana', 'prometheus', 'restic', 'unbound', 'jellyfin', 'nextcloud', 'vaultwarden', 'homeassistant'];

/** Markdown a model or an operator might write: headings, prose, lists, code, tables, a little non-ASCII. */
function markdown(chars: number, rand: () => number): string {
	const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
	const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
	const word = () => {
		const r = rand();
		if (r < 0.04) return `\`${pick(NAMES)}.service\``;
		if (r < 0.07) return `**${pick(WORDS)}**`;
		if (r < 0.09) return `10.0.${int(0, 9)}.${int(2, 254)}`;
		if (r < 0.11) return `/etc/${pick(NAMES)}/${pick(WORDS)}.conf`;
		if (r < 0.12) return pick(['—', 'café', '✓', '“ok”', 'über', '→']);
		if (r < 0.15) return String(int(2, 9000));
		return pick(WORDS);
	};
	const sentence = () => {
		const s = Array.from({ length: int(6, 16) }, word).join(' ');
		return s.charAt(0).toUpperCase() + s.slice(1) + pick(['.', '.', '.', ':', '?', ';']);
	};
	const blocks: (() => string)[] = [
		() => `${'#'.repeat(int(2, 3))} ${pick(NAMES)} ${pick(WORDS)} ${pick(WORDS)}\n\n`,
		() => Array.from({ length: int(2, 5) }, sentence).join(' ') + '\n\n',
		() => Array.from({ length: int(2, 5) }, sentence).join(' ') + '\n\n',
		() => Array.from({ length: int(3, 6) }, (_, i) => `${rand() < 0.5 ? '-' : `${i + 1}.`} ${sentence()}`).join('\n') + '\n\n',
		() =>
			'```bash\n' +
			Array.from({ length: int(2, 5) }, () =>
				pick([
					`pct exec ${int(100, 140)} -- systemctl restart ${pick(NAMES)}`,
					`journalctl -u ${pick(NAMES)} --since "-${int(1, 48)}h" | tail -n ${int(10, 200)}`,
					`zfs list -o name,used,avail rpool/data/subvol-${int(100, 140)}-disk-0`,
					`restic -r sftp:backup@10.0.${int(0, 9)}.${int(2, 254)}:/srv/restic snapshots --latest ${int(1, 9)}`,
					`curl -fsS https://${pick(NAMES)}.lan/health`
				])
			).join('\n') +
			'\n```\n\n',
		() =>
			`| service | ct | memory | state |\n|:--|--:|--:|:--|\n` +
			Array.from(
				{ length: int(3, 6) },
				() => `| ${pick(NAMES)} | ${int(100, 140)} | ${int(1, 16) * 256} MiB | ${pick(['running', 'stopped', 'degraded'])} |`
			).join('\n') +
			'\n\n'
	];
	let out = '';
	while (out.length < chars) out += pick(blocks)();
	return out.slice(0, chars);
}

/** The longest prefix of `s` whose JSON string encoding (without the quotes) fits in `bytes`. */
function fitJson(s: string, bytes: number): string {
	let used = 0;
	let i = 0;
	for (; i < s.length; i++) {
		const b = bytesOf(JSON.stringify(s[i])) - 2;
		if (used + b > bytes) break;
		used += b;
	}
	return s.slice(0, i);
}

type Scenario = { key: string; label: string; prompt: string; responses: ScriptedResponse[]; text: string; toolCalls: number };

function textScenario(): Scenario {
	const text = markdown(TEXT_CHARS, prng(1));
	return {
		key: 'text',
		label: `(a) ${kb(TEXT_CHARS, 0)} KB Markdown reply`,
		prompt: 'write me the runbook for the backup setup',
		responses: [{ text, chunkSize: CHUNK, delayMs: DELAY_MS }],
		text,
		toolCalls: 0
	};
}

function toolsScenario(calls = CALLS, textChars = TOOLS_TEXT_CHARS): Scenario {
	const rand = prng(2);
	const step = Math.floor(textChars / (calls + 1));
	const responses: ScriptedResponse[] = [];
	const texts: string[] = [];
	for (let i = 0; i < calls; i++) {
		const t = markdown(step, rand);
		texts.push(t);
		responses.push({ text: t, toolCalls: [{ name: 'get_entity', args: { id: `lxc:strong/${100 + i}` } }], delayMs: DELAY_MS });
	}
	const last = markdown(textChars - step * calls, rand);
	texts.push(last);
	responses.push({ text: last, chunkSize: TOOL_STEP_CHUNK, delayMs: DELAY_MS });
	return {
		key: 'tools',
		label: `(b) ${calls} calls × ${kb(RESULT_BYTES, 0)} KB + ${kb(textChars, 0)} KB text`,
		prompt: 'go through every container and tell me what its notes say about backups',
		responses,
		text: texts.join(''),
		toolCalls: calls
	};
}

// ------------------------------------------------------------------------ process and cleanup

let tmp: string | undefined;
let pg: EmbeddedPostgres | undefined;
let hub: Hub | undefined;
const doubles: ScriptedLlm[] = [];
const cleanup = exitCleanly({
	log,
	pg: () => pg,
	stop: async () => {
		await hub?.stop().catch(() => undefined);
		await Promise.all(doubles.map((d) => d.close().catch(() => undefined)));
		await disconnectDb().catch(() => undefined);
		await pg?.stop().catch((e: Error) => log(`stopping Postgres: ${e.message}`));
		if (tmp) await fs.rm(tmp, { recursive: true, force: true });
	}
});

// ----------------------------------------------------------------------------- measuring

/** When each model chunk with text was written, by the end offset of its text in the turn's text. */
type Sent = { end: number; at: number };

function chunkRecorder() {
	const sent: Sent[] = [];
	let end = 0;
	return {
		sent,
		reset: () => {
			sent.length = 0;
			end = 0;
		},
		onChunk: (_seq: number, chunk: object) => {
			const content = (chunk as { choices?: { delta?: { content?: string | null } }[] }).choices?.[0]?.delta?.content;
			if (!content) return;
			end += content.length;
			sent.push({ end, at: performance.now() });
		}
	};
}

/** Marks every sent chunk whose text is now within the first `length` characters as shown at `at`. */
function reach(sent: Sent[], shown: number[], length: number, at: number): void {
	while (shown.length < sent.length && sent[shown.length].end <= length) shown.push(at);
}

const textLength = (parts: MessagePart[]) => parts.reduce((n, p) => n + (p.type === 'text' ? p.text.length : 0), 0);

type EventStat = { n: number; bytes: number };

/** One browser tab on the session stream. The observer parses and folds as it reads; the others only read. */
class Tab {
	bytes = 0;
	readonly chunks: Uint8Array[] = [];
	readonly live: Promise<void>;
	// observer only
	lastEventId = 0;
	held: MessageRow | undefined;
	readonly shown: number[] = [];
	readonly byType = new Map<string, EventStat>();
	deltaFraming = 0;
	deltaChunkJson = 0;
	deltas = 0;
	readonly errors: string[] = [];
	readonly observer: { sent: Sent[] } | null;
	#ctrl = new AbortController();
	#reader: ReadableStreamDefaultReader<Uint8Array>;
	#done: Promise<void>;

	constructor(sessionId: string, after: number, observer: { sent: Sent[] } | null) {
		this.observer = observer;
		// An admin's tab: the bench's sessions have no owner (they are the admins', access/sessions.ts).
		const viewer = { id: '00000000-0000-4000-8000-00000000b0b0', role: 'admin' as const };
		const res = eventStreamResponse({ sql: sql(), hub: hub!, after, scope: { sessionId, viewer }, signal: this.#ctrl.signal });
		const reader = res.body!.getReader();
		this.#reader = reader;
		let onLive!: () => void;
		this.live = new Promise((r) => (onLive = r));
		this.#done = (async () => {
			const decoder = new TextDecoder();
			let preamble = '';
			let isLive = false;
			let buf = '';
			for (;;) {
				const { done, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
				if (done) return;
				if (!isLive) {
					// 'retry: …' and ': live' come before anything else (every tab is live before the turn starts).
					preamble += decoder.decode(value, { stream: true });
					if (!preamble.includes(': live\n\n')) continue;
					isLive = true;
					onLive();
					continue;
				}
				this.bytes += value.byteLength;
				this.chunks.push(value);
				if (!observer) continue;
				buf += decoder.decode(value, { stream: true });
				let idx: number;
				while ((idx = buf.indexOf('\n\n')) >= 0) {
					const block = buf.slice(0, idx + 2);
					buf = buf.slice(idx + 2);
					await this.#event(block);
				}
			}
		})();
	}

	async #event(block: string): Promise<void> {
		let id = -1;
		let type = 'comment';
		let data = '';
		for (const line of block.split('\n')) {
			if (line.startsWith('id: ')) id = Number(line.slice(4));
			else if (line.startsWith('event: ')) type = line.slice(7);
			else if (line.startsWith('data: ')) data += line.slice(6);
		}
		const stat = this.byType.get(type) ?? { n: 0, bytes: 0 };
		stat.n++;
		stat.bytes += bytesOf(block);
		this.byType.set(type, stat);
		if (id >= 0) this.lastEventId = id;
		if (!data) return;
		const e = JSON.parse(data) as { payload: Record<string, unknown>; message?: MessageRow };
		if (type === 'message.updated') {
			const m = e.message;
			if (m && m.role === 'assistant' && newerSnapshot(this.held, m)) this.held = m;
		} else if (type === 'message.delta') {
			const d = e.payload as MessageDelta;
			this.deltas++;
			const chunkJson = bytesOf(JSON.stringify(d.chunks));
			this.deltaChunkJson += chunkJson;
			this.deltaFraming += bytesOf(block) - chunkJson;
			const next = await applyDelta(this.held, d);
			if (next === 'gap') this.errors.push(`gap at rev ${d.rev} (held ${this.held?.rev})`);
			else if (next !== 'skip') this.held = next;
			// The text is on screen once the fold that carries it is done.
			if (this.held) reach(this.observer!.sent, this.shown, textLength(this.held.parts), performance.now());
		}
	}

	async close(): Promise<void> {
		this.#ctrl.abort();
		await this.#reader.cancel().catch(() => undefined);
		await this.#done;
	}
}

/** Reads the model's own stream like a client of the model server would: fetch, SSE, text deltas. */
async function readModelDirectly(baseURL: string, requests: number, sent: Sent[], shown: number[]): Promise<void> {
	let length = 0;
	for (let i = 0; i < requests; i++) {
		const res = await fetch(`${baseURL}/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'scripted', stream: true, messages: [{ role: 'user', content: 'bench' }] })
		});
		const reader = res.body!.getReader();
		const decoder = new TextDecoder();
		let buf = '';
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			buf += decoder.decode(value, { stream: true });
			let idx: number;
			while ((idx = buf.indexOf('\n\n')) >= 0) {
				const line = buf.slice(0, idx);
				buf = buf.slice(idx + 2);
				if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
				const c = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string | null } }[] };
				length += c.choices?.[0]?.delta?.content?.length ?? 0;
				reach(sent, shown, length, performance.now());
			}
		}
	}
}

function quantile(xs: number[], p: number): number {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? NaN;
}

async function walLsn(): Promise<string> {
	// Settled: everything inserted is also written, so pg_current_wal_lsn() covers it.
	for (let i = 0; i < 50; i++) {
		const [r] = await sql()<{ w: string; i: string }[]>`select pg_current_wal_lsn()::text as w, pg_current_wal_insert_lsn()::text as i`;
		if (r.w === r.i) return r.w;
		await sleep(20);
	}
	const [r] = await sql()<{ w: string }[]>`select pg_current_wal_lsn()::text as w`;
	return r.w;
}

type WalRow = { what: string; records: number; bytes: number; fpi: number };

/** The WAL between two LSNs by relation (first block a record touches) or, without one, by record type. */
async function walBreakdown(from: string, to: string): Promise<WalRow[]> {
	const rows = await sql()<WalRow[]>`
		with b as (
			select distinct on (start_lsn) start_lsn, reltablespace, relfilenode, reldatabase, relforknumber
			from pg_get_wal_block_info(${from}::pg_lsn, ${to}::pg_lsn, false)
			order by start_lsn, block_id),
		r as (
			select start_lsn, resource_manager as rm, record_type, record_length, fpi_length
			from pg_get_wal_records_info(${from}::pg_lsn, ${to}::pg_lsn)),
		j as (
			select r.*, b.relforknumber, case when b.relfilenode is null then null
				when b.reldatabase = 0 then 'shared catalogs'
				else coalesce(pg_filenode_relation(b.reltablespace, b.relfilenode)::text, 'relfilenode ' || b.relfilenode) end as rel
			from r left join b using (start_lsn)),
		named as (
			select *, case
				when rel ~ '^pg_toast\\.pg_toast_\\d+_index$' then (substring(rel from 'pg_toast_(\\d+)')::oid::regclass)::text || ' TOAST index'
				when rel ~ '^pg_toast\\.pg_toast_\\d+$' then (substring(rel from 'pg_toast_(\\d+)')::oid::regclass)::text || ' TOAST'
				when rel is null then rm || ' ' || record_type
				else rel end
				|| case relforknumber when 1 then ' (free space map)' when 2 then ' (visibility map)' else '' end as what
			from j)
		select what, count(*)::int as records, sum(record_length)::float8 as bytes, sum(fpi_length)::float8 as fpi
		from named group by what order by sum(record_length) desc`;
	return rows;
}

type Result = {
	scenario: Scenario;
	tabs: number;
	turnMs: number;
	finalBytes: number;
	sseBytes: number;
	walBytes: number;
	wal: WalRow[];
	events: number;
	eventPayloadBytes: number;
	deltas: number;
	deltaFraming: number;
	deltaChunkJson: number;
	byType: Map<string, EventStat>;
	screen: number[];
	direct: number[];
	chunks: number;
	/** The model's text rate as sent, KB/s. */
	pace: number;
};

async function newSession(text: string): Promise<string> {
	return sql().begin<string>(async (tx) => {
		const id = await createSession(tx, null, 'bench stream');
		await insertMessage(tx, { sessionId: id, role: 'user', parts: [{ type: 'text', text }], status: 'complete', origin: 'chat' });
		return id;
	});
}

async function measure(
	scenario: Scenario,
	tabCount: number,
	models: { llm: ScriptedLlm; direct: ScriptedLlm; rec: ReturnType<typeof chunkRecorder>; directRec: ReturnType<typeof chunkRecorder> }
): Promise<Result> {
	const { llm, direct, rec, directRec } = models;
	const sessionId = await newSession(scenario.prompt);
	llm.reset();
	direct.reset();
	rec.reset();
	directRec.reset();
	llm.push(...scenario.responses);
	direct.push(...scenario.responses);

	const after = await latestEventId(sql());
	const tabs = Array.from({ length: tabCount }, (_, i) => new Tab(sessionId, after, i === tabCount - 1 ? rec : null));
	const observer = tabs[tabCount - 1];
	await Promise.all(tabs.map((t) => t.live));
	if (CHECKPOINT_EACH) await sql()`checkpoint`;
	await sleep(200);
	const lsn0 = await walLsn();

	const directShown: number[] = [];
	const started = performance.now();
	const directRead = readModelDirectly(direct.baseURL, scenario.responses.length, directRec.sent, directShown);
	const turn = await runTurn({ sessionId, origin: 'chat' });
	const turnMs = performance.now() - started;
	const lastId = await latestEventId(sql());
	for (const until = Date.now() + 30_000; observer.lastEventId < lastId;) {
		if (Date.now() > until) throw new Error(`the observing tab stopped at event ${observer.lastEventId} of ${lastId}`);
		await sleep(5);
	}
	const sseBytes = observer.bytes;
	for (const until = Date.now() + 30_000; tabs.some((t) => t.bytes < sseBytes);) {
		if (Date.now() > until) throw new Error('a tab did not receive the whole turn within 30 s');
		await sleep(5);
	}
	const lsn1 = await walLsn();
	await directRead;
	await Promise.all(tabs.map((t) => t.close()));

	const [{ diff }] = await sql()<{ diff: number }[]>`select pg_wal_lsn_diff(${lsn1}::pg_lsn, ${lsn0}::pg_lsn)::float8 as diff`;
	const wal = await walBreakdown(lsn0, lsn1);
	if (process.env.BENCH_DEBUG) {
		const fpis =
			await sql()`select start_lsn::text, resource_manager, record_type, record_length, fpi_length, block_ref from pg_get_wal_records_info(${lsn0}::pg_lsn, ${lsn1}::pg_lsn) where fpi_length > 0`;
		for (const f of fpis) debug(JSON.stringify(f));
	}
	const [ev] = await sql()<{ n: number; bytes: number }[]>`
		select count(*)::int as n, coalesce(sum(pg_column_size(payload)), 0)::float8 as bytes from events where id > ${after}`;

	// Checks: the turn, the observer's fold against the stored message, every tab's bytes.
	if (turn.status !== 'complete') throw new Error(`${scenario.key} × ${tabCount}: the turn ended ${turn.status}`);
	const stored = await getMessage(sql(), turn.messageId);
	if (!stored) throw new Error('the assistant message is missing');
	if (observer.errors.length) throw new Error(`observer: ${observer.errors.join('; ')}`);
	const want = canonicalJson({ parts: stored.parts, status: stored.status, rev: stored.rev });
	const got = observer.held && canonicalJson({ parts: observer.held.parts, status: observer.held.status, rev: observer.held.rev });
	if (got !== want) throw new Error(`${scenario.key} × ${tabCount}: the observing tab's message differs from the stored one`);
	const storedText = stored.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
	if (storedText !== scenario.text)
		throw new Error(`${scenario.key}: stored text differs from the model's (${storedText.length} vs ${scenario.text.length} chars)`);
	const calls = stored.parts.filter((p) => p.type === 'tool-get_entity' && 'state' in p && p.state === 'output-available').length;
	if (calls !== scenario.toolCalls) throw new Error(`${scenario.key}: ${calls} finished get_entity calls, expected ${scenario.toolCalls}`);
	const mine = Buffer.concat(observer.chunks);
	for (const [i, t] of tabs.entries()) {
		if (!Buffer.concat(t.chunks).equals(mine)) throw new Error(`${scenario.key} × ${tabCount}: tab ${i} received other bytes than the observer`);
	}
	if (rec.sent.length !== observer.shown.length) throw new Error(`${scenario.key}: ${observer.shown.length} of ${rec.sent.length} chunks reached the screen`);
	if (directRec.sent.length !== directShown.length)
		throw new Error(`${scenario.key}: the direct reader saw ${directShown.length} of ${directRec.sent.length} chunks`);

	return {
		scenario,
		tabs: tabCount,
		turnMs,
		finalBytes: bytesOf(JSON.stringify(stored.parts)),
		sseBytes,
		walBytes: diff,
		wal,
		events: ev.n,
		eventPayloadBytes: ev.bytes,
		deltas: observer.deltas,
		deltaFraming: observer.deltaFraming,
		deltaChunkJson: observer.deltaChunkJson,
		byType: observer.byType,
		screen: observer.shown.map((at, i) => at - rec.sent[i].at),
		direct: directShown.map((at, i) => at - directRec.sent[i].at),
		chunks: rec.sent.length,
		pace: rec.sent.length > 1 ? rec.sent[rec.sent.length - 1].end / 1024 / ((rec.sent[rec.sent.length - 1].at - rec.sent[0].at) / 1000) : NaN
	};
}

// ------------------------------------------------------------------------------------ run

async function seedContainers(calls: number): Promise<void> {
	const rand = prng(3);
	// The inventory is written only for a configured host. Without a pinned key the tools never
	// read it over SSH, so the seeded rows are what get_entity answers from.
	await sql()`insert into hosts (name, address, key_path) values ('strong', '192.0.2.10', '/nonexistent')`;
	const rows: InventoryRow[] = Array.from({ length: calls }, (_, i) => ({
		kind: 'lxc',
		external_id: `strong/${100 + i}`,
		name: `${NAMES[i % NAMES.length]}-${i}`,
		host_name: 'strong',
		attributes: {
			vmid: 100 + i,
			status: 'running',
			cpus: 2,
			maxmem: 2147483648,
			maxdisk: 8589934592,
			uptimeSec: 86400 * 3 + i,
			ostype: 'debian',
			ip: `10.0.1.${10 + i}`
		}
	}));
	await replaceHostInventory(sql(), 'strong', rows, calls);
	for (const row of rows) {
		const r = await resolveEntity(sql(), `lxc:${row.external_id}`);
		if (!r.ok) throw new Error(`seeded ${row.external_id} is not there`);
		// The tool's result is entityDetail(entity): make the notes fill it to RESULT_BYTES.
		const base = bytesOf(JSON.stringify(entityDetail({ ...r.entity, notes: '' })));
		const notes = fitJson(markdown(RESULT_BYTES * 2, rand), RESULT_BYTES - base);
		await sql()`update entities set notes = ${notes} where id = ${r.entity.id}`;
	}
}

async function main(): Promise<number> {
	log(`${os.cpus().length} CPUs, load average ${loadAverage()}`);
	tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-bench-stream-'));
	pg = await startEmbeddedPostgres({ dataDir: tmp, port: await freePort(), log: (l) => log(`postgres: ${l}`) });
	await runMigrations(pg.url);
	connectDb(pg.url);
	// Nothing but the turn writes while WAL is measured: no autovacuum, no timed checkpoint.
	await sql()`alter system set autovacuum = off`;
	await sql()`alter system set checkpoint_timeout = '1h'`;
	await sql()`select pg_reload_conf()`;
	await sql()`create extension if not exists pg_walinspect`;
	const [settings] = await sql()<{ checksums: string; fpw: string; compression: string; toast: string }[]>`
		select current_setting('data_checksums') as checksums, current_setting('full_page_writes') as fpw,
			current_setting('wal_compression') as compression, current_setting('default_toast_compression') as toast`;
	log(
		`embedded Postgres in ${tmp} (data_checksums ${settings.checksums}, full_page_writes ${settings.fpw}, wal_compression ${settings.compression}, toast ${settings.toast})`
	);

	const rec = chunkRecorder();
	const directRec = chunkRecorder();
	const llm = await startScriptedLlm({ onChunk: rec.onChunk });
	const direct = await startScriptedLlm({ onChunk: directRec.onChunk });
	doubles.push(llm, direct);
	Object.assign(process.env, {
		DATABASE_URL: pg.url,
		OPENAI_BASE_URL: llm.baseURL,
		OPENAI_API_KEY: 'bench',
		NOMOS_MODEL: 'scripted',
		NOMOS_KNOWLEDGE_DIR: '',
		// The tools scenario's calls, plus the closing text.
		NOMOS_MAX_STEPS: String(CALLS + 2)
	});
	resetEnvCache();
	hub = new Hub(sql());
	await hub.start();

	await seedContainers(CALLS);
	await sql().unsafe('vacuum (freeze, analyze)');
	await sql()`checkpoint`;
	const models = { llm, direct, rec, directRec };
	const scenarios = SCENARIOS.map((s) => (s === 'text' ? textScenario() : toolsScenario()));
	// Each scenario once, unmeasured: one-time work (module code, the first touch of a page after
	// the checkpoint, free space map pages included) is then not in the measured turns.
	for (const s of scenarios) await measure(s, 1, models);
	log('warm-up turns done');
	const results: Result[] = [];
	const load0 = loadAverage();
	for (const s of scenarios) {
		for (const n of TABS) {
			const r = await measure(s, n, models);
			results.push(r);
			log(`${s.label}, ${n} tab${n === 1 ? '' : 's'}: turn ${(r.turnMs / 1000).toFixed(1)} s, ${r.deltas} deltas`);
		}
	}
	const load1 = loadAverage();

	// ------------------------------------------------------------------------------- printing
	const pad = (s: string, n: number) => s.padEnd(n);
	const num1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '—');
	const ratio = (x: number) => `${x.toFixed(2)}×`;
	console.log('');
	console.log(`Streaming turn (issue #14): scripted model in this process, ${DELAY_MS} ms between chunks`);
	for (const s of scenarios) {
		if (s.key === 'text')
			console.log(
				`  (a) one ${kb(TEXT_CHARS, 0)} KB Markdown reply in ${CHUNK}-char chunks every ${DELAY_MS} ms (nominally ${(((CHUNK / Math.max(DELAY_MS, 0.25)) * 1000) / 1024).toFixed(1)} KB/s; "model KB/s" is what was sent)`
			);
		else
			console.log(
				`  (b) ${CALLS} steps, each ≈ ${Math.floor(TOOLS_TEXT_CHARS / (CALLS + 1))} chars of text (${TOOL_STEP_CHUNK}-char chunks every ${DELAY_MS} ms) and one get_entity call with a ${kb(RESULT_BYTES, 0)} KB result, then a closing text: ${kb(TOOLS_TEXT_CHARS, 0)} KB text in all`
			);
	}
	console.log(`${os.cpus().length} CPUs; load average ${load0} before, ${load1} after${CHECKPOINT_EACH ? '; CHECKPOINT before every turn' : ''}`);
	console.log('');
	const head = [
		'scenario',
		'tabs',
		'turn s',
		'model KB/s',
		'deltas',
		'final KB',
		'SSE KB (1 stream)',
		'SSE ÷ final',
		'WAL KB',
		'WAL ÷ final',
		'screen p50 / p99 ms',
		'direct p50 / p99 ms'
	];
	const rows = results.map((r) => [
		r.scenario.key === 'text' ? '(a) text' : '(b) tools',
		String(r.tabs),
		(r.turnMs / 1000).toFixed(1),
		r.pace.toFixed(1),
		String(r.deltas),
		kb(r.finalBytes),
		kb(r.sseBytes),
		ratio(r.sseBytes / r.finalBytes),
		kb(r.walBytes),
		ratio(r.walBytes / r.finalBytes),
		`${num1(quantile(r.screen, 0.5))} / ${num1(quantile(r.screen, 0.99))}`,
		`${num1(quantile(r.direct, 0.5))} / ${num1(quantile(r.direct, 0.99))}`
	]);
	const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
	const line = (cells: string[]) => `| ${cells.map((c, i) => (i < 2 ? pad(c, widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
	console.log(line(head));
	console.log(`|${widths.map((w, i) => (i < 2 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
	for (const r of rows) console.log(line(r));
	console.log('');
	console.log('Goals: SSE ≤ 1.5× the final message, WAL ≤ 5×.');
	for (const r of results) {
		const misses = [
			r.sseBytes / r.finalBytes > 1.5 ? `SSE ${ratio(r.sseBytes / r.finalBytes)}` : '',
			r.walBytes / r.finalBytes > 5 ? `WAL ${ratio(r.walBytes / r.finalBytes)}` : ''
		].filter(Boolean);
		if (misses.length) console.log(`  missed: ${r.scenario.key} × ${r.tabs}: ${misses.join(', ')}`);
	}

	// Where the SSE bytes go (the observing tab).
	console.log('');
	console.log("SSE bytes on one stream: per delta, the framing (SSE lines, event id/type, messageId, rev) and the chunks' JSON:");
	for (const r of results) {
		const other = [...r.byType]
			.filter(([t]) => t !== 'message.delta')
			.map(([t, s]) => `${t} ×${s.n} ${kb(s.bytes)} KB`)
			.join(', ');
		console.log(
			`  ${r.scenario.key} × ${r.tabs}: ${r.deltas} deltas: framing ${kb(r.deltaFraming)} KB (${Math.round(r.deltaFraming / Math.max(1, r.deltas))} B each) + chunks ${kb(r.deltaChunkJson)} KB (${Math.round(r.deltaChunkJson / Math.max(1, r.deltas))} B each); other: ${other || 'none'}`
		);
	}

	// Where the WAL goes.
	console.log('');
	console.log('WAL by relation (first block of each record) or record type, KB (of which full-page images):');
	const whats = [...new Set(results.flatMap((r) => r.wal.map((w) => w.what)))];
	const total = (w: string) => results.reduce((n, r) => n + (r.wal.find((x) => x.what === w)?.bytes ?? 0), 0);
	whats.sort((a, b) => total(b) - total(a));
	const cols = results.map((r) => `${r.scenario.key} × ${r.tabs}`);
	const ww = Math.max(30, ...whats.map((w) => w.length));
	const cw = Math.max(...cols.map((c) => c.length), 16);
	console.log(`| ${pad('', ww)} | ${cols.map((c) => c.padStart(cw)).join(' | ')} |`);
	console.log(`|:${'-'.repeat(ww + 1)}|${cols.map(() => `${'-'.repeat(cw + 1)}:`).join('|')}|`);
	const cell = (w: WalRow | undefined) => (w ? `${kb(w.bytes)}${w.fpi ? ` (${kb(w.fpi)})` : ''}` : '—');
	for (const w of whats) {
		if (total(w) < 1024 * 0.05 * results.length) continue;
		console.log(`| ${pad(w, ww)} | ${results.map((r) => cell(r.wal.find((x) => x.what === w)).padStart(cw)).join(' | ')} |`);
	}
	const small = (r: Result) => r.wal.filter((w) => total(w.what) < 1024 * 0.05 * results.length).reduce((n, w) => n + w.bytes, 0);
	console.log(`| ${pad('other (smaller)', ww)} | ${results.map((r) => kb(small(r)).padStart(cw)).join(' | ')} |`);
	const recorded = (r: Result) => r.wal.reduce((n, w) => n + w.bytes, 0);
	console.log(`| ${pad('alignment, page headers', ww)} | ${results.map((r) => kb(r.walBytes - recorded(r)).padStart(cw)).join(' | ')} |`);
	console.log(`| ${pad('total (pg_wal_lsn_diff)', ww)} | ${results.map((r) => kb(r.walBytes).padStart(cw)).join(' | ')} |`);
	console.log(`| ${pad('records', ww)} | ${results.map((r) => String(r.wal.reduce((n, w) => n + w.records, 0)).padStart(cw)).join(' | ')} |`);
	console.log(`| ${pad('event rows / their payload KB', ww)} | ${results.map((r) => `${r.events} / ${kb(r.eventPayloadBytes)}`.padStart(cw)).join(' | ')} |`);
	console.log(
		`| ${pad('WAL per event row, B', ww)} | ${results.map((r) => String(Math.round(r.walBytes / Math.max(1, r.events))).padStart(cw)).join(' | ')} |`
	);
	console.log('');
	const chunks = results.map((r) => `${r.scenario.key} × ${r.tabs}: ${r.chunks}`).join(', ');
	log(`ok: every tab received the same bytes and folded to the stored message; model chunks timed: ${chunks}`);
	return 0;
}

const watchdog = setTimeout(() => {
	log(`still running after ${WATCHDOG_MS / 60_000} min: stopping`);
	void cleanup().finally(() => process.exit(1));
}, WATCHDOG_MS);
watchdog.unref();

let code = 1;
try {
	code = await main();
} catch (e) {
	console.error(`[bench] failed: ${(e as Error).stack ?? String(e)}`);
} finally {
	await cleanup();
}
process.exit(code);
