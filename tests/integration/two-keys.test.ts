// Two keys per host against the real SSH double with `command=` keys behind deploy/nomos-gate:
// the read key (`--role read`) carries sync, pre-checks and read-backs, the mutation key
// (`--role mutate`) only an approved execution's changing steps — asserted from which key each
// command the double received came through. A read key asked to mutate is refused with nothing
// run; a gate of another catalogue is named and the execution refused before any step ran.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { getExecution, type ExecutionRow } from '../../src/lib/server/db/queries/executions';
import { getHostByName, recordGateCheck, updateHost, upsertConfiguredHosts } from '../../src/lib/server/db/queries/hosts';
import { requestExecution } from '../../src/lib/server/executions/request';
import { runExecution } from '../../src/lib/server/executions/runner';
import { syncHost } from '../../src/lib/server/inventory/sync';
import { catalogueVersion } from '../../src/lib/server/proxmox/gate-shapes';
import { execArgv } from '../../src/lib/server/ssh/client';
import { closeAll, lease, pooledCount } from '../../src/lib/server/ssh/pool';
import { keyTarget } from '../../src/lib/server/proxmox/key-role';
import { generateKeyPair, startProxmoxDouble, type KeyPair, type ProxmoxDouble } from '../doubles/proxmox/server';
import { addHost, decide, newOperator, newSession } from '../helpers/executions';
import { STRONG, useStage } from '../helpers/stage';

useStage({ env: { NOMOS_SNAPSHOT_BEFORE: 'on', NOMOS_HEALTH_AFTER: 'on', NOMOS_HOST_WAIT_MIN: '0.05' } });

const GATE = resolve('deploy/nomos-gate');
const ALLOW = resolve('deploy/nomos-gate.allow');
const dir = mkdtempSync(join(tmpdir(), 'nomos-two-keys-'));
const STALE = join(dir, 'stale.allow');
const forced = (role: string, allow = ALLOW) => `perl ${GATE} --role ${role} --allow ${allow}`;
const FORCED = { read: forced('read'), mutate: forced('mutate'), stale: forced('mutate', STALE) };

let pve: ProxmoxDouble;
const keys: Record<'read' | 'mutate' | 'stale', KeyPair> = {} as never;
let operatorId: string;
let sessionId: string;

beforeAll(async () => {
	writeFileSync(STALE, readFileSync(ALLOW, 'utf8').replace(/^catalogue \S+$/m, 'catalogue 0000000000000000'));
	for (const k of ['read', 'mutate', 'stale'] as const) keys[k] = await generateKeyPair(dir, k);
	const line = (k: keyof typeof keys) => `restrict,command="${FORCED[k]}" ${readFileSync(keys[k].publicKeyPath, 'utf8').trim()}`;
	pve = await startProxmoxDouble({ ...STRONG, delayMs: 1, authorizedKeys: [line('read'), line('mutate'), line('stale')].join('\n') });
	await addHost(pve);
	await useKeys(keys.read.privateKeyPath, keys.mutate.privateKeyPath);
	operatorId = await newOperator('alice');
	sessionId = await newSession(operatorId, 'two keys');
}, 60_000);

afterAll(async () => {
	closeAll();
	await pve?.close();
	rmSync(dir, { recursive: true, force: true });
});

/** Sets the host's keys as Settings does (updateHost: a change of keys forgets the last gate check). */
async function useKeys(keyPath: string, mutationKeyPath: string | null): Promise<void> {
	const h = (await getHostByName(sql(), 'strong'))!;
	await updateHost(sql(), h.id, { name: h.name, address: h.address, port: h.port, username: h.username, keyPath, mutationKeyPath });
}
const host = async () => (await getHostByName(sql(), 'strong'))!;

/** What the double received since `from`, each command with the key it came through. */
const received = (from: number) =>
	pve
		.execTimes()
		.slice(from)
		.map((t) => ({ command: t.command, key: (Object.keys(FORCED) as (keyof typeof FORCED)[]).find((k) => FORCED[k] === t.forced) ?? 'shell' }));
const by = (list: ReturnType<typeof received>, key: string) => list.filter((c) => c.key === key).map((c) => c.command);
const GATE_READS = ["'nomos-gate' '--version'", "'id' '-u'"];

async function approveAndRun(input: Record<string, unknown>): Promise<ExecutionRow> {
	const r = await requestExecution(sessionId, input);
	if ('error' in r) throw new Error(r.error);
	// A read-only action needs no approval.
	if (r.execution.status === 'awaiting_approval') expect((await decide(r.execution.id, operatorId, 'approved')).ok).toBe(true);
	await runExecution(r.execution.id);
	return (await getExecution(sql(), r.execution.id))!;
}

describe('two keys per host', () => {
	it('sync reads with the read key; the mutation key is only asked what it reaches', async () => {
		const from = pve.execTimes().length;
		const r = await syncHost(await host());
		expect(r.ok).toBe(true);
		const got = received(from);
		expect(by(got, 'read').some((c) => c.includes("'pvesh' 'get' '/nodes'"))).toBe(true);
		expect(by(got, 'mutate')).toEqual(GATE_READS);
		expect(by(got, 'shell')).toEqual([]);
		// The gate check a first sync makes is stored: both keys gated as they should be.
		const h = await host();
		expect([h.gateState, h.gateProblem]).toEqual(['gated', null]);
		expect(h.gateCheckedAt).not.toBeNull();
	}, 60_000);

	it('an approved mutation runs its changing steps with the mutation key and its reads with the read key', async () => {
		const from = pve.execTimes().length;
		const e = await approveAndRun({ target: 'strong/100', action: 'pct_set', params: { cores: 2 }, reason: 'more cores' });
		expect([e.status, e.error]).toEqual(['succeeded', null]);
		const got = received(from);
		const mutating = by(got, 'mutate');
		expect(mutating[0]).toBe(GATE_READS[0]);
		expect(mutating.slice(1).map((c) => /'nomos' '[0-9a-f]+' ('pct' '[a-z]+')/.exec(c)?.[1])).toEqual(["'pct' 'snapshot'", "'pct' 'set'"]);
		const reads = by(got, 'read');
		expect(reads[0]).toBe(GATE_READS[0]);
		expect(reads.some((c) => c.includes("'pct' 'config' '100'"))).toBe(true);
		expect(reads.some((c) => c.includes("'pct' 'set'") || c.includes("'pct' 'snapshot'"))).toBe(false);
		expect((await pve.containers()).find((c) => c.vmid === 100)?.cores).toBe(2);
		// Each key has its own pooled connection; neither retired the other.
		expect(pooledCount('strong')).toBe(2);
	}, 60_000);

	it('a read-only execution uses the read key alone', async () => {
		const from = pve.execTimes().length;
		const e = await approveAndRun({ target: 'strong/100', action: 'pct_status', params: {}, reason: 'look' });
		expect(e.status).toBe('succeeded');
		const got = received(from);
		expect(by(got, 'mutate')).toEqual([]);
		expect(by(got, 'read').length).toBeGreaterThan(1);
	}, 60_000);

	it('a read key asked for a mutation is refused by its gate, and nothing runs', async () => {
		const argvBefore = (await pve.argvLog()).length;
		const { client, release } = await lease(keyTarget(await host(), 'read'));
		try {
			const r = await execArgv(client, ['pct', 'set', '101', '--cores', '4'], { timeoutMs: 10_000, group: true });
			expect(r.exitCode).toBe(126);
			expect(r.stderr).toMatch(/^nomos-gate: refused: not a catalogue command for the read key: pct set 101 --cores/);
		} finally {
			release();
		}
		expect((await pve.argvLog()).slice(argvBefore)).toEqual([]);
	}, 30_000);

	it('a mutation key gated as a read key: the execution is refused by name before any step', async () => {
		await useKeys(keys.read.privateKeyPath, keys.read.privateKeyPath);
		try {
			const argvBefore = (await pve.argvLog()).length;
			const e = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 3 }, reason: 'more cores' });
			expect(e.status).toBe('failed');
			expect(e.error).toBe('not run: the mutation key of strong is gated as a read key: fix its --role in authorized_keys');
			expect(e.steps.filter((s) => s.kind !== 'check')).toEqual([]);
			expect((await pve.argvLog()).slice(argvBefore).filter((a) => a[0] === 'pct' && a[1] === 'set')).toEqual([]);
		} finally {
			await useKeys(keys.read.privateKeyPath, keys.mutate.privateKeyPath);
		}
	}, 60_000);

	it('a gate of another catalogue is named, and the execution refused before any step ran', async () => {
		await useKeys(keys.read.privateKeyPath, keys.stale.privateKeyPath);
		try {
			const from = pve.execTimes().length;
			const argvBefore = (await pve.argvLog()).length;
			const e = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 3 }, reason: 'more cores' });
			expect(e.status).toBe('failed');
			expect(e.error).toBe(
				`not run: nomos-gate on strong has catalogue 0000000000000000, Nomos needs ${catalogueVersion()}: copy deploy/nomos-gate.allow of this Nomos to /usr/local/etc/nomos-gate.allow on strong`
			);
			expect(e.steps.filter((s) => s.kind !== 'check')).toEqual([]);
			// The stale key was asked its version and nothing else; nothing reached pct.
			expect(by(received(from), 'stale')).toEqual([GATE_READS[0]]);
			expect((await pve.argvLog()).slice(argvBefore)).toEqual([]);
		} finally {
			await useKeys(keys.read.privateKeyPath, keys.mutate.privateKeyPath);
		}
	}, 60_000);

	it('with one key (the double’s own, a full shell) a mutation runs as before, and the host is flagged', async () => {
		await useKeys(pve.clientKeyPath, null);
		try {
			const e = await approveAndRun({ target: 'strong/101', action: 'pct_set', params: { cores: 3 }, reason: 'more cores' });
			expect([e.status, e.error]).toEqual(['succeeded', null]);
			// Changing the keys forgot the last check: the next sync asks again and stores the warning.
			expect((await host()).gateCheckedAt).toBeNull();
			expect((await syncHost(await host())).ok).toBe(true);
			const h = await host();
			expect(h.gateState).toBe('shell');
			expect(h.gateProblem).toMatch(/the mutate key of strong still reaches a full shell/);
		} finally {
			await useKeys(keys.read.privateKeyPath, keys.mutate.privateKeyPath);
		}
	}, 60_000);

	it('NOMOS_HOSTS may name a mutation key; a restart with the same keys keeps the last check, other keys forget it', async () => {
		const cfg = {
			name: 'cfg',
			address: pve.host,
			port: pve.port,
			user: 'root',
			keyPath: keys.read.privateKeyPath,
			mutationKeyPath: keys.mutate.privateKeyPath
		};
		await upsertConfiguredHosts(sql(), [cfg]);
		const row = (await getHostByName(sql(), 'cfg'))!;
		expect([row.keyPath, row.mutationKeyPath]).toEqual([keys.read.privateKeyPath, keys.mutate.privateKeyPath]);
		await recordGateCheck(sql(), row.id, 'gated', null);
		await upsertConfiguredHosts(sql(), [cfg]);
		expect((await getHostByName(sql(), 'cfg'))!.gateState).toBe('gated');
		await upsertConfiguredHosts(sql(), [{ ...cfg, mutationKeyPath: undefined }]);
		const after = (await getHostByName(sql(), 'cfg'))!;
		expect([after.mutationKeyPath, after.gateState, after.gateCheckedAt]).toEqual([null, null, null]);
	});
});
