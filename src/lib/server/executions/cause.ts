import type { Sql } from '../db/index';
import type { TransactionSql } from 'postgres';
import { getToolName, isNotePart, isToolPart } from '../../messages/parts';
import type { MessagePart } from '../../types/messages';
import type { OutsideRead, RequestCause } from '../../types/executions';
import type { Watch } from '../db/queries/watches';
import { turnInputs } from '../db/queries/messages';
import type { Credential } from './authority';

// Who caused a request (issue #43): the credential of the input that started the agent's turn,
// kept on every execution and plan the agent asks for in that turn, so that a token never
// approves what its own messages caused, and the outside text the turn had read, so the card and
// the notice can say so.

/** The cause an operator's input carries: their browser session, or the API token it was sent with. */
export function causeOfCredential(c: Credential, operator: { id: string; username?: string | null }): RequestCause {
	return c.kind === 'token'
		? { kind: 'token', operatorId: operator.id, operator: operator.username ?? null, tokenId: c.token.id, tokenName: c.token.name }
		: { kind: 'session', operatorId: operator.id, operator: operator.username ?? null };
}

/**
 * The cause of the turn whose reply is `replyId`: among the operators' inputs (chat messages,
 * answers to questions) made since the session's previous reply, one sent with an API token wins
 * (its words are in the turn, even next to a person's), else the latest; with none since (a
 * continuation), the latest input before; with none at all, the alert hook or schedule that
 * opened the session; else null.
 */
export async function turnCause(sql: Sql | TransactionSql, sessionId: string, replyId: string, watch: Watch | null): Promise<RequestCause | null> {
	const rows = await turnInputs(sql, sessionId, replyId);
	const fresh = rows.filter((r) => r.fresh);
	const pick = fresh.find((r) => r.cause.tokenId) ?? fresh[0] ?? rows[0];
	if (pick) return pick.cause;
	return watch ? { kind: watch.kind, watchId: watch.id, watchName: watch.name } : null;
}

const URL_NAME = (u: string) => {
	try {
		const x = new URL(u);
		return `${x.host}${x.pathname === '/' ? '' : x.pathname}`;
	} catch {
		return u.slice(0, 200);
	}
};

/** An http_get result read in a turn (the page's final address), as an outside read. */
export const httpGetRead = (url: string): OutsideRead => ({ source: 'http_get', name: URL_NAME(url) });

/**
 * The outside text in a session's history, which every turn replays to the model: the alerts
 * fenced into it (their titles) and the pages http_get fetched (their addresses).
 */
export function outsideReadsOf(messages: Array<{ parts: MessagePart[] }>): OutsideRead[] {
	const out: OutsideRead[] = [];
	for (const m of messages) {
		for (const p of m.parts) {
			if (isNotePart(p) && p.data.kind === 'alert' && p.data.data?.untrusted === true && typeof p.data.data.title === 'string') {
				out.push({ source: 'alert', name: p.data.data.title });
			} else if (isToolPart(p) && getToolName(p) === 'http_get' && p.state === 'output-available') {
				const o = p.output as { url?: unknown } | undefined;
				if (typeof o?.url === 'string') out.push(httpGetRead(o.url));
			}
		}
	}
	return dedupe(out);
}

export function dedupe(reads: OutsideRead[]): OutsideRead[] {
	const seen = new Set<string>();
	return reads.filter((r) => {
		const k = `${r.source}:${r.name}`;
		if (seen.has(k)) return false;
		seen.add(k);
		return true;
	});
}

/** A request's cause: the turn's, with the outside text read so far added (none added: null stays null). */
export function withReads(cause: RequestCause | null | undefined, reads: OutsideRead[]): RequestCause | null {
	const read = dedupe([...(cause?.read ?? []), ...reads]);
	if (!cause && !read.length) return null;
	return { ...(cause ?? { kind: 'session' }), ...(read.length ? { read } : {}) };
}

/**
 * The cause a tool records on what it asks for: an MCP client's token, or the turn's cause with
 * the outside text read so far in this turn added.
 */
export function requestCauseOf(ctx: {
	mcp?: { operator: { id: string; username: string }; token: { id: string; name: string } };
	cause?: RequestCause | null;
	turn: { read?: OutsideRead[] };
}): RequestCause | null {
	if (ctx.mcp)
		return { kind: 'mcp', operatorId: ctx.mcp.operator.id, operator: ctx.mcp.operator.username, tokenId: ctx.mcp.token.id, tokenName: ctx.mcp.token.name };
	return withReads(ctx.cause, ctx.turn.read ?? []);
}
