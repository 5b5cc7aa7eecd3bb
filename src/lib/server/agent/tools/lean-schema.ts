import { asSchema, jsonSchema, type JSONSchema7, type Tool } from 'ai';

type Node = JSONSchema7 | boolean;

/** Keys a model does not need to call a tool well: the server checks them and its error names the field (or, `default`, fills it in). */
const CHECKED_ON_THE_SERVER = [
	'$schema',
	'default',
	'additionalProperties',
	'minLength',
	'maxLength',
	'minItems',
	'maxItems',
	'pattern',
	'minimum',
	'maximum',
	'format',
	'propertyNames'
] as const;

/** A JSON Schema without the bounds and patterns (see CHECKED_ON_THE_SERVER), at every depth. */
export function leanJsonSchema(node: Node): Node {
	if (typeof node !== 'object') return node;
	const n: JSONSchema7 = { ...node };
	for (const k of CHECKED_ON_THE_SERVER) delete n[k];
	if (n.properties) n.properties = Object.fromEntries(Object.entries(n.properties).map(([k, v]) => [k, leanJsonSchema(v)]));
	if (n.items && !Array.isArray(n.items)) n.items = leanJsonSchema(n.items);
	if (n.anyOf) n.anyOf = n.anyOf.map(leanJsonSchema);
	return n;
}

/**
 * The tool as the model is shown it: the lean JSON Schema of its input, while the arguments are
 * still validated by the tool's own (strict) schema, so a call the model gets wrong is refused
 * with the same error as before.
 */
export function lean(t: Tool): Tool {
	const own = asSchema(t.inputSchema);
	const shown = own.jsonSchema;
	if (!shown || typeof shown !== 'object' || 'then' in shown) return t;
	return {
		...t,
		inputSchema: jsonSchema(leanJsonSchema(shown) as JSONSchema7, { validate: own.validate ? (v) => own.validate!(v) : undefined })
	};
}
