// The params of a catalogue action as the browser sees them: a JSON-schema subset generated from
// the action's zod schema on the server (proxmox/params-schema.ts), a validator for it that gives
// one readable error per field while the operator types, and the diff of two param sets. The
// server validates again with the zod schema itself; this is only for quick feedback.
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
	/** The zod schema's own message for a pattern, e.g. "a bridge such as vmbr0". */
	errorMessage?: string;
};

/** Everything the edit form needs: the schema, the requested params, what may not change, and the hash they hash to. */
export type EditForm = { action: string; schema: ParamSchema; params: Record<string, unknown>; locked: string[]; hash: string };

/** The result of checking an edit on the server: the command it would run, or an error per field. */
export type EditCheck =
	| { ok: true; hash: string; commandPreview: string; changes: ParamChange[] }
	| { ok: false; error: string; fieldErrors: Record<string, string> };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function check(s: ParamSchema, v: unknown, path: string, errors: Record<string, string>): void {
	const fail = (m: string) => {
		errors[path || '_'] ??= m;
	};
	if (v === null || v === undefined) return fail('required');
	if (s.anyOf) {
		if (!s.anyOf.some((b) => Object.keys(validate(b, v, path)).length === 0)) fail(s.errorMessage ?? 'not an accepted value');
		return;
	}
	if (s.const !== undefined && v !== s.const) return fail(`must be ${JSON.stringify(s.const)}`);
	if (s.enum && !s.enum.includes(v)) return fail(`one of ${s.enum.join(', ')}`);
	switch (s.type) {
		case 'string':
			if (typeof v !== 'string') return fail('must be text');
			if (s.minLength !== undefined && v.length < s.minLength) return fail(s.minLength === 1 ? 'required' : `at least ${s.minLength} characters`);
			if (s.maxLength !== undefined && v.length > s.maxLength) return fail(`at most ${s.maxLength} characters`);
			if (s.pattern !== undefined && !safeRegExp(s.pattern).test(v)) return fail(s.errorMessage ?? 'not in the expected format');
			return;
		case 'integer':
		case 'number':
			if (typeof v !== 'number' || !Number.isFinite(v)) return fail('must be a number');
			if (s.type === 'integer' && !Number.isInteger(v)) return fail('must be a whole number');
			if (s.minimum !== undefined && v < s.minimum) return fail(`at least ${s.minimum}`);
			if (s.maximum !== undefined && v > s.maximum) return fail(`at most ${s.maximum}`);
			return;
		case 'boolean':
			if (typeof v !== 'boolean') fail('must be yes or no');
			return;
		case 'array':
			if (!Array.isArray(v)) return fail('must be a list');
			if (s.minItems !== undefined && v.length < s.minItems) return fail(`at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`);
			if (s.maxItems !== undefined && v.length > s.maxItems) return fail(`at most ${s.maxItems} items`);
			if (s.items) v.forEach((item, i) => check(s.items!, item, path ? `${path}.${i}` : String(i), errors));
			return;
		case 'object': {
			if (!isPlainObject(v)) return fail('must be an object');
			const props = s.properties ?? {};
			for (const k of s.required ?? []) if (v[k] === undefined) errors[path ? `${path}.${k}` : k] ??= 'required';
			for (const [k, val] of Object.entries(v)) {
				if (val === undefined) continue;
				const sub = props[k];
				const p = path ? `${path}.${k}` : k;
				if (sub) check(sub, val, p, errors);
				else if (s.additionalProperties === false) errors[p] ??= 'not a field of this action';
			}
			return;
		}
	}
}

const regexCache = new Map<string, RegExp>();
function safeRegExp(p: string): RegExp {
	let r = regexCache.get(p);
	if (!r) {
		try {
			r = new RegExp(p);
		} catch {
			r = /[\s\S]*/;
		}
		regexCache.set(p, r);
	}
	return r;
}

/** One message per failing field, keyed by its dotted path (`memory`, `features.nesting`, `argv.2`); empty when valid. */
export function validate(schema: ParamSchema, value: unknown, path = ''): Record<string, string> {
	const errors: Record<string, string> = {};
	check(schema, value, path, errors);
	return errors;
}

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
