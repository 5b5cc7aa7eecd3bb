import { describe, expect, it } from 'vitest';
import type { ZodType } from 'zod';
import type { ToolContext } from '../../src/lib/server/agent/tools/context';
import { fleetTools } from '../../src/lib/server/agent/tools/fleet';
import { getEntityInput } from '../../src/lib/server/agent/tools/get-entity';
import { getLxcStateInput } from '../../src/lib/server/agent/tools/get-lxc-state';
import { getStateSnapshotInput } from '../../src/lib/server/agent/tools/get-state-snapshot';
import { listEntitiesInput } from '../../src/lib/server/agent/tools/list-entities';
import { listLxcsInput } from '../../src/lib/server/agent/tools/list-lxcs';

const ctx: ToolContext = { sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } };
const ok = (schema: ZodType, v: unknown) => expect(schema.safeParse(v).success, JSON.stringify(v)).toBe(true);
const bad = (schema: ZodType, v: unknown) => expect(schema.safeParse(v).success, JSON.stringify(v)).toBe(false);

describe('fleet tool input schemas', () => {
	it('are the schemas the tools expose', () => {
		const tools = fleetTools(ctx);
		expect(Object.keys(tools).sort()).toEqual(['get_entity', 'get_lxc_state', 'get_state_snapshot', 'list_entities', 'list_lxcs']);
		expect(tools.list_entities.inputSchema).toBe(listEntitiesInput);
		expect(tools.get_entity.inputSchema).toBe(getEntityInput);
		expect(tools.list_lxcs.inputSchema).toBe(listLxcsInput);
		expect(tools.get_lxc_state.inputSchema).toBe(getLxcStateInput);
		expect(tools.get_state_snapshot.inputSchema).toBe(getStateSnapshotInput);
		for (const t of Object.values(tools)) expect(t.description?.length).toBeGreaterThan(40);
	});

	it('list_entities', () => {
		for (const v of [{}, { kind: 'lxc' }, { query: 'caddy' }, { kind: 'host', query: 'strong' }]) ok(listEntitiesInput, v);
		for (const v of [
			{ kind: 1 },
			{ kind: 'LXC' },
			{ kind: '' },
			{ query: '' },
			{ query: 5 },
			{ query: 'x'.repeat(201) },
			{ kind: 'lxc', extra: 1 },
			null,
			'lxc'
		])
			bad(listEntitiesInput, v);
	});

	it('get_entity', () => {
		for (const v of [{ id: 'lxc:strong/101' }, { id: 'host:strong' }, { id: '6a1f0c1e-8a9b-4c2d-9e3f-0a1b2c3d4e5f' }]) ok(getEntityInput, v);
		for (const v of [{}, { id: '' }, { id: 101 }, { id: null }, { id: 'x'.repeat(201) }, { id: 'lxc:caddy', kind: 'lxc' }]) bad(getEntityInput, v);
	});

	it('list_lxcs', () => {
		for (const v of [{}, { host: 'strong' }]) ok(listLxcsInput, v);
		for (const v of [{ host: '' }, { host: 3 }, { host: ['strong'] }, { hosts: 'strong' }, { host: 'strong', vmid: '101' }]) bad(listLxcsInput, v);
	});

	it('get_lxc_state: exactly one of a well-formed vmid or a name', () => {
		for (const v of [{ vmid: '100' }, { vmid: '101' }, { vmid: '999999999' }, { name: 'caddy' }, { name: 'strong/101' }]) ok(getLxcStateInput, v);
		for (const vmid of ['0', '12', '99', 'abc', '1234567890', '0101', '101 ', '-101', '1e3', '']) bad(getLxcStateInput, { vmid });
		for (const v of [
			{},
			{ vmid: 101 },
			{ vmid: '101', name: 'caddy' },
			{ name: '' },
			{ name: 7 },
			{ name: 'x'.repeat(129) },
			{ vmid: '101', host: 'strong' },
			{ id: '101' }
		])
			bad(getLxcStateInput, v);
	});

	it('get_state_snapshot takes no arguments', () => {
		ok(getStateSnapshotInput, {});
		for (const v of [{ host: 'strong' }, { verbose: true }, null, []]) bad(getStateSnapshotInput, v);
	});
});
