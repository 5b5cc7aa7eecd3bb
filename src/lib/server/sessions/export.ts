import { sql } from '../db/index';
import { getSession, type SessionRow } from '../db/queries/sessions';
import { listMessages } from '../conversation/messages';
import { callError, callInput, getToolName, isNotePart, isToolPart } from '../../messages/parts';
import type { MessageRow } from '../../types/messages';

const RESULT_CHARS = 4000;

export type SessionExport = { filename: string; contentType: string; body: string };

const roleName: Record<string, string> = { user: 'Operator', assistant: 'Agent', system: 'System' };

/** A file name from the title: lowercase words and dashes, at most 60 characters. */
function slug(title: string): string {
	return (
		title
			.toLowerCase()
			.normalize('NFKD')
			.replace(/[^a-z0-9]+/g, '-')
			.replace(/^-+|-+$/g, '')
			.slice(0, 60) || 'chat'
	);
}

function fence(text: string): string {
	const ticks = '`'.repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
	return `${ticks}\n${text}\n${ticks}`;
}

function json(value: unknown, max = RESULT_CHARS): string {
	const s = JSON.stringify(value, null, 2) ?? 'null';
	return s.length > max ? `${s.slice(0, max)}\n… (${s.length - max} more characters)` : s;
}

/** The conversation as Markdown: each message's words, its tool calls (input, result or error) and notes. */
export function sessionMarkdown(session: SessionRow, messages: MessageRow[]): string {
	const out = [`# ${session.title}`, '', `Session \`${session.id}\`, started ${session.createdAt}${session.model ? `, model \`${session.model}\`` : ''}.`, ''];
	for (const m of messages) {
		out.push(`## ${roleName[m.role] ?? m.role} · ${m.createdAt}${m.status !== 'complete' ? ` (${m.status})` : ''}`, '');
		for (const p of m.parts) {
			if (p.type === 'text' && p.text.trim()) out.push(p.text.trim(), '');
			else if (isToolPart(p)) {
				const err = callError(p);
				out.push(`**Tool \`${getToolName(p)}\`** (${p.state})`, '', fence(json(callInput(p) ?? {})), '');
				if (err) out.push(`Error: ${err}`, '');
				else if (p.state === 'output-available') out.push('Result:', '', fence(json(p.output)), '');
			} else if (isNotePart(p)) out.push(`> ${p.data.text.replace(/\n/g, '\n> ')}`, '');
		}
		if (m.error) out.push(`> Error: ${m.error}`, '');
	}
	return out.join('\n');
}

/**
 * One session for download, as Markdown or JSON (the stored UI messages, as the chat shows them);
 * null when it does not exist or was deleted.
 */
export async function exportSession(sessionId: string, format: 'md' | 'json'): Promise<SessionExport | null> {
	const session = await getSession(sql(), sessionId);
	if (!session || session.deletedAt) return null;
	const messages = (await listMessages(sql(), sessionId)).filter((m) => m.status !== 'queued' || m.role === 'user');
	const name = `nomos-${slug(session.title)}-${session.id.slice(0, 8)}`;
	if (format === 'md') return { filename: `${name}.md`, contentType: 'text/markdown; charset=utf-8', body: sessionMarkdown(session, messages) };
	const body = {
		session: { id: session.id, title: session.title, createdAt: session.createdAt, model: session.model, exportedAt: new Date().toISOString() },
		messages: messages.map((m) => ({ id: m.id, role: m.role, parts: m.parts, status: m.status, origin: m.origin, error: m.error, createdAt: m.createdAt }))
	};
	return { filename: `${name}.json`, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body, null, 2) };
}
