// A VM's HTTP health through the address its guest agent reports (issue #32), end to end against
// the SSH Proxmox double and the scripted model: a VM created from a cloud image with a health
// check is one approval and is reached on its agent's address from the host; a service that is
// down, answers 500 or hangs fails with curl's own message and the address; no agent, a silent
// agent or no usable address refuses with the reason; a hostile "address" never reaches a command.
// As the health after a start it waits as the agent's ping does: for the address (a DHCP lease
// some reads after the agent answers) and for the service (up some GETs later), one step counting
// its attempts; the window is shortened here (healthWait), the double counts reads and GETs.
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { runTurn } from '../../src/lib/server/agent/run-turn';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { requestExecution, type RequestOutcome } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { decide, newOperator, newSession } from '../helpers/executions';
import { useStage } from '../helpers/stage';

const IMAGE = '/var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2';
// The double's DHCP lease for a VM: 192.168.1.(100 + vmid % 150).
const leaseOf = (vmid: number) => `192.168.1.${100 + (vmid % 150)}`;

const { llm, pve } = useStage({
	model: true,
	env: { NOMOS_SNAPSHOT_BEFORE: 'on', NOMOS_HEALTH_AFTER: 'on' },
	sync: false,
	hosts: [
		{
			nodeName: 'strong',
			vms: [
				{ vmid: 310, name: 'web', status: 'running', agent: 'enabled=1', diskGb: 8 },
				{ vmid: 311, name: 'win11', status: 'running', diskGb: 64 },
				{ vmid: 312, name: 'quiet', status: 'running', agent: 'enabled=1', agentDown: true, diskGb: 8 }
			]
		}
	]
});
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'vm health');
});

/** The health wait, shortened: 4 attempts, no pause (the default is AGENT_WAIT, 24 × 5 s). */
const WAIT = { tries: 4, intervalMs: 0 };
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
	await runExecution(r.execution.id, { healthWait: WAIT });
	return load(r.execution.id);
}
const curls = async () => (await pve.argvLog()).filter((a) => a[0] === 'curl');

describe('a VM reached through its agent’s address', () => {
	it('create from a cloud image with a health HTTP check: one approval, the check GETs the agent’s address from the host and passes', async () => {
		await pve.setHttp(150, 8080, { paths: { '/healthz': { status: 200, body: 'ok' } } });
		await sql().begin((tx) =>
			insertMessage(tx, {
				sessionId,
				role: 'user',
				parts: [{ type: 'text', text: 'make me a web VM and check it answers' }],
				status: 'complete',
				origin: 'chat'
			})
		);
		llm.push(
			{
				toolCalls: [
					{
						name: 'request_execution',
						args: {
							target: 'strong',
							action: 'vm_create',
							params: { vmid: 150, name: 'web-2', image: IMAGE, healthHttp: { port: 8080, path: '/healthz' } },
							reason: 'a web VM'
						}
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
		await runExecution(e.id, { healthWait: WAIT });
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
		const [{ n }] = await sql()<
			{ n: number }[]
		>`select count(*)::int as n from approvals a join executions e on e.id = a.execution_id where e.requested_by_session = ${sessionId}`;
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

	it('the service never up after a reboot: every attempt GETs, the execution fails with curl’s last message and the address it used', async () => {
		await pve.setHttp(310, 80, null);
		const before = (await curls()).length;
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'apply the kernel' });
		expect(e.status).toBe('failed');
		const refused = `curl: (7) Failed to connect to ${leaseOf(310)} port 80 after 0 ms: Couldn't connect to server`;
		expect(e.error).toContain(
			`unhealthy: GET http://${leaseOf(310)}:80/ exited with 7: ${refused}; asked 4 times, 0 s apart (the approved command itself succeeded)`
		);
		expect(e.steps.filter((s) => s.kind === 'health').map((s) => [s.label, s.exitCode])).toEqual([
			['health: VM running', 0],
			['health: guest agent answers', 0],
			[`health: GET http://${leaseOf(310)}:80/ (attempt 4 of 4)`, 7]
		]);
		expect(e.steps.at(-1)!.stderrTail!.split('\n')).toEqual([1, 2, 3, 4].map((n) => `attempt ${n}: GET http://${leaseOf(310)}:80/ exited with 7: ${refused}`));
		const url = `http://${leaseOf(310)}:80/`;
		expect((await curls()).slice(before)).toEqual(Array(4).fill(['curl', '-fsS', '--noproxy', '*', '--max-time', '5', url]));
	});

	it('an address that appears on the 3rd read: the health wait re-reads the agent until it does, then GETs it once', async () => {
		await pve.setHttp(310, 80, { status: 200, body: 'up' });
		await pve.patchVm(310, { agentPending: { reads: 2 } });
		const before = await pve.argvLog();
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'fresh lease' });
		expect(e.status, e.error ?? '').toBe('succeeded');
		expect(e.result).toContain('— healthy');
		const url = `http://${leaseOf(310)}:80/`;
		expect(e.steps.filter((s) => s.kind === 'health').map((s) => [s.label, s.exitCode])).toEqual([
			['health: VM running', 0],
			['health: guest agent answers', 0],
			[`health: GET ${url} (attempt 3 of 4)`, 0]
		]);
		const last = e.steps.at(-1)!;
		expect(last.command).toBe(`'curl' '-fsS' '--noproxy' '*' '--max-time' '5' '${url}'`);
		expect(last.stdoutTail).toBe('up');
		expect(last.stderrTail!.split('\n')).toEqual(
			[1, 2].map((n) => `attempt ${n}: VM 310's guest agent reports no usable address (only loopback or link-local)`)
		);
		const after = (await pve.argvLog()).slice(before.length);
		expect(after.filter((a) => a.join(' ') === 'qm guest cmd 310 network-get-interfaces')).toHaveLength(3);
		expect(after.filter((a) => a[0] === 'curl')).toEqual([['curl', '-fsS', '--noproxy', '*', '--max-time', '5', url]]);
	});

	it('a service up on the 3rd GET: the health wait GETs again until it answers', async () => {
		await pve.setHttp(310, 80, { status: 200, body: 'late', refuseFirst: 2 });
		const before = (await curls()).length;
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'slow service' });
		expect(e.status, e.error ?? '').toBe('succeeded');
		const url = `http://${leaseOf(310)}:80/`;
		expect(e.steps.at(-1)).toMatchObject({ kind: 'health', label: `health: GET ${url} (attempt 3 of 4)`, exitCode: 0, stdoutTail: 'late' });
		expect(e.steps.at(-1)!.stderrTail!.split('\n')).toEqual(
			[1, 2].map((n) => `attempt ${n}: GET ${url} exited with 7: curl: (7) Failed to connect to ${leaseOf(310)} port 80 after 0 ms: Couldn't connect to server`)
		);
		expect((await curls()).slice(before)).toHaveLength(3);
	});

	it('an address that never appears: unhealthy with what the agent last said, nothing GETs anything', async () => {
		await pve.setHttp(310, 80, { status: 200, body: 'up' });
		await pve.patchVm(310, { agentPending: { reads: 99 } });
		onTestFinished(() => pve.patchVm(310, { agentPending: undefined }));
		const before = (await curls()).length;
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'no lease' });
		expect(e.status).toBe('failed');
		expect(e.error).toContain(
			"unhealthy: VM 310's guest agent reports no usable address (only loopback or link-local); asked 4 times, 0 s apart (the approved command itself succeeded)"
		);
		expect(e.steps.at(-1)).toMatchObject({ kind: 'health', label: `health: GET http://<agent-address>:80/ (attempt 4 of 4)` });
		expect(e.steps.at(-1)!.exitCode).toBeUndefined();
		expect(e.steps.at(-1)!.finishedAt).toBeDefined();
		expect((await curls()).length).toBe(before);
	});

	it('hostile "addresses" on the early reads, then a real one: the real one is used, no hostile string reaches the host', async () => {
		const hostile = ['1.2.3.4; rm -rf /', '$(id)', '`touch /tmp/pwned`', "10.0.0.9' ; id '"];
		await pve.setHttp(310, 80, { status: 200, body: 'real' });
		await pve.patchVm(310, { agentPending: { reads: 2, addresses: hostile } });
		const before = pve.execLog().length;
		const e = await approveAndRun({ target: 'strong', action: 'vm_reboot', params: { vmid: 310, healthHttp: { port: 80 } }, reason: 'hostile guest' });
		expect(e.status, e.error ?? '').toBe('succeeded');
		const url = `http://${leaseOf(310)}:80/`;
		expect(e.steps.at(-1)).toMatchObject({
			label: `health: GET ${url} (attempt 3 of 4)`,
			command: `'curl' '-fsS' '--noproxy' '*' '--max-time' '5' '${url}'`,
			stdoutTail: 'real'
		});
		expect(e.steps.at(-1)!.stderrTail).toContain(
			"attempt 2: VM 310's guest agent reports no usable address (only loopback or link-local); 4 reported values were not an IP address"
		);
		const sent = pve.execLog().slice(before).join('\n');
		for (const h of [...hostile, 'rm -rf', 'pwned', '$(id)']) expect(sent).not.toContain(h);
		expect(JSON.stringify(e.steps)).not.toContain('pwned');
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
		expect(refused.error).toBe(
			"not run: VM 310's guest agent reports no usable address (only loopback or link-local); 4 reported values were not an IP address"
		);

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
		await sql().begin((tx) =>
			insertMessage(tx, { sessionId, role: 'user', parts: [{ type: 'text', text: 'start win11 and check its web page' }], status: 'complete', origin: 'chat' })
		);
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
		const [plan] = await sql()<
			{ status: string; steps: { action: string; commandPreview: string }[] }[]
		>`select status, steps from plans where session_id = ${sessionId} order by created_at desc limit 1`;
		expect(plan.status).toBe('proposed');
		expect(plan.steps.map((st) => [st.action, st.commandPreview])).toEqual([
			['qm_start', `'qm' 'start' '311'`],
			['vm_http_check', `'curl' '-fsS' '--noproxy' '*' '--max-time' '5' 'http://<agent-address>:80/'`]
		]);
	});
});
