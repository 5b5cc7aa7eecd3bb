import { z } from 'zod';

export const answerBody = z.object({ answer: z.string().trim().min(1, 'The answer is empty.').max(10_000) });
export const answerInput = answerBody.extend({ questionId: z.uuid(), sessionId: z.uuid().optional() });
