import type { TransactionSql } from 'postgres';
import type { Sql } from '../index';
import type { chatSessions, messages, OperatorRole, SessionSharing, SessionTitledBy, tasks, TaskState } from '../schema';
import { emitEvent } from './events';

type SessionColumns = typeof chatSessions.$inferSelect;
type MessageColumns = typeof messages.$inferSelect;
/** A session's task state, from its `tasks` row (null: it has none). */
type TaskStateColumn = { taskState: (typeof tasks.$inferSelect)['state'] | null };
type SessionId = Pick<SessionColumns, 'id'>;

/** `updatedAt`: ISO 8601. */
export type SessionSummary = Pick<SessionColumns, 'id' | 'title' | 'updatedAt' | 'shared'> &
	TaskStateColumn & {
		openQuestions: number;
		/** The alert hook or schedule that opened it (an investigation, a scheduled run), else null. */
		startedBy: string | null;
		startedByKind: 'alert' | 'schedule' | null;
		pinned: boolean;
		archived: boolean;
		/** Its owner's name when it is not the viewer's (shared with them, or an admin's view); null: theirs. */
		owner: string | null;
		/** The incident it investigates (an alert's session): the sidebar groups alert chats under it. */
		incident: { id: string; status: 'open' | 'resolved'; alertCount: number } | null;
	};

/**
 * The sidebar list: pinned first, then newest first, with the task state and open-question
 * count; archived sessions only in the archived view; deleted ones and replays never (a replay
 * is an admin's re-run, reached from the review: replay/run.ts).
 */
export async function listSessions(sql: Sql | TransactionSql, viewer: Viewer, opts: { archived?: boolean; limit?: number } = {}): Promise<SessionSummary[]> {
	return sql<SessionSummary[]>`
		select s.id, s.title, s.updated_at as "updatedAt", t.state as "taskState",
			(select count(*)::int from session_questions q where q.session_id = s.id and q.status = 'open') as "openQuestions",
			coalesce(h.name, sc.name) as "startedBy",
			case when h.id is not null then 'alert' when sc.id is not null then 'schedule' end as "startedByKind",
			s.pinned_at is not null as pinned, s.archived_at is not null as archived,
			case when s.operator_id is distinct from ${viewer.id} and not (s.operator_id is null and ${viewer.role === 'admin'})
				then coalesce(o.username, 'admins') end as owner, s.shared,
			(select json_build_object('id', i.id, 'status', i.status, 'alertCount', i.alert_count) from incidents i
				where i.session_id = s.id order by i.last_seen_at desc limit 1) as incident
		from chat_sessions s left join tasks t on t.session_id = s.id left join alert_hooks h on h.id = s.started_by_hook
			left join schedules sc on sc.id = s.started_by_schedule left join operators o on o.id = s.operator_id
		where s.deleted_at is null and s.replay is null and (s.archived_at is not null) = ${opts.archived ?? false} and ${listedFor(sql, viewer)}
		order by s.pinned_at desc nulls last, s.updated_at desc
		limit ${opts.limit ?? 100}`;
}

/** A title from the operator's first words. */
export function titleFrom(text: string): string {
	const line = text.replace(/\s+/g, ' ').trim();
	return line.length > 60 ? line.slice(0, 57).trimEnd() + '…' : line || 'New chat';
}

/** Creates a chat session with its task, and announces it. An alert's or schedule's belongs to the hook's or schedule's maker. */
export async function createSession(
	tx: TransactionSql,
	operatorId: string | null,
	title: string,
	opts: { startedByHook?: string; startedBySchedule?: string } = {}
): Promise<string> {
	const [row] = await tx<SessionId[]>`
		insert into chat_sessions (operator_id, title, started_by_hook, started_by_schedule, titled_by)
		values (
			coalesce(${operatorId}::uuid, (select created_by from alert_hooks where id = ${opts.startedByHook ?? null}),
				(select created_by from schedules where id = ${opts.startedBySchedule ?? null})),
			${title}, ${opts.startedByHook ?? null}, ${opts.startedBySchedule ?? null},
			${opts.startedByHook || opts.startedBySchedule ? 'system' : 'first-message'}) returning id`;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'session.updated', payload: { created: true } });
	return row.id;
}

/**
 * The chat that holds one API token's MCP requests (its cards' home), created on first use:
 * one per token, owned by the token's operator. Concurrent first calls end with the same row.
 */
export async function ensureMcpSession(tx: TransactionSql, tokenId: string, operatorId: string, tokenName: string): Promise<string> {
	const [found] = await tx<SessionId[]>`select id from chat_sessions where mcp_token_id = ${tokenId}`;
	if (found) return found.id;
	const title = `MCP · ${tokenName}`.slice(0, 60);
	const [row] = await tx<SessionId[]>`
		insert into chat_sessions (operator_id, title, mcp_token_id, titled_by) values (${operatorId}, ${title}, ${tokenId}, 'system')
		on conflict (mcp_token_id) do nothing returning id`;
	if (!row) return (await tx<SessionId[]>`select id from chat_sessions where mcp_token_id = ${tokenId}`)[0].id;
	await tx`insert into tasks (session_id, goal, state) values (${row.id}, ${title}, 'executing')`;
	await emitEvent(tx, { sessionId: row.id, type: 'session.updated', payload: { created: true } });
	return row.id;
}

/** Whether a chat holds an MCP client's requests (their results re-invoke no agent: the client reads them). */
export async function isMcpSession(sql: Sql | TransactionSql, id: string): Promise<boolean> {
	const [row] = await sql<{ mcp: boolean }[]>`select mcp_token_id is not null as mcp from chat_sessions where id = ${id}`;
	return row?.mcp ?? false;
}

/**
 * `model`: the one chosen for it (null: the default); `deletedAt`: ISO 8601 when deleted (operators
 * no longer see it; the admin review does).
 */
export type SessionRow = Pick<SessionColumns, 'id' | 'title' | 'createdAt' | 'titledBy' | 'model' | 'deletedAt' | 'shared'> &
	TaskStateColumn & {
		pinned: boolean;
		archived: boolean;
		/** Its owner (access/sessions.ts): id and name; null: the admins'. */
		ownerId: SessionColumns['operatorId'];
		owner: string | null;
	};

/** One session, deleted or not (callers that serve operators treat a deleted one as absent). */
export async function getSession(sql: Sql | TransactionSql, id: string): Promise<SessionRow | null> {
	const [row] = await sql<SessionRow[]>`
		select s.id, s.title, t.state as "taskState", s.created_at as "createdAt", s.titled_by as "titledBy", s.model,
			s.pinned_at is not null as pinned, s.archived_at is not null as archived, s.deleted_at as "deletedAt",
			s.operator_id as "ownerId", o.username as owner, s.shared
		from chat_sessions s left join tasks t on t.session_id = s.id left join operators o on o.id = s.operator_id where s.id = ${id}`;
	return row ?? null;
}

/** Who sessions are for and what they are, by id (access decisions, the streams' audience, a replay's original). */
export type SessionAudienceRow = Pick<SessionColumns, 'id' | 'shared' | 'replayOf'> & { ownerId: SessionColumns['operatorId']; deleted: boolean };

export async function sessionAudiences(sql: Sql | TransactionSql, ids: string[]): Promise<SessionAudienceRow[]> {
	if (ids.length === 0) return [];
	return sql<SessionAudienceRow[]>`
		select id, operator_id as "ownerId", shared, replay_of as "replayOf", deleted_at is not null as deleted
		from chat_sessions where id = any(${ids}::uuid[])`;
}

/** Of these sessions, the ids the viewer's lists show (listedFor). */
export async function listedSessionIds(sql: Sql | TransactionSql, viewer: Viewer, ids: string[]): Promise<Set<string>> {
	if (ids.length === 0) return new Set();
	const rows = await sql<Pick<SessionColumns, 'id'>[]>`select s.id from chat_sessions s where s.id = any(${ids}::uuid[]) and ${listedFor(sql, viewer)}`;
	return new Set(rows.map((r) => r.id));
}

type LiveSession = Pick<SessionColumns, 'id' | 'title' | 'titledBy'>;

/** Locks a session's row for a change; null when it does not exist or is deleted. */
export async function lockLiveSession(tx: TransactionSql, id: string): Promise<LiveSession | null> {
	const [row] = await tx<LiveSession[]>`
		select id, title, titled_by as "titledBy" from chat_sessions where id = ${id} and deleted_at is null for update`;
	return row ?? null;
}

export type SessionChange =
	| { title: string; titledBy: SessionTitledBy }
	| { pinned: boolean }
	| { archived: boolean }
	| { model: string | null }
	| { shared: SessionSharing | null }
	| { deletedBy: string };

/** Writes one change to a session's row (the caller locked it) and announces it on the one event path. */
export async function changeSession(tx: TransactionSql, id: string, c: SessionChange): Promise<void> {
	if ('title' in c) await tx`update chat_sessions set title = ${c.title}, titled_by = ${c.titledBy} where id = ${id}`;
	else if ('pinned' in c) await tx`update chat_sessions set pinned_at = ${c.pinned ? tx`now()` : null} where id = ${id}`;
	else if ('archived' in c) await tx`update chat_sessions set archived_at = ${c.archived ? tx`now()` : null} where id = ${id}`;
	else if ('model' in c) await tx`update chat_sessions set model = ${c.model} where id = ${id}`;
	else if ('shared' in c) await tx`update chat_sessions set shared = ${c.shared} where id = ${id}`;
	else await tx`update chat_sessions set deleted_at = now(), deleted_by = ${c.deletedBy} where id = ${id}`;
	const payload = 'deletedBy' in c ? { deleted: true as const } : 'titledBy' in c ? { title: c.title } : c;
	await emitEvent(tx, { sessionId: id, type: 'session.updated', payload });
}

/**
 * What keeps a session from being deleted: a reply being written or queued, an execution waiting
 * for approval or running, a plan proposed or running, an open question. Empty: none.
 */
export async function sessionBusyWith(tx: TransactionSql, id: string): Promise<string[]> {
	const [r] = await tx<{ turns: number; approvals: number; running: number; plans: number; questions: number }[]>`
		select
			(select count(*)::int from messages where session_id = ${id} and status in ('streaming', 'queued')) as turns,
			(select count(*)::int from executions where requested_by_session = ${id} and status = 'awaiting_approval') as approvals,
			(select count(*)::int from executions where requested_by_session = ${id} and status in ('approved', 'running')) as running,
			(select count(*)::int from plans where session_id = ${id} and status in ('proposed', 'approved')) as plans,
			(select count(*)::int from session_questions where session_id = ${id} and status = 'open') as questions`;
	const out: string[] = [];
	if (r.turns) out.push('the agent is still answering');
	if (r.approvals) out.push(`${r.approvals} execution${r.approvals > 1 ? 's wait' : ' waits'} for approval`);
	if (r.running) out.push(`${r.running} execution${r.running > 1 ? 's are' : ' is'} running`);
	if (r.plans) out.push('a plan is proposed or running');
	if (r.questions) out.push('a question waits for an answer');
	return out;
}

/**
 * Claims the agent's one title request for a session: only while its title is still its first
 * message's words and it has exactly one finished reply. True once per session.
 */
export async function claimAgentTitle(sql: Sql | TransactionSql, id: string): Promise<boolean> {
	const rows = await sql`
		update chat_sessions s set titled_by = 'agent-asked'
		where s.id = ${id} and s.titled_by = 'first-message' and s.deleted_at is null
			and (select count(*) from messages m where m.session_id = s.id and m.role = 'assistant') = 1
		returning s.id`;
	return rows.length > 0;
}

/** Stores the agent's title unless an operator renamed the session meanwhile; true when stored. */
export async function storeAgentTitle(tx: TransactionSql, id: string, title: string): Promise<boolean> {
	const rows = await tx`update chat_sessions set title = ${title}, titled_by = 'agent' where id = ${id} and titled_by = 'agent-asked' returning id`;
	if (rows.length) await emitEvent(tx, { sessionId: id, type: 'session.updated', payload: { title } });
	return rows.length > 0;
}

/** A matching message (`at`: when it was written, ISO 8601) in its session. */
export type SessionHit = Pick<MessageColumns, 'sessionId' | 'role'> &
	Pick<SessionColumns, 'title'> & {
		messageId: MessageColumns['id'];
		at: MessageColumns['createdAt'];
		archived: boolean;
		/** The matching words between \u0002 and \u0003 (the browser marks them; never HTML). */
		snippet: string;
	};

/**
 * Full-text search over every message of the sessions the viewer's sidebar lists (archived included, marked;
 * replays left out, as in the sidebar):
 * its words, tool calls' names and inputs and tool results (messages.search), best first.
 */
export async function searchSessions(sql: Sql | TransactionSql, viewer: Viewer, q: string, limit = 30): Promise<SessionHit[]> {
	return sql<SessionHit[]>`
		with query as (select websearch_to_tsquery('english', ${q}) as q),
		hits as (
			select m.id, m.session_id, m.role, m.created_at, m.parts, s.title, s.archived_at is not null as archived, ts_rank(m.search, query.q) as rank
			from messages m join chat_sessions s on s.id = m.session_id, query
			where m.search @@ query.q and s.deleted_at is null and s.replay is null and m.status <> 'queued' and ${listedFor(sql, viewer)}
			order by rank desc, m.created_at desc
			limit ${limit}
		)
		select h.session_id as "sessionId", h.id as "messageId", h.title, h.archived, h.role, h.created_at as at,
			ts_headline('english', message_search_text(h.parts), query.q,
				'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "') as snippet
		from hits h, query
		order by h.rank desc, h.created_at desc
		limit ${limit}`;
}
/** Moves the session's task to a state (no-op when already there) and announces it. */
export async function setTaskState(tx: TransactionSql, sessionId: string, state: TaskState): Promise<void> {
	const rows = await tx`
		update tasks set state = ${state}, updated_at = now()
		where session_id = ${sessionId} and state <> ${state} returning id`;
	if (rows.length) await emitEvent(tx, { sessionId, type: 'session.updated', payload: { taskState: state } });
}

/** What the session's task waits on: its open questions, and its executions and plans awaiting approval. */
export async function countWaits(tx: TransactionSql, sessionId: string): Promise<{ questions: number; approvals: number }> {
	const [row] = await tx<{ questions: number; approvals: number }[]>`
		select
			(select count(*)::int from session_questions where session_id = ${sessionId} and status = 'open') as questions,
			(select count(*)::int from executions where requested_by_session = ${sessionId} and status = 'awaiting_approval')
				+ (select count(*)::int from plans where session_id = ${sessionId} and status = 'proposed') as approvals`;
	return row;
}

/** Who looks at sessions (access/sessions.ts decides what they may do). */
export type Viewer = { id: string; role: OperatorRole };

/**
 * The sessions a viewer's lists show (sidebar, search, Ops): their own and the shared ones; an
 * admin's also those without an owner and every alert's or schedule's (an admin reads the rest in the review).
 * `s` is the chat_sessions alias of the query.
 */
export function listedFor(sql: Sql | TransactionSql, viewer: Viewer) {
	return viewer.role === 'admin'
		? sql`(s.operator_id = ${viewer.id} or s.shared is not null or s.operator_id is null or s.started_by_hook is not null or s.started_by_schedule is not null)`
		: sql`(s.operator_id = ${viewer.id} or s.shared is not null)`;
}
