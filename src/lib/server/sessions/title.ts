import { generateText } from 'ai';
import { sql } from '../db/index';
import { claimAgentTitle, getSession, storeAgentTitle } from '../db/queries/sessions';
import { listMessages } from '../conversation/messages';
import { getModel } from '../agent/provider';
import { enqueueJob, PRIORITY } from '../jobs/enqueue';
import { SESSION_TITLE_MAX } from '../../schemas/sessions';
import { logger } from '../log';

const log = logger('sessions');

/** Sent with the title request, so a proxy (or the tests' scripted model) can tell it from a turn. */
export const TITLE_REQUEST_HEADER = 'x-nomos-request';

const TITLE_SYSTEM = 'Name this chat in 3 to 6 words, like a document title. Answer with the title only: no quotes, no full stop.';
const TITLE_MAX_OUTPUT = 16;
const EXCERPT = 600;

/** The model's answer as a title: its first line, without quotes, a "Title:" label or a full stop; '' when none is left. */
export function cleanTitle(text: string): string {
	const line = text.split('\n').find((l) => l.trim()) ?? '';
	const t = line
		.replace(/^\s*(title\s*:\s*)/i, '')
		.replace(/^[\s"'“”‘’*#`]+|[\s"'“”‘’*`.]+$/g, '')
		.replace(/\s+/g, ' ')
		.trim();
	return t.length > SESSION_TITLE_MAX ? t.slice(0, SESSION_TITLE_MAX - 1).trimEnd() + '…' : t;
}

/**
 * After a chat turn finished: queues the agent's title request when the session still carries
 * its first message's words (a cheap check; the job claims it once, see claimAgentTitle).
 */
export async function offerAgentTitle(sessionId: string): Promise<void> {
	const session = await getSession(sql(), sessionId);
	if (session?.titledBy !== 'first-message') return;
	await enqueueJob(sql(), 'sessions__title', { sessionId }, { jobKey: `sessions__title:${sessionId}`, priority: PRIORITY.background, maxAttempts: 1 });
}

/**
 * One short model call (the session's model, no tools, a few tokens) for a title from the first
 * exchange; stored only while nobody renamed the session meanwhile. Any failure keeps the
 * first message's title, silently. Returns what happened (for the logs and tests).
 */
export async function writeAgentTitle(sessionId: string): Promise<'stored' | 'skipped' | 'kept'> {
	if (!(await claimAgentTitle(sql(), sessionId))) return 'skipped';
	try {
		const session = await getSession(sql(), sessionId);
		const model = getModel(session?.model);
		if (!model) return 'kept';
		const messages = await listMessages(sql(), sessionId);
		const textOf = (role: string) =>
			(messages.find((m) => m.role === role)?.parts ?? [])
				.map((p) => (p.type === 'text' ? p.text : ''))
				.join(' ')
				.slice(0, EXCERPT);
		const r = await generateText({
			model,
			system: TITLE_SYSTEM,
			prompt: `Operator: ${textOf('user')}\n\nAgent: ${textOf('assistant')}`,
			maxOutputTokens: TITLE_MAX_OUTPUT,
			maxRetries: 0,
			headers: { [TITLE_REQUEST_HEADER]: 'title' },
			abortSignal: AbortSignal.timeout(60_000)
		});
		const title = cleanTitle(r.text);
		if (!title) return 'kept';
		return (await sql().begin((tx) => storeAgentTitle(tx, sessionId, title))) ? 'stored' : 'kept';
	} catch (e) {
		log.debug({ sessionId, error: e instanceof Error ? e.message : String(e) }, 'no agent title; the first message stays the title');
		return 'kept';
	}
}
