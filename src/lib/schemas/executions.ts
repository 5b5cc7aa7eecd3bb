import { z } from 'zod';

/** No `route`: the server decides how a decision arrived (an old client's `route` is ignored). */
export const decideInput = z.object({
	executionId: z.uuid(),
	decision: z.enum(['approved', 'denied']),
	reason: z.string().trim().max(1000).optional()
});

export const executionIdInput = z.object({ executionId: z.uuid() });

export const planIdInput = z.object({ planId: z.uuid() });

export const decidePlanInput = z.object({
	planId: z.uuid(),
	decision: z.enum(['approved', 'denied']),
	reason: z.string().trim().max(1000).optional()
});

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 hash in hex');
const editedParams = z
	.record(z.string().max(64), z.unknown())
	.refine((p) => Object.keys(p).length <= 64 && JSON.stringify(p).length <= 65_536, 'the edited params are too large');

export const checkEditInput = z.object({ executionId: z.uuid(), params: editedParams });

/** Approving an edited request: the params as edited, the hash of the request edited, and the hash the form showed for the edit. */
export const approveEditedInput = z.object({
	executionId: z.uuid(),
	baseHash: sha256,
	params: editedParams,
	hash: sha256
});
