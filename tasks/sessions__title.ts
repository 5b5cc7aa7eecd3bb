import type { Task } from 'graphile-worker';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { writeAgentTitle } from '../src/lib/server/sessions/title';

/** The agent's title for a session after its first turn (claimed once; a failure keeps the first message's title). */
export const sessions__title: Task = async (raw) => {
	const { sessionId } = parseJobPayload('sessions__title', raw);
	await writeAgentTitle(sessionId);
};
