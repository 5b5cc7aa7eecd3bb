// The params of a catalogue action as the edit form lays them out: a JSON-schema subset generated
// from the action's zod schema on the server (proxmox/params-schema.ts), and the diff of two param
// sets. The checking is the zod schema's own (action-params.ts), in the browser and on the server.
import type { ParamChange } from '../types/executions';

export type ParamSchema = {
	type?: 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';
	enum?: unknown[];
	const?: unknown;
	pattern?: string;
	minLength?: number;
	maxLength?: number;
	minimum?: number;
	maximum?: number;
	minItems?: number;
	maxItems?: number;
	items?: ParamSchema;
	properties?: Record<string, ParamSchema>;
	required?: string[];
	additionalProperties?: boolean;
	anyOf?: ParamSchema[];
	default?: unknown;
	description?: string;
};

/** Everything the edit form needs: the schema, the requested params, what may not change, and the hash they hash to. */
export type EditForm = { action: string; schema: ParamSchema; params: Record<string, unknown>; locked: string[]; hash: string };

/** The result of checking an edit on the server: the command it would run, or an error per field. */
export type EditCheck =
	{ ok: true; hash: string; commandPreview: string; changes: ParamChange[] } | { ok: false; error: string; fieldErrors: Record<string, string> };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function flatten(v: Record<string, unknown>, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
	for (const [k, val] of Object.entries(v)) {
		if (isPlainObject(val) && Object.keys(val).length) flatten(val, `${prefix}${k}.`, out);
		else if (val !== undefined) out[prefix + k] = val;
	}
	return out;
}

/** The fields whose values differ (nested objects compared field by field, lists as a whole). */
export function diffParams(before: Record<string, unknown>, after: Record<string, unknown>): ParamChange[] {
	const a = flatten(before);
	const b = flatten(after);
	const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
	return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).map((field) => ({ field, from: a[field], to: b[field] }));
}

export function formatParamValue(v: unknown): string {
	if (v === undefined) return '(unset)';
	if (typeof v === 'string') return v === '' ? '""' : v;
	return JSON.stringify(v);
}

/** "memory 2048 → 4096, cores 1 → 2". */
export function formatChanges(changes: ParamChange[]): string {
	return changes.map((c) => `${c.field} ${formatParamValue(c.from)} → ${formatParamValue(c.to)}`).join(', ');
}
