import { z } from 'zod';
import type { ParamSchema } from '../../schemas/param-form';
import { ACTION_PARAMS } from '../../schemas/action-params';
import type { ActionName } from './actions';

/**
 * An action's params as a JSON-schema subset for the browser's edit form (the shape the
 * operator may submit, defaults included): it lays the form out; the checking is the zod
 * schema's own (schemas/action-params.ts), in the browser and here.
 */
export function describeParams(action: ActionName): ParamSchema {
	const json = z.toJSONSchema(ACTION_PARAMS[action] as z.ZodType, { io: 'input', unrepresentable: 'any' }) as ParamSchema & { $schema?: string };
	delete json.$schema;
	return json;
}
