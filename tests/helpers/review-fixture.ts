// Session-review fixtures: the real failed "deploy TypeType" session (10 messages, 150 tool
// calls, pct_create missing from the catalogue) and a few healthier sessions to rank it against.
// Works with any postgres.js client (the app's pool in integration tests, the e2e `sql` fixture).
// Parts are the AI SDK's UIMessage parts, as the app stores them (src/lib/types/messages.ts).
import type { Sql } from 'postgres';
import { refreshSessionsFacts } from '../../src/lib/server/db/queries/review-facts';
import type { MessagePart } from '../../src/lib/types/messages';

type Part = MessagePart;

type Msg = { role: 'user' | 'assistant' | 'system'; parts: Part[]; status?: string; origin?: string };

const VALID_ACTIONS_HINT =
	'valid actions: pct_status, pct_config, service_status, restart, systemctl, pct_exec, apt_upgrade. pct_exec (config_mutation): run a command inside a container; …';

const text = (t: string): Part => ({ type: 'text', text: t });
const user = (t: string): Msg => ({ role: 'user', parts: [text(t)] });

const note = (kind: string, t: string): Part => ({ type: 'data-note', data: { kind, text: t } });

/**
 * A tool-call factory numbering calls per message: a finished `tool-<name>` part
 * (output-available), or output-error with `errorText` when one is given.
 */
function calls(msg: number) {
	let k = 0;
	return (toolName: string, input: unknown, output: unknown = { ok: true }, errorText?: string): Part => {
		const base = { type: `tool-${toolName}` as const, toolCallId: `call_${msg}_${k++}`, input };
		return errorText === undefined ? ({ ...base, state: 'output-available', output } as Part) : ({ ...base, state: 'output-error', errorText } as Part);
	};
}

/**
 * An assistant message's parts with step-start parts where the SDK's stream puts them: first,
 * and before a text that follows tool calls (notes in between do not count).
 */
function withSteps(parts: Part[]): Part[] {
	const out: Part[] = [];
	let prev: string | undefined;
	for (const [i, p] of parts.entries()) {
		if (i === 0 || (p.type === 'text' && prev?.startsWith('tool-'))) out.push({ type: 'step-start' });
		out.push(p);
		if (p.type !== 'data-note') prev = p.type;
	}
	return out;
}

/** Timestamps go over the wire as ISO text: the app's client has no Date serialiser. */
function iso(d: Date): string;
function iso(d: Date | undefined): string | null;
function iso(d: Date | undefined): string | null {
	return d ? d.toISOString() : null;
}
const plus = (d: Date, minutes: number) => new Date(d.getTime() + minutes * 60_000);
const repeat = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const unknownPctCreate = { error: "unknown action 'pct_create'", hint: VALID_ACTIONS_HINT };
const pctCreateInput = (i: number) => ({
	target: 'strong',
	action: 'pct_create',
	params: { hostname: 'typetype', template: 'debian-12-standard', cores: 2, memory: 2048 + i },
	reason: 'create the TypeType container'
});
const search = (q: string) => ({ query: q });
const hits = (q: string) => ({ results: [{ title: `Notes: ${q}`, snippet: 'No deployment notes for this yet.' }] });

function failedSessionMessages(): Msg[] {
	const m1 = calls(1);
	const m3 = calls(3);
	const m5 = calls(5);
	const m7 = calls(7);
	const m9 = calls(9);
	return [
		user('deploy TypeType on strong as LXC'),
		{
			role: 'assistant',
			parts: [
				text('Let me look at strong and what already runs there.'),
				m1('get_state_snapshot', {}, { hosts: [{ name: 'strong', status: 'online', containers: 20 }] }),
				...repeat(2, () => m1('list_lxcs', { host: 'strong' }, { containers: 20 })),
				// The N+1: one get_entity per container instead of one list_lxcs.
				...repeat(20, (i) => m1('get_entity', { id: `lxc:strong/${101 + i}` }, { ref: `lxc:strong/${101 + i}`, status: 'running' })),
				...repeat(12, (i) => m1('search_knowledge', search(`typetype ${i}`), hits('typetype'))),
				m1('http_get', { url: 'https://github.com/TypeType' }, undefined, 'HTTP 404 from github.com'),
				...repeat(2, () => m1('http_get', { url: 'https://typetype.example' }, { status: 200, body: '…' })),
				...repeat(2, () => m1('list_entities', { kind: 'lxc', query: 'typetype' }, { entities: [] })),
				text('strong runs 20 containers and none of them is TypeType. Where does TypeType come from, and which domain should it use?')
			]
		},
		user("it's github.com/Priveetee/TypeType, use tube.hubris.network"),
		{
			role: 'assistant',
			parts: [
				...repeat(2, (i) => m3('search_knowledge', search(i ? 'tube.hubris.network' : 'Priveetee TypeType'), hits('tube'))),
				text('Thanks. There are no notes on tube.hubris.network yet; I will prepare a Debian container for TypeType on strong.')
			]
		},
		user('continue'),
		{
			role: 'assistant',
			parts: [
				text('Creating an LXC for TypeType on strong.'),
				...repeat(32, (i) => m5('search_knowledge', search(`lxc create ${i}`), hits('lxc'))),
				...repeat(10, (i) => m5('request_execution', pctCreateInput(i), unknownPctCreate)),
				...repeat(2, () =>
					m5(
						'request_execution',
						{ target: 'strong', action: 'pct_exec', params: {}, reason: 'clone' },
						{ error: 'bad params for pct_exec: command: required', hint: 'fields of pct_exec: vmid, command' }
					)
				),
				m5(
					'request_execution',
					{ target: 'lxc:strong/120', action: 'pct_exec', params: { command: 'git clone https://github.com/Priveetee/TypeType' }, reason: 'fetch the code' },
					{ status: 'awaiting_approval', executionId: 'pending' }
				),
				m5(
					'request_execution',
					{ target: 'strong', action: 'apt_upgrade', params: {}, reason: 'update the host first' },
					{ status: 'awaiting_approval', executionId: 'pending' }
				),
				...repeat(6, () => m5('http_get', { url: 'https://github.com/Priveetee/TypeType' }, { status: 200, body: 'README …' })),
				...repeat(4, (i) => m5('get_lxc_state', { vmid: String(118 + i) }, { status: 'running' })),
				...repeat(2, () => m5('list_lxcs', { host: 'strong' }, { containers: 20 })),
				...repeat(2, () => m5('get_execution_status', { id: 'pending' }, { status: 'awaiting_approval' })),
				text(
					'The executor refused to create the container. I asked to run the clone in an existing container and to update strong; both wait for your approval.'
				)
			]
		},
		user('continue'),
		{
			role: 'assistant',
			parts: [
				...repeat(21, (i) => m7('search_knowledge', search(`typetype install ${i}`), hits('install'))),
				...repeat(8, () => m7('http_get', { url: 'https://raw.githubusercontent.com/Priveetee/TypeType/main/README.md' }, { status: 200, body: '…' })),
				...repeat(3, (i) => m7('get_lxc_state', { vmid: String(118 + i) }, { status: 'running' })),
				...repeat(4, () => m7('get_execution_status', { id: 'pending' }, { status: 'failed', error: 'exit 127: git: command not found' })),
				...repeat(2, (i) => m7('request_execution', pctCreateInput(100 + i), unknownPctCreate)),
				...repeat(2, () =>
					m7(
						'request_execution',
						{ target: 'lxc:strong/120', action: 'apt_upgrade', params: {}, reason: 'install git' },
						{ status: 'awaiting_approval', executionId: 'pending' }
					)
				),
				...repeat(2, () => m7('list_lxcs', { host: 'strong' }, { containers: 20 })),
				...repeat(2, (i) => m7('get_entity', { id: `lxc:strong/${118 + i}` }, { status: 'running' })),
				text('The git clone in container 120 failed: git is not installed there. Creating a fresh container is still refused.')
			]
		},
		user('run all yourself'),
		{
			role: 'assistant',
			parts: [
				m9('list_lxcs', { host: 'strong' }, { containers: 20 }),
				m9('get_execution_status', { id: 'pending' }, { status: 'denied' }),
				m9('request_execution', pctCreateInput(200), unknownPctCreate),
				m9('search_knowledge', search('pct create'), hits('pct')),
				text(
					"I can't run pct create — only pct_exec, systemctl, restart, apt_upgrade. Please create the container on strong yourself; then I can install TypeType in it."
				)
			]
		}
	];
}

export interface SessionFixtureOptions {
	/** When the session started (default: 3 hours ago). */
	at?: Date;
	title?: string;
}

async function insertSession(sql: Sql, title: string, at: Date, msgs: Msg[], stepMinutes = 4): Promise<{ id: string; times: Date[] }> {
	const [s] = await sql<{ id: string }[]>`
		insert into chat_sessions (title, created_at, updated_at) values (${title}, ${iso(at)}::timestamptz, ${iso(at)}::timestamptz) returning id`;
	await sql`insert into tasks (session_id, goal, state) values (${s.id}, ${title}, 'executing')`;
	const times: Date[] = [];
	for (const [i, m] of msgs.entries()) {
		const t = new Date(at.getTime() + i * stepMinutes * 60_000);
		times.push(t);
		await sql`
			insert into messages (session_id, role, parts, status, origin, created_at, updated_at)
			values (${s.id}, ${m.role}, ${JSON.stringify(m.role === 'assistant' ? withSteps(m.parts) : m.parts)}::text::jsonb, ${m.status ?? 'complete'},
				${m.origin ?? 'chat'}, ${iso(t)}::timestamptz, ${iso(t)}::timestamptz)`;
	}
	await sql`update chat_sessions set updated_at = ${iso(times[times.length - 1] ?? at)}::timestamptz where id = ${s.id}`;
	// Rows written with SQL get their review facts the way the app's writers give them theirs.
	await refreshSessionsFacts(sql, [s.id]);
	return { id: s.id, times };
}

async function insertExecution(
	sql: Sql,
	e: { session: string; action: string; target: string; status: string; at: Date; finished?: Date; approved?: Date; error?: string; result?: string }
): Promise<string> {
	const [row] = await sql<{ id: string }[]>`
		insert into executions (requested_by_session, target, action, classification, hash, status, error, result,
			created_at, approved_at, finished_at)
		values (${e.session}, ${e.target}, ${e.action}, 'config_mutation', ${'fixture-' + Math.random().toString(36).slice(2)},
			${e.status}, ${e.error ?? null}, ${e.result ?? null}, ${iso(e.at)}::timestamptz,
			${iso(e.approved)}::timestamptz, ${iso(e.finished)}::timestamptz)
		returning id`;
	return row.id;
}

/**
 * The real failed session: the operator asked for TypeType on strong as an LXC, the agent
 * made 150 tool calls over 5 turns (get_entity ×20 in message 1), request_execution kept
 * answering "unknown action 'pct_create'", the operator typed "continue" twice and
 * "run all yourself", and the last answer was "I can't run pct create — only …".
 * Returns the session id.
 */
export async function insertFailedSessionFixture(sql: Sql, opts: SessionFixtureOptions = {}): Promise<string> {
	const at = opts.at ?? new Date(Date.now() - 3 * 3600_000);
	const { id, times } = await insertSession(sql, opts.title ?? 'deploy TypeType on strong as LXC', at, failedSessionMessages());
	// Requested in message 5; the clone failed (reported in message 7), the others were refused or lapsed.
	await insertExecution(sql, {
		session: id,
		action: 'pct_exec',
		target: 'lxc:strong/120',
		status: 'failed',
		at: plus(times[5], 1),
		approved: plus(times[5], 2),
		finished: plus(times[5], 3),
		error: 'exit 127: git: command not found'
	});
	await insertExecution(sql, { session: id, action: 'apt_upgrade', target: 'strong', status: 'denied', at: plus(times[5], 1), finished: plus(times[6], 0) });
	await insertExecution(sql, {
		session: id,
		action: 'apt_upgrade',
		target: 'lxc:strong/120',
		status: 'expired',
		at: plus(times[7], 1),
		finished: plus(times[9], 1)
	});
	await sql`update tasks set state = 'failed' where session_id = ${id}`;
	return id;
}

/** A session that reached its goal: one bulk read, one approved restart, a success report. */
export async function insertHealthySessionFixture(sql: Sql, opts: SessionFixtureOptions = {}): Promise<string> {
	const at = opts.at ?? new Date(Date.now() - 2 * 3600_000);
	const c = calls(1);
	const { id, times } = await insertSession(sql, opts.title ?? 'restart caddy', at, [
		user('caddy seems stuck, restart it'),
		{
			role: 'assistant',
			parts: [
				c('list_lxcs', { host: 'strong' }, { containers: 3 }),
				c('request_execution', { target: 'lxc:strong/100', action: 'restart', params: { unit: 'caddy' }, reason: 'stuck' }, { status: 'awaiting_approval' }),
				text('I asked to restart caddy in container 100; approve it and I will check it.')
			]
		},
		{ role: 'system', origin: 'continuation', parts: [note('execution', 'restart caddy succeeded')] },
		{
			role: 'assistant',
			origin: 'continuation',
			parts: [c('get_lxc_state', { vmid: '100' }, { status: 'running' }), text('Done: caddy restarted successfully and is running again.')]
		}
	]);
	await insertExecution(sql, {
		session: id,
		action: 'restart',
		target: 'lxc:strong/100',
		status: 'succeeded',
		at: plus(times[1], 1),
		approved: plus(times[1], 1),
		finished: plus(times[1], 2),
		result: 'ok'
	});
	await sql`update tasks set state = 'completed' where session_id = ${id}`;
	return id;
}

/** A mildly bad session: one nudge, a few per-container reads, goal reached. */
export async function insertNudgedSessionFixture(sql: Sql, opts: SessionFixtureOptions = {}): Promise<string> {
	const at = opts.at ?? new Date(Date.now() - 1 * 3600_000);
	const c = calls(1);
	const d = calls(3);
	const { id, times } = await insertSession(sql, opts.title ?? 'upgrade media', at, [
		user('upgrade packages on media'),
		{
			role: 'assistant',
			parts: [
				...repeat(6, (i) => c('get_lxc_state', { vmid: String(100 + i) }, { status: 'running' })),
				text('media is container 101. Shall I go on with apt upgrade?')
			]
		},
		user('go on'),
		{
			role: 'assistant',
			parts: [
				d('request_execution', { target: 'lxc:strong/101', action: 'apt_upgrade', params: {}, reason: 'asked' }, { status: 'awaiting_approval' }),
				text('Upgrade completed: 12 packages upgraded on media.')
			]
		}
	]);
	await insertExecution(sql, {
		session: id,
		action: 'apt_upgrade',
		target: 'lxc:strong/101',
		status: 'succeeded',
		at: plus(times[3], 1),
		approved: plus(times[3], 1),
		finished: plus(times[3], 3),
		result: '12 upgraded'
	});
	return id;
}

/** A session where an execution failed and nobody said so, and a question was left open. */
export async function insertSilentSessionFixture(sql: Sql, opts: SessionFixtureOptions = {}): Promise<string> {
	const at = opts.at ?? new Date(Date.now() - 5 * 3600_000);
	const c = calls(1);
	const { id, times } = await insertSession(sql, opts.title ?? 'backup check', at, [
		user('check the backup container'),
		{
			role: 'assistant',
			parts: [
				c('get_lxc_state', { vmid: '102' }, { status: 'stopped' }),
				c('request_execution', { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'start it' }, { status: 'awaiting_approval' }),
				text('backup (102) is stopped; I asked to start it.')
			]
		},
		{ role: 'assistant', origin: 'continuation', parts: [text('Checking on the backup container now.')] }
	]);
	await insertExecution(sql, {
		session: id,
		action: 'pct_start',
		target: 'lxc:strong/102',
		status: 'failed',
		at: plus(times[1], 1),
		approved: plus(times[1], 1),
		finished: plus(times[1], 2),
		error: 'storage backup-zfs is not online'
	});
	await sql`insert into session_questions (session_id, prompt, status, created_at)
		values (${id}, 'Which storage should backup use?', 'open', ${iso(plus(times[2], 1))}::timestamptz)`;
	return id;
}
