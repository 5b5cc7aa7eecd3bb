import { describe, expect, it } from 'vitest';
import {
	classifyGuestRead,
	connectFailure,
	couldNotCheck,
	HostUnknown,
	noAnswer,
	saysAbsent,
	untilAnswered,
	waitPlan,
	type Attempt
} from '../../src/lib/server/executions/host-reads';
import { HostKeyError, SshError, type ExecResult } from '../../src/lib/server/ssh/client';

const result = (r: Partial<ExecResult>): ExecResult => ({
	exitCode: 0,
	signal: null,
	stdout: '',
	stderr: '',
	durationMs: 10,
	timedOut: false,
	aborted: false,
	group: null,
	stopped: null,
	...r
});
const ct = (r: Partial<ExecResult>) => classifyGuestRead('ct', '105', result(r), { host: 'strong', status: true, what: 'pct status 105' });

describe('what a read of a guest says', () => {
	it('only the host\'s own "Configuration file … does not exist" for that id and kind is absent', () => {
		// pve-guest-common AbstractConfig::load_config, as `pct` and `qm` print it.
		expect(saysAbsent('ct', '105', "Configuration file 'nodes/strong/lxc/105.conf' does not exist\n")).toBe(true);
		expect(saysAbsent('vm', '150', "Configuration file 'nodes/pve1/qemu-server/150.conf' does not exist")).toBe(true);
		expect(saysAbsent('ct', '105', "Configuration file 'nodes/strong/lxc/1050.conf' does not exist")).toBe(false);
		expect(saysAbsent('ct', '105', "Configuration file 'nodes/strong/qemu-server/105.conf' does not exist")).toBe(false);
		expect(saysAbsent('vm', '150', "Configuration file 'nodes/strong/lxc/150.conf' does not exist")).toBe(false);
		expect(saysAbsent('ct', '105', "ipcc_send_rec[1] failed: Connection refused\nConfiguration file 'nodes/strong/lxc/105.conf' does not exist: maybe")).toBe(
			false
		);
		expect(saysAbsent('ct', '105', '')).toBe(false);
	});

	it("present with its status, absent in the host's words, and everything else unknown with its reason", () => {
		expect(ct({ stdout: 'status: running\n' })).toEqual({ state: 'present', stdout: 'status: running\n', status: 'running' });
		expect(ct({ exitCode: 2, stderr: "Configuration file 'nodes/strong/lxc/105.conf' does not exist\n" })).toEqual({ state: 'absent' });
		// The same words with exit 0 are no "absent" (and no readable status either).
		expect(ct({ exitCode: 0, stderr: "Configuration file 'nodes/strong/lxc/105.conf' does not exist\n" }).state).toBe('unknown');
		expect(ct({ timedOut: true, exitCode: null, durationMs: 30_000 })).toEqual({ state: 'unknown', why: 'strong did not answer within 30 s' });
		expect(ct({ exitCode: null })).toEqual({ state: 'unknown', why: 'the connection to strong dropped' });
		expect(ct({ exitCode: null, signal: 'KILL' })).toEqual({ state: 'unknown', why: 'the read was ended by KILL on strong' });
		expect(ct({ exitCode: 255, stderr: 'ipcc_send_rec[1] failed: Connection refused\n' })).toEqual({
			state: 'unknown',
			why: 'pct status 105 exited with 255: ipcc_send_rec[1] failed: Connection refused'
		});
		expect(ct({ exitCode: 0, stdout: 'Use of uninitialized value\n' })).toEqual({
			state: 'unknown',
			why: 'pct status 105 gave an answer Nomos cannot read (Use of uninitialized value)'
		});
		// A config read needs no status line.
		expect(classifyGuestRead('vm', '150', result({ stdout: 'name: haos\n' }), { host: 'strong', status: false, what: 'qm config 150' }).state).toBe('present');
		expect(noAnswer(result({ exitCode: 1 }), 'strong')).toBeNull();
	});

	it('a refused, unroutable or silent connection is unknown; a wrong host key or login is not waited for', () => {
		expect(connectFailure(new SshError('SSH to strong (127.0.0.1:2222) failed: connect ECONNREFUSED 127.0.0.1:2222'), 'strong')).toBe(
			'the connection to strong was refused'
		);
		expect(connectFailure(new SshError('SSH to strong (10.0.0.9:22) failed: Timed out while waiting for handshake'), 'strong')).toBe(
			'strong did not answer the connection'
		);
		expect(connectFailure(new SshError('SSH to strong (10.0.0.9:22) failed: connect EHOSTUNREACH 10.0.0.9:22'), 'strong')).toBe(
			'strong cannot be reached (EHOSTUNREACH)'
		);
		expect(connectFailure(new SshError('SSH to strong (127.0.0.1:2222) failed: the host closed the connection before authentication'), 'strong')).toBe(
			'strong closed the connection'
		);
		expect(connectFailure(new SshError('SSH to strong (127.0.0.1:2222) failed: All configured authentication methods failed'), 'strong')).toBeNull();
		expect(connectFailure(new HostKeyError('strong', 'SHA256:a', 'SHA256:b'), 'strong')).toBeNull();
		expect(connectFailure(new Error('connect ECONNREFUSED'), 'strong')).toBeNull();
	});

	it('an execution that could not check says so, never "does not exist"', () => {
		expect(couldNotCheck('CT 105', 'strong', 5 * 60_000, 'strong did not answer within 2 min')).toBe(
			'not run: could not check CT 105: strong did not answer within 5 min'
		);
		expect(couldNotCheck('CT 105', 'strong', 5 * 60_000, 'the connection to strong was refused')).toBe(
			'not run: could not check CT 105: strong did not answer within 5 min (last: the connection to strong was refused)'
		);
		expect(couldNotCheck('CT 105', 'strong', 3_000, 'pct status 105 exited with 255: ipcc_send_rec[1] failed: Connection refused', true)).toBe(
			'not run: could not check CT 105: strong gave no usable answer within 3 s (last: pct status 105 exited with 255: ipcc_send_rec[1] failed: Connection refused)'
		);
	});
});

describe('waiting for a slow host', () => {
	it('spends the budget in doubling limits: 30 s first for 5 min, a tenth of a short budget', () => {
		expect(waitPlan(5 * 60_000)).toMatchObject({ firstMs: 30_000, backoffMs: 1_000, tickMs: 5_000 });
		expect(waitPlan(6_000)).toMatchObject({ firstMs: 600, backoffMs: 20, tickMs: 100 });
		expect(waitPlan(10 * 60_000, 60_000).firstMs).toBe(60_000);
	});

	it('asks again with twice the limit until the host answers, telling the wait live', async () => {
		const limits: number[] = [];
		const waits: Array<[number, string | null]> = [];
		const got = await untilAnswered<string>(
			async (t, n) => {
				limits.push(t);
				// A host that needs 200 ms per command: the first two limits (60, 120 ms) cut it.
				await new Promise((r) => setTimeout(r, Math.min(t, 200)));
				return t >= 200 ? { answer: `answered on attempt ${n}` } : { unknown: `strong did not answer within ${t} ms` };
			},
			{ budgetMs: 600, onWait: (_ms, n, last) => void waits.push([n, last]) }
		);
		expect(got).toMatchObject({ answer: 'answered on attempt 3', attempts: 3 });
		expect(limits[0]).toBe(60);
		expect(limits[1]).toBe(120);
		expect(limits[2]).toBeGreaterThanOrEqual(240);
		expect(waits.map(([n, last]) => [n, last])).toEqual(
			expect.arrayContaining([
				[1, 'strong did not answer within 60 ms'],
				[2, 'strong did not answer within 120 ms']
			])
		);
	});

	it('a host that never answers ends the wait with the last reason when the budget is spent', async () => {
		let n = 0;
		const began = Date.now();
		const err = await untilAnswered(async (): Promise<Attempt<never>> => (n++, { unknown: 'the connection to strong was refused' }), { budgetMs: 300 }).catch(
			(e: unknown) => e
		);
		expect(err).toBeInstanceOf(HostUnknown);
		expect((err as HostUnknown).why).toBe('the connection to strong was refused');
		expect(Date.now() - began).toBeGreaterThanOrEqual(290);
		// Backing off (10 ms doubling up to 50 ms), not hammering the host: a handful of attempts in 300 ms.
		expect(n).toBeGreaterThan(2);
		expect(n).toBeLessThan(15);
	});

	it('an answer at once tells no wait; an abort ends the wait at once', async () => {
		let told = 0;
		expect((await untilAnswered(async () => ({ answer: 1 }), { budgetMs: 1_000, onWait: () => void told++ })).answer).toBe(1);
		expect(told).toBe(0);
		const stop = new AbortController();
		const began = Date.now();
		setTimeout(() => stop.abort(), 50);
		await expect(untilAnswered(async () => ({ unknown: 'refused' }), { budgetMs: 60_000, signal: stop.signal })).rejects.toBeInstanceOf(HostUnknown);
		expect(Date.now() - began).toBeLessThan(5_000);
	});
});
