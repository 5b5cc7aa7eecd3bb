// A VM's HTTP health through the address its guest agent reports (issue #32), end to end against
// the SSH Proxmox double and the scripted model: a VM created from a cloud image with a health
// check is one approval and is reached on its agent's address from the host; a service that is
// down, answers 500 or hangs fails with curl's own message and the address; no agent, a silent
// agent or no usable address refuses with the reason; a hostile "address" never reaches a command.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { resetEnvCache } from '../../src/lib/server/env';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { startScriptedLlm, type ScriptedLlm } from '../doubles/llm/server';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, newOperator, newSession, useHub } from '../helpers/executions';

useTestDatabase();
useHub();

const IMAGE = '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2';
// The double's DHCP lease for a VM: 192.168.1.(100 + vmid % 150).
const leaseOf = (vmid: number) => `192.168.1.${100 + (vmid % 150)}`;

let pve: ProxmoxDouble;
let llm: ScriptedLlm;
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	llm = await startScriptedLlm();
	Object.assign(process.env, { OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 't', NOMOS_MODEL: 'scripted', NOMOS_SNAPSHOT_BEFORE: 'on', NOMOS_HEALTH_AFTER: 'on' });
	resetEnvCache();
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		vms: [
			{ vmid: 310, name: 'web', status: 'running', agent: 'enabled=1', diskGb: 8 },
			{ vmid: 311, name: 'win11', status: 'running', diskGb: 64 },
			{ vmid: 312, name: 'quiet', status: 'running', agent: 'enabled=1', agentDown: true, diskGb: 8 }
		]
	});
	await addHost(pve);
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'vm health');
});
beforeEach(() => llm.reset());
afterAll(async () => {
	delete process.env.NOMOS_SNAPSHOT_BEFORE;
	delete process.env.NOMOS_HEALTH_AFTER;
	resetEnvCache();
	await pve?.close();
	await llm?.close();
});

const load = async (id: string): Promise<ExecutionRow> => (await getExecution(sql(), id))!;

async function request(input: Record<string, unknown>): Promise<RequestOutcome> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(`unexpected request error: ${r.error} (${r.hint ?? ''})`);
	return r;
}
/** A read-only check: it runs at once. */
const check = async (params: Record<string, unknown>) => (await request({ target: 'strong', action: 'vm_http_check', params, reason: 'is it up?' })).execution;
async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await request(input);
	expect(r.execution.status).toBe('awaiting_approval');
	expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return load(r.execution.id);
}
const curls = async () => (await pve.argvLog()).filter((a) => a[0] === 'curl');

describe('a VM reached through its agent’s address', () => {
	it('create from a cloud image with a health HTTP check: one approval, the check GETs the agent’s address from the host and passes', async () => {
		await pve.setHttp(150, 8080, { paths: { '/healthz': { status: 200, body: 'ok' } } });
		await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'make me a web VM and check it answers' }], status: 'complete', origin: 'chat' }));
		llm.push(
			{
				toolCalls: [
					{
						name: 'request_execution',
						args: { target: 'strong', action: 'vm_create', params: { vmid: 150, name: 'web-2', image: IMAGE, healthHttp: { port: 8080, path: '/healthz' } }, reason: 'a web VM' }
					}
				]
			},
			{ text: 'Waiting for your approval.' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const [row] = await sql()<{ id: string }[]>`select id from executions where action = 'vm_create' order by created_at desc limit 1`;
		const e = await load(row.id);
		expect(e).toMatchObject({ status: 'awaiting_approval', params: { vmid: '150', healthHttp: { port: 8080, path: '/healthz' } } });

		expect((await decide(e.id, operatorId, 'approved')).ok).toBe(true);
		await runExecution(e.id);
		const done = await load(e.id);
		expect(done.status, done.error ?? '').toBe('succeeded');
		expect(done.result).toBe(`VM 150 (web-2) created from ${IMAGE} and started — healthy`);
		const url = `http://${leaseOf(150)}:8080/healthz`;
		expect(done.steps.map((s) => [s.kind ?? 'command', s.label, s.exitCode])).toEqual([
			['command', 'qm create 150 (web-2)', 0],
			['command', 'qm start 150', 0],
			['health', 'health: VM running', 0],
			['health', 'health: guest agent answers', 0],
			['health', `health: GET ${url}`, 0]
		]);
		expect(done.steps.at(-1)!.command).toBe(`'curl' '-fsS' '--noproxy' '*' '--max-time' '5' '${url}'`);
		expect(done.steps.at(-1)!.stdoutTail).toContain('ok');
		// One approval for all of it: no second card, no second execution.
		const [{ n }] = await sql()<{ n: number }[]>`select count(*)::int as n from approvals a join executions e on e.id = a.execution_id where e.requested_by_session = ${sessionId}`;
		expect(n).toBe(1);
		expect(await curls()).toEqual([['curl', '-fsS', '--noproxy', '*', '--max-time', '5', url]]);
	});

	it('vm_http_check on its own: reads the address, GETs it, says it; a 500 fails with curl’s exit 22 and the address', async () => {
		await pve.setHttp(310, 80, { status: 200, body: '<title>web</title>' });
		const ok = await check({ vmid: 310, port: 80 });
		expect(ok.status, ok.error ?? '').toBe('succeeded');
		expect(ok.steps.map((s) => s.label)).toEqual([`GET http://${leaseOf(310)}:80/`]);
		expect(ok.result).toContain('<title>web</title>');

		await pve.setHttp(310, 80, { status: 500, body: 'boom' });
		const err = await check({ vmid: 310, port: 80 });
		expect(err.status).toBe('failed');
		expect(err.error).toBe(`GET http://${leaseOf(310)}:80/ exited with 22: curl: (22) The requested URL returned error: 500`);
	});

	it('the service down after a reboot: the execution fails with curl’s message and the address it used', async () => {
		await pve.setHttp(310, 80, null);
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'apply the kernel' });
		expect(e.status).toBe('failed');
		expect(e.error).toContain(
			`unhealthy: health: GET http://${leaseOf(310)}:80/ exited with 7: curl: (7) Failed to connect to ${leaseOf(310)} port 80 after 0 ms: Couldn't connect to server (the approved command itself succeeded)`
		);
		expect(e.steps.filter((s) => s.kind === 'health').map((s) => [s.label, s.exitCode])).toEqual([
			['health: VM running', 0],
			['health: guest agent answers', 0],
			[`health: GET http://${leaseOf(310)}:80/`, 7]
		]);
	});

	it('a service that hangs: curl gives up at timeoutS with exit 28', async () => {
		await pve.setHttp(310, 8443, { hang: true });
		const e = await check({ vmid: 310, port: 8443, scheme: 'https', timeoutS: 1 });
		expect(e.status).toBe('failed');
		expect(e.error).toBe(`GET https://${leaseOf(310)}:8443/ exited with 28: curl: (28) Operation timed out after 1001 milliseconds with 0 bytes received`);
		expect((await curls()).at(-1)).toEqual(['curl', '-fsS', '--noproxy', '*', '--max-time', '1', '--insecure', `https://${leaseOf(310)}:8443/`]);
	});

	it('no agent, a silent agent, a stopped VM: refused with the reason, nothing GETs anything', async () => {
		const before = (await curls()).length;
		const none = await check({ vmid: 311, port: 80 });
		expect(none.status).toBe('failed');
		expect(none.error).toBe('not run: VM 311 has no guest agent configured, so its address is unknown');
		expect(none.steps).toEqual([]);
		const quiet = await check({ vmid: 312, port: 80 });
		expect(quiet.error).toBe("not run: VM 312's guest agent does not answer (QEMU guest agent is not running)");
		await pve.patchVm(312, { status: 'stopped' });
		expect((await check({ vmid: 312, port: 80 })).error).toBe('not run: VM 312 is stopped, expected running');
		// As the health after a start, the same refusal makes the start unhealthy.
		await pve.patchVm(312, { agent: undefined, agentDown: undefined });
		const started = await approveAndRun({ target: 'strong', action: 'qm_start', params: { vmid: 312, healthHttp: { port: 80 } }, reason: 'start it' });
		expect(started.status).toBe('failed');
		expect(started.error).toContain('unhealthy: VM 312 has no guest agent configured, so its address is unknown (the approved command itself succeeded)');
		expect((await curls()).length).toBe(before);
	});

	it('an agent reporting a hostile "address" never gets it into a command: refused, or the real address next to it used', async () => {
		const hostile = ['1.2.3.4; rm -rf /', '$(id)', '`touch /tmp/pwned`', "10.0.0.9' ; id '"];
		await pve.patchVm(310, { agentAddresses: hostile });
		const before = pve.execLog().length;
		const refused = await check({ vmid: 310, port: 80 });
		expect(refused.status).toBe('failed');
		expect(refused.error).toBe("not run: VM 310's guest agent reports no usable address (only loopback or link-local); 4 reported values were not an IP address");

		await pve.patchVm(310, { agentAddresses: [...hostile, 'fe80::be24:11ff:fe00:1', '10.0.0.5'] });
		await pve.setHttp(310, 80, { status: 200, body: 'fine' });
		const ok = await check({ vmid: 310, port: 80 });
		expect(ok.status, ok.error ?? '').toBe('succeeded');
		expect(ok.steps.map((s) => s.label)).toEqual(['GET http://10.0.0.5:80/']);
		const sent = pve.execLog().slice(before).join('\n');
		for (const h of [...hostile, 'rm -rf', 'pwned', '$(id)']) expect(sent).not.toContain(h);
		expect((await curls()).at(-1)).toEqual(['curl', '-fsS', '--noproxy', '*', '--max-time', '5', 'http://10.0.0.5:80/']);

		// An IPv6-only guest: link-local skipped, the global address in brackets.
		await pve.patchVm(310, { agentAddresses: ['fe80::1', '2001:db8::5'] });
		const v6 = await check({ vmid: 310, port: 80 });
		expect(v6.steps.map((s) => s.label)).toEqual(['GET http://[2001:db8::5]:80/']);
		expect(v6.status, v6.error ?? '').toBe('succeeded');
		await pve.patchVm(310, { agentAddresses: undefined });
	});

	it('a plan may use vm_http_check as a read-only check after a start: its card shows the address to come', async () => {
		await pve.patchVm(311, { status: 'stopped', agent: 'enabled=1' });
		await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'start win11 and check its web page' }], status: 'complete', origin: 'chat' }));
		llm.push(
			{
				toolCalls: [
					{
						name: 'propose_plan',
						args: {
							title: 'start win11, check it',
							steps: [
								{ action: 'qm_start', target: 'strong', params: { vmid: 311 }, why: 'start it' },
								{ action: 'vm_http_check', target: 'strong', params: { vmid: 311, port: 80 }, why: 'its page answers' }
							]
						}
					}
				]
			},
			{ text: 'The plan waits for you.' }
		);
		expect((await runTurn({ sessionId, origin: 'chat' })).status).toBe('complete');
		const [plan] = await sql()<{ status: string; steps: { action: string; commandPreview: string }[] }[]>`select status, steps from plans where session_id = ${sessionId} order by created_at desc limit 1`;
		expect(plan.status).toBe('proposed');
		expect(plan.steps.map((st) => [st.action, st.commandPreview])).toEqual([
			['qm_start', `'qm' 'start' '311'`],
			['vm_http_check', `'curl' '-fsS' '--noproxy' '*' '--max-time' '5' 'http://<agent-address>:80/'`]
		]);
	});
});
