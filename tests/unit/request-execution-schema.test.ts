// request_execution as the model sees it: four plain fields and one signature per catalogued action
// in its description, in a shape OpenAI's and Ollama's tool formats accept; describe_action gives an
// action's typed params, generated from the catalogue; a wrong field still gets the error that names
// it and lists the allowed ones.
import { asSchema, type JSONSchema7 } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { catalogueSignature, requestExecutionJsonSchema, requestExecutionTool } from '../../src/lib/server/agent/tools/request-execution';
import { describeActionTool } from '../../src/lib/server/agent/tools/describe-action';
import { actionParamsVariants, actionSignature } from '../../src/lib/server/proxmox/tool-schema';
import { ACTIONS, ACTION_NAMES, CLUSTER_ACTIONS, type ActionName } from '../../src/lib/server/proxmox/actions';
import { ON_DEMAND } from '../../src/lib/server/proxmox/families';

type JSONSchema7Definition = JSONSchema7 | boolean;

const schema = requestExecutionJsonSchema();
const variants = actionParamsVariants();
const ctx = { sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } };
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** Every sub-schema with its path. */
function* walk(node: JSONSchema7Definition, path = '$'): Generator<[string, JSONSchema7]> {
	if (typeof node !== 'object') return;
	yield [path, node];
	for (const [k, v] of Object.entries(node.properties ?? {})) yield* walk(v, `${path}.properties.${k}`);
	for (const [i, v] of (node.anyOf ?? []).entries()) yield* walk(v, `${path}.anyOf[${i}]`);
	for (const [i, v] of (node.oneOf ?? []).entries()) yield* walk(v, `${path}.oneOf[${i}]`);
	if (node.items && !Array.isArray(node.items)) yield* walk(node.items, `${path}.items`);
}

/**
 * OpenAI's function `parameters`: a JSON Schema object; rejected with "schema must have type
 * 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level", and "'allOf' is
 * not permitted" anywhere.
 */
function openAiProblems(s: JSONSchema7): string[] {
	const out: string[] = [];
	if (s.type !== 'object') out.push('top-level type is not object');
	for (const k of ['oneOf', 'anyOf', 'allOf', 'enum', 'not', 'const'] as const) if (k in s) out.push(`top-level ${k}`);
	for (const [path, n] of walk(s)) {
		if ('allOf' in n) out.push(`${path}: allOf`);
		if ('$ref' in n) out.push(`${path}: $ref`);
	}
	return out;
}

/**
 * Ollama decodes `parameters` into Go structs (api.ToolFunctionParameters / api.ToolProperty):
 * `type` must be a string (or for a property, a string or a list of strings), `required` a list
 * of strings, `properties` an object of properties, `description` a string, `enum` a list,
 * `anyOf` a list of properties. A value of another JSON type fails the whole request.
 */
function ollamaProblems(s: JSONSchema7): string[] {
	const out: string[] = [];
	if (typeof s.type !== 'string') out.push('top-level type is not a string');
	for (const [path, n] of walk(s)) {
		if (n.type !== undefined && !(typeof n.type === 'string' || (Array.isArray(n.type) && n.type.every((t) => typeof t === 'string'))))
			out.push(`${path}: type`);
		for (const t of [n.type].flat()) if (t !== undefined && !JSON_TYPES.has(t)) out.push(`${path}: unknown type ${t}`);
		if (n.required !== undefined && !(Array.isArray(n.required) && n.required.every((r) => typeof r === 'string'))) out.push(`${path}: required`);
		if (n.description !== undefined && typeof n.description !== 'string') out.push(`${path}: description`);
		if (n.enum !== undefined && !Array.isArray(n.enum)) out.push(`${path}: enum`);
		if (n.anyOf !== undefined && !n.anyOf.every((v) => typeof v === 'object')) out.push(`${path}: anyOf`);
		if (n.properties !== undefined && (typeof n.properties !== 'object' || Array.isArray(n.properties))) out.push(`${path}: properties`);
		// Unknown keys are ignored by Go's decoder (a top-level $schema is harmless), but references are never resolved.
		if ('$ref' in n || '$defs' in n || 'definitions' in n) out.push(`${path}: $ref/$defs`);
	}
	return out;
}

describe('request_execution input schema', () => {
	it('is valid for OpenAI function parameters and for Ollama tools', () => {
		expect(openAiProblems(schema)).toEqual([]);
		expect(ollamaProblems(schema)).toEqual([]);
		// What the AI SDK sends is this very schema.
		expect(
			asSchema(requestExecutionTool({ sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } }).inputSchema).jsonSchema
		).toEqual(schema);
	});

	it('has one typed variant per catalogued action, generated from the catalogue, each valid for both servers', () => {
		expect(variants.map((v) => v.title)).toEqual(ACTION_NAMES);
		for (const v of variants) {
			expect(openAiProblems(v), v.title).toEqual([]);
			expect(ollamaProblems(v), v.title).toEqual([]);
		}
		for (const [i, name] of ACTION_NAMES.entries()) {
			const v = variants[i];
			expect(v.type).toBe('object');
			expect(v.description, name).toBe(`${name} (${ACTIONS[name].classification}): ${ACTIONS[name].description}`);
			const fields = Object.keys((ACTIONS[name].params as z.ZodObject).shape).filter((k) => !(k === 'vmid' && ACTIONS[name].scope !== 'host'));
			expect(Object.keys(v.properties ?? {}), name).toEqual(fields);
		}
		const create = variants.find((v) => v.title === 'pct_create')!;
		expect(create.properties!.disk).toMatchObject({ type: 'integer', description: 'GiB', minimum: 1 });
		expect(create.properties).not.toHaveProperty('disk_gb');
		expect(create.required).toEqual(['hostname', 'template']);
		const push = variants.find((v) => v.title === 'pct_push')!;
		expect(push.required).toEqual(['path', 'content']);
		expect(variants.find((v) => v.title === 'vzdump')!.properties!.mode).toMatchObject({ enum: ['snapshot', 'suspend', 'stop'] });
		expect(variants.find((v) => v.title === 'qm_start')!.required).toEqual(['vmid']);
	});

	it('lists every action as a signature in its description, and describe_action gives its typed params', async () => {
		const t = requestExecutionTool(ctx);
		expect((schema.properties!.params as JSONSchema7).anyOf).toBeUndefined();
		// Every action; the migrate ones only where a cluster is known (they would only cost tokens elsewhere);
		// a family described on demand (health) by its name only, its members by describe_action.
		// Without defaults there (every request carries the catalogue); describe_action gives them.
		// A VM action's leading vmid is said once for all of them, on the Target line (literals below).
		const brief = (n: ActionName) => catalogueSignature(n);
		const listed = ACTION_NAMES.filter((n) => !ON_DEMAND.includes(n));
		for (const name of listed.filter((n) => !CLUSTER_ACTIONS.includes(n))) expect(t.description).toContain(brief(name));
		for (const name of [...CLUSTER_ACTIONS, ...ON_DEMAND]) expect(t.description).not.toContain(`${name}(`);
		expect(t.description).toContain('or the family health (');
		expect(t.description).toContain('disks, services, journals).');
		const inCluster = requestExecutionTool({ ...ctx, cluster: true });
		for (const name of listed) expect(inCluster.description).toContain(brief(name));
		expect(actionSignature('pct_push')).toBe('pct_push(path, content, mode?=0644)');
		expect(brief('pct_push')).toBe('pct_push(path, content, mode?)');
		expect(actionSignature('systemctl')).toBe('systemctl(unit, op: start|stop|restart|reload|enable|disable)');
		expect(t.description).toMatch(/Destructive, a person approves: [^\n]*pct_destroy\(\)/);
		expect(t.description).toContain('vm_clone(name, newid?, full?)');
		expect(t.description).toContain('vm_create(name, image, vmid?,');
		expect(t.description).toContain("every qm_/vm_ action (each takes the VM's vmid too)");
		expect(catalogueSignature('qm_stop')).toBe('qm_stop()');
		expect(actionSignature('qm_stop')).toBe('qm_stop(vmid)');
		// The same for every window: instructions and tools stay byte-identical (prefix caches).
		expect(requestExecutionTool({ ...ctx, contextTokens: 4096 }).description).toBe(t.description);

		const d = describeActionTool(ctx);
		const create = (await d.execute!({ action: 'pct_create' }, { toolCallId: 'd1', messages: [] })) as {
			classification: string;
			target: string;
			params: JSONSchema7;
		};
		expect(create).toMatchObject({ classification: 'config_mutation', target: 'a host', params: { type: 'object', required: ['hostname', 'template'] } });
		expect(create.params.properties!.disk).toMatchObject({ type: 'integer', description: 'GiB', minimum: 1 });
		expect(await d.execute!({ action: 'pct_make' }, { toolCallId: 'd2', messages: [] })).toMatchObject({ error: "unknown action 'pct_make'" });
	});

	it('a guessed field still gets the error naming it and listing the allowed ones', async () => {
		const t = requestExecutionTool(ctx);
		const input = {
			target: 'strong',
			action: 'pct_create',
			params: { hostname: 'typetype', template: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', disk_gb: 8 },
			reason: 'r'
		};
		// The tool's validator lets it through to the catalogue's own check (a union validator would only say "no variant matched").
		const validated = await asSchema(t.inputSchema).validate!(input);
		expect(validated.success).toBe(true);
		const out = await t.execute!(input, { toolCallId: 'c1', messages: [] });
		expect(out).toEqual({
			error: 'bad params for pct_create: Unrecognized key: "disk_gb"',
			hint: 'fields of pct_create: vmid, hostname, template, cores, memory, swap, disk, storage, bridge, ip, gateway, unprivileged, features, start'
		});
		const bad = await asSchema(t.inputSchema).validate!({ target: 'strong', action: 'pct_create', params: {}, reason: 'r', extra: 1 });
		expect(bad.success).toBe(false);
	});
});
