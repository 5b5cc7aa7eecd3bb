import { z } from 'zod';

export const password = z.string().min(10, 'at least 10 characters').max(200, 'at most 200 characters');
export const username = z
	.string()
	.trim()
	.min(2, 'at least 2 characters')
	.max(32, 'at most 32 characters')
	.regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/, 'letters, digits, dots, dashes and underscores');
export const role = z.enum(['operator', 'admin']);

export const createOperatorInput = z.object({ username, password, role });
export const operatorIdInput = z.object({ id: z.uuid() });
export const resetPasswordInput = operatorIdInput.extend({ password });
export const setDisabledInput = operatorIdInput.extend({ disabled: z.boolean() });
export const setRoleInput = operatorIdInput.extend({ role });
export const changePasswordInput = z.object({ current: z.string().min(1, 'enter your current password').max(200), next: password });
export const confirmPasswordInput = z.object({ password: z.string().min(1, 'enter your password').max(200) });
