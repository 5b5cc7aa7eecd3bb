import { z } from 'zod';
import type { JSONSchema7 } from 'ai';

type JSONSchema7Definition = JSONSchema7 | boolean;
import { ACTIONS, ACTION_NAMES, type ActionName } from './actions';

/** Patterns longer than this are dropped where a description says the same in words (tokens matter on a 4k-context model). */
const MAX_PATTERN = 0;
const SAFE_INT = Number.MAX_SAFE_INTEGER;

/** Smaller, equivalent-enough JSON Schema: no ±2^53 bounds, flat unions of bare types as a type list, long patterns described instead. */
function compact(node: JSONSchema7Definition): JSONSchema7Definition {
	if (typeof node !== 'object') return node;
	const n: JSONSchema7 = { ...node };
	if (n.minimum !== undefined && Math.abs(n.minimum) >= SAFE_INT) delete n.minimum;
	if (n.maximum !== undefined && Math.abs(n.maximum) >= SAFE_INT) delete n.maximum;
	if (n.pattern && n.pattern.length > MAX_PATTERN && n.description) delete n.pattern;
	if (n.properties) n.properties = Object.fromEntries(Object.entries(n.properties).map(([k, v]) => [k, compact(v)]));
	if (n.items && !Array.isArray(n.items)) n.items = compact(n.items);
	if (n.anyOf) {
		const flat = n.anyOf.map(compact).flatMap((v) => (typeof v === 'object' && v.anyOf && Object.keys(v).length === 1 ? v.anyOf : [v]));
		const bare = flat.every((v) => typeof v === 'object' && Object.keys(v).length === 1 && typeof v.type === 'string');
		if (bare) {
			delete n.anyOf;
			n.type = [...new Set(flat.map((v) => (v as JSONSchema7).type as Exclude<JSONSchema7['type'], undefined | unknown[]>))];
		} else n.anyOf = flat;
	}
	return n;
}

/**
 * The catalogue's params as JSON Schema for a model's tool definition, generated from ACTIONS
 * (one source of truth): one object schema per action, titled with the action's name.
 *
 * Shaped for what servers accept: OpenAI refuses a function whose parameters have
 * `anyOf`/`oneOf`/`allOf`/`enum`/`not` at the top level (so the union sits under a property)
 * and `allOf` anywhere; Ollama decodes every property into its Go `ToolProperty` (`type` a
 * string or a list of strings, `anyOf`, `properties`, `items`, `enum`, `description`), so no
 * `$schema`/`$ref`/`$defs` either: every variant is inlined.
 */
export function actionParamsVariants(): JSONSchema7[] {
	variants ??= ACTION_NAMES.map((name) => {
		const { $schema: _s, ...schema } = z.toJSONSchema(ACTIONS[name].params, {
			io: 'input',
			target: 'draft-7',
			reused: 'inline',
			unrepresentable: 'any'
		}) as JSONSchema7 & { $schema?: string };
		const typed = compact(schema) as JSONSchema7;
		// A container is named by the target ('lxc:strong/101'); params.vmid is still accepted, just not advertised.
		if (ACTIONS[name].scope !== 'host' && typed.properties?.vmid) {
			const { vmid: _v, ...rest } = typed.properties;
			typed.properties = rest;
		}
		delete typed.additionalProperties;
		return { title: name, description: `${name} (${ACTIONS[name].classification}): ${ACTIONS[name].description}`, ...typed };
	});
	return variants;
}
let variants: JSONSchema7[] | undefined;

/** One action's params schema as actionParamsVariants has it. */
export function actionParamsSchema(name: ActionName): JSONSchema7 {
	return actionParamsVariants().find((x) => x.title === name)!;
}

/** One field of a signature: `name`, `name?` (optional or defaulted), with a default, an enum or a short unit. */
function fieldSignature(name: string, s: JSONSchema7, required: boolean, defaults: boolean): string {
	let out = required ? name : `${name}?`;
	// An enum of three or more with a default shows only its default (vzdump's mode?=snapshot); describe_action lists the rest.
	if (s.enum && !(s.default !== undefined && s.enum.length >= 3)) out += `: ${s.enum.map((x) => JSON.stringify(x).replace(/^"|"$/g, '')).join('|')}`;
	else if (s.type === 'array') out += '[]';
	// An object that says what it is in words (vzdump's prune) is named only: describe_action gives its fields.
	else if (s.type === 'object' && s.properties && !(s.description && s.description.length > 4)) out += `: {${Object.keys(s.properties).join(', ')}}`;
	else if (defaults && s.default !== undefined && typeof s.default !== 'object') out += `=${String(s.default)}`;
	if (s.description && s.description.length <= 4) out += ` ${s.description}`;
	return out;
}

/**
 * An action as one line for a tool description: `pct_push(path, content, mode?=0644)`, required
 * fields first; without `defaults`, `pct_push(path, content, mode?)` (request_execution's
 * catalogue: every request carries it). describe_action gives the whole schema (types, bounds, descriptions).
 */
export function actionSignature(name: ActionName, { defaults = true }: { defaults?: boolean } = {}): string {
	const v = actionParamsSchema(name);
	const props = Object.entries(v.properties ?? {}) as Array<[string, JSONSchema7]>;
	const req = new Set(v.required ?? []);
	const fields = [...props.filter(([k]) => req.has(k)), ...props.filter(([k]) => !req.has(k))].map(([k, s]) => fieldSignature(k, s, req.has(k), defaults));
	return `${name}(${fields.join(', ')})`;
}
