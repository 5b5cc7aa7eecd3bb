import { z } from 'zod';
import type { ParamSchema } from '../../schemas/param-form';
import { ACTIONS, type ActionName } from './actions';

type Check = { _zod: { def: { check?: string; format?: string; error?: (i: unknown) => unknown } } };

/**
 * An action's params as a JSON-schema subset for the browser's edit form (the shape the
 * operator may submit, defaults included), with each pattern's own zod message so a bad value
 * reads the same in the browser as from the server.
 */
export function describeParams(action: ActionName): ParamSchema {
	const json = z.toJSONSchema(ACTIONS[action].params as z.ZodType, {
		io: 'input',
		unrepresentable: 'any',
		override: (ctx) => {
			const checks = (ctx.zodSchema as unknown as { _zod: { def: { checks?: Check[] } } })._zod.def.checks ?? [];
			for (const c of checks) {
				const d = c._zod.def;
				if (d.format !== 'regex' || typeof d.error !== 'function') continue;
				const m = d.error({});
				if (typeof m === 'string') (ctx.jsonSchema as ParamSchema).errorMessage = m;
			}
		}
	}) as ParamSchema & { $schema?: string };
	delete json.$schema;
	return json;
}

/** A zod error as one readable message per field path (`memory`, `features.nesting`, `argv.2`; `_` for the whole). */
export function fieldErrorsOf(error: z.ZodError, limit = 50): Record<string, string> {
	const out: Record<string, string> = {};
	for (const i of error.issues.slice(0, limit)) {
		if (i.code === 'unrecognized_keys') {
			for (const k of i.keys.slice(0, limit)) out[[...i.path, k].join('.').slice(0, 200)] ??= 'not a field of this action';
		} else out[i.path.length ? i.path.join('.') : '_'] ??= i.message.slice(0, 300);
	}
	return out;
}
