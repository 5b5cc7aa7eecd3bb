// A standalone host's VMs in the inventory (a single-node homelab, no cluster): the sync reads
// them from `/cluster/resources` (one command beside the CT reads), files them under the host
// entry by the PVE node's name (here the entry "homelab" is node "pve"), and the tools and the
// blast radius see them; a VM Nomos creates, clones or destroys is read back at once.
import { beforeAll, describe, expect, it } from 'vitest';
import { continueSession } from '../../src/lib/server/agent/continuation';
import { getEntityTool } from '../../src/lib/server/agent/tools/get-entity';
import { listEntitiesTool } from '../../src/lib/server/agent/tools/list-entities';
import { sql } from '../../src/lib/server/db/index';
import { blastRadius } from '../../src/lib/server/db/queries/blast-radius';
import { getEntity } from '../../src/lib/server/db/queries/entities';
import { getExecution } from '../../src/lib/server/db/queries/executions';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { decide, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';
import { scaled } from '../helpers/time';

const IMAGE = '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2';
const call = { toolCallId: 't', messages: [] };

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'off' },
	sync: false,
	hosts: [
		{
			nodeName: 'pve',
			hostName: 'homelab',
			seed: [{ vmid: 100, hostname: 'caddy', status: 'running' }],
			vms: [
				{ vmid: 9000, name: 'debian-12-tmpl', status: 'stopped', template: 1, diskGb: 2 },
				{ vmid: 300, name: 'hass', status: 'running', memory: 4096, diskGb: 32, tags: 'ha' }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'vm inventory');
});

const vmRefs = async () =>
	(await sql()<{ ref: string }[]>`select 'qemu:' || external_id as ref from entities where kind = 'qemu' order by external_id`).map((r) => r.ref);

/** Requests, approves and runs one action, then lets the continuation read back what it touched. */
async function runAndContinue(input: Record<string, unknown>): Promise<string[][]> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	const done = await getExecution(sql(), r.execution.id);
	expect(done?.status, done?.error ?? '').toBe('succeeded');
	llm.push({ text: 'done' });
	const before = (await pve.argvLog()).length;
	expect(await continueSession(sessionId)).toBe('turn');
	return (await pve.argvLog()).slice(before);
}

describe("a standalone host's VMs", () => {
	it('the sync files them under the host entry by the node name; list_entities, get_entity and the blast radius see them', async () => {
		const before = (await pve.argvLog()).length;
		const [result] = await syncAllHosts();
		expect(result).toMatchObject({ host: 'homelab', ok: true });
		// One command more than the CTs' reads, on a channel of its own; no qm per VM.
		const ran = (await pve.argvLog()).slice(before);
		expect(ran.filter((a) => a[0] === 'qm')).toEqual([]);
		expect(ran.filter((a) => a.join(' ') === 'pvesh get /cluster/resources --output-format json')).toHaveLength(1);

		expect(await vmRefs()).toEqual(['qemu:homelab/300', 'qemu:homelab/9000']);
		expect((await getEntity(sql(), 'qemu:homelab/300'))?.attributes).toMatchObject({
			vmid: 300,
			name: 'hass',
			status: 'running',
			node: 'pve',
			memLimitMb: 4096,
			tags: ['ha'],
			template: false
		});
		expect((await getEntity(sql(), 'qemu:homelab/9000'))?.attributes).toMatchObject({ template: true, status: 'stopped' });

		const list = (await listEntitiesTool({} as never).execute!({ kind: 'qemu' }, call)) as { entities: { ref?: string; id?: string; name: string }[] };
		expect(list.entities.map((e) => e.name)).toEqual(['hass', 'debian-12-tmpl']);
		const one = (await getEntityTool({} as never).execute!({ id: 'qemu:homelab/300' }, call)) as { name: string; kind: string };
		expect(one).toMatchObject({ name: 'hass', kind: 'qemu' });

		const h = await requestExecution(sessionId, { target: 'homelab', action: 'pveam_update', params: {}, reason: 'r' });
		if ('error' in h) throw new Error(h.error);
		expect((await blastRadius(sql(), h.execution.id))?.containers.map((c) => c.ref)).toEqual(['lxc:homelab/100', 'qemu:homelab/300', 'qemu:homelab/9000']);
	});

	it('a VM created by Nomos appears at once (one read, not a whole sync)', async () => {
		const created = await runAndContinue({
			target: 'homelab',
			action: 'vm_create',
			params: { vmid: 150, name: 'k3s-1', image: IMAGE, start: false },
			reason: 'k3s'
		});
		expect(created).toEqual([['pvesh', 'get', '/cluster/resources', '--output-format', 'json']]);
		expect((await getEntity(sql(), 'qemu:homelab/150'))?.attributes).toMatchObject({ name: 'k3s-1', status: 'stopped', node: 'pve' });
	});

	it('a clone appears at once', async () => {
		await runAndContinue({ target: 'homelab', action: 'vm_clone', params: { vmid: 9000, newid: 151, name: 'web-1', full: true }, reason: 'web' });
		expect((await getEntity(sql(), 'qemu:homelab/151'))?.name).toBe('web-1');
	});

	it(
		'a start shows at once; a destroyed VM disappears at once, and the next sync does not bring it back',
		async () => {
			await runAndContinue({ target: 'homelab', action: 'qm_start', params: { vmid: 150 }, reason: 'r' });
			expect((await getEntity(sql(), 'qemu:homelab/150'))?.attributes.status).toBe('running');
			await runAndContinue({ target: 'homelab', action: 'qm_stop', params: { vmid: 150 }, reason: 'r' });
			await runAndContinue({ target: 'homelab', action: 'vm_destroy', params: { vmid: 150 }, reason: 'gone' });
			expect(await getEntity(sql(), 'qemu:homelab/150')).toBeNull();
			expect(await vmRefs()).toEqual(['qemu:homelab/151', 'qemu:homelab/300', 'qemu:homelab/9000']);
			await syncAllHosts();
			expect(await vmRefs()).toEqual(['qemu:homelab/151', 'qemu:homelab/300', 'qemu:homelab/9000']);
		},
		scaled(90_000)
	);

	it('a host whose /cluster/resources fails keeps its VMs as they were (with the reason on the host) and its CTs still sync', async () => {
		await pve.setFault('fail', { tool: 'pvesh', match: 'get /cluster/resources', exitCode: 255, stderr: 'ipcc_send_rec[1] failed: Connection refused' });
		try {
			await pve.patchCt(100, { status: 'stopped' });
			const [r] = await syncAllHosts();
			expect(r.ok).toBe(true);
			expect((await getEntity(sql(), 'lxc:homelab/100'))?.attributes.status).toBe('stopped');
			expect(await vmRefs()).toEqual(['qemu:homelab/151', 'qemu:homelab/300', 'qemu:homelab/9000']);
			expect((await getEntity(sql(), 'host:homelab'))?.attributes.vmsError).toContain('ipcc_send_rec[1] failed');
		} finally {
			await pve.setFault('fail', null);
		}
	});
});
