import type { Task } from 'graphile-worker';
import { parseJobPayload } from '../src/lib/server/jobs/payloads';
import { applyDelivery } from '../src/lib/server/watches/apply';

/** Applies one stored alert delivery (already applied: nothing to do; a failure is retried from the stored body). */
export const alerts__intake: Task = async (raw) => {
	const { deliveryId } = parseJobPayload('alerts__intake', raw);
	await applyDelivery(deliveryId);
};
