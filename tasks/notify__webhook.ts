import type { Task } from 'graphile-worker';
import { sql } from '../src/lib/server/db/index';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { deliverQueued } from '../src/lib/server/notify/webhooks';

/** Delivers one notice to one webhook; a failed attempt throws and graphile-worker retries it with backoff. */
export const notify__webhook: Task = async (raw, helpers) => {
	const payload = parseJobPayload('notify__webhook', raw);
	await deliverQueued(sql(), payload, { n: helpers.job.attempts, max: helpers.job.max_attempts });
};
