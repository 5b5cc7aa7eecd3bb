import { z } from 'zod';

export const decideInput = z.object({
	executionId: z.uuid(),
	decision: z.enum(['approved', 'denied']),
	route: z.enum(['button', 'ops']),
	reason: z.string().trim().max(1000).optional()
});

export const executionIdInput = z.object({ executionId: z.uuid() });

export const decidePlanInput = z.object({
	planId: z.uuid(),
	decision: z.enum(['approved', 'denied']),
	reason: z.string().trim().max(1000).optional()
});
