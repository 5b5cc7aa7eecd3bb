import { desc, eq, sql as dsql } from 'drizzle-orm';
import { db } from '../index';
import { chatSessions, sessionQuestions, tasks } from '../schema';

export type SessionSummary = {
	id: string;
	title: string;
	updatedAt: Date;
	taskState: string | null;
	openQuestions: number;
};

/** The sidebar list: newest first, with the task state and open-question count. */
export async function listSessions(limit = 100): Promise<SessionSummary[]> {
	return db()
		.select({
			id: chatSessions.id,
			title: chatSessions.title,
			updatedAt: chatSessions.updatedAt,
			taskState: tasks.state,
			openQuestions: dsql<number>`(select count(*)::int from ${sessionQuestions} q where q.session_id = ${chatSessions.id} and q.status = 'open')`
		})
		.from(chatSessions)
		.leftJoin(tasks, eq(tasks.sessionId, chatSessions.id))
		.orderBy(desc(chatSessions.updatedAt))
		.limit(limit);
}
