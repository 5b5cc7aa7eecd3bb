import type { ZodError } from 'zod';

/** Turns a zod failure into one readable line per field, e.g. `port: must be at most 65535`. */
export function describeZodError(error: ZodError): string {
	return error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}
