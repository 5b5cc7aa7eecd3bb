// Quoting fuzz: 10,000 hostile argv words must reach the remote program byte-exact, and no
// shell along the way may ever interpret one of them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareExecution } from '../../src/lib/server/executions/prepare';
import { ACTIONS } from '../../src/lib/server/proxmox/actions';
import { argvWord } from '../../src/lib/schemas/param-fields';
import { connect, execArgv, type SshTarget } from '../../src/lib/server/ssh/client';
import { shellQuote, toCommand } from '../../src/lib/server/ssh/quote';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost } from '../helpers/executions';
import { hostileValues } from '../helpers/hostile';
import { scaled } from '../helpers/time';

useTestDatabase();

const COUNT = 10_000;
const canaryDir = mkdtempSync(join(tmpdir(), 'nomos-canary-'));
const values = hostileValues(COUNT, 0x5eed_2024, canaryDir);

/** Splits into chunks of at most `maxArgs` words whose quoted command stays under `maxBytes`. */
function chunk(words: string[], maxArgs: number, maxBytes: number, fixedBytes = 0): string[][] {
	const out: string[][] = [];
	let cur: string[] = [];
	let bytes = fixedBytes;
	for (const w of words) {
		const b = Buffer.byteLength(shellQuote(w)) + 1;
		if (cur.length && (cur.length >= maxArgs || bytes + b > maxBytes)) {
			out.push(cur);
			cur = [];
			bytes = fixedBytes;
		}
		cur.push(w);
		bytes += b;
	}
	if (cur.length) out.push(cur);
	return out;
}

/** The first differing stretch of two strings, for a short failure message. */
function firstDiff(sent: string, got: string | undefined): string {
	if (got === undefined) return `sent ${JSON.stringify(sent.slice(0, 80))}, got nothing`;
	let i = 0;
	while (i < sent.length && sent[i] === got[i]) i++;
	const at = Math.max(0, i - 10);
	return `differs at ${i}: sent …${JSON.stringify(sent.slice(at, i + 20))}, got …${JSON.stringify(got.slice(at, i + 20))}`;
}

const nulJoined = (words: string[]) => Buffer.from(words.map((w) => w + '\0').join(''), 'utf8');
const canaries = () => readdirSync(canaryDir);

let pve: ProxmoxDouble;
let target: SshTarget;

beforeAll(async () => {
	pve = await startProxmoxDouble({ nodeName: 'strong', delayMs: 1, seed: [{ vmid: 100, hostname: 'fuzz', status: 'running' }] });
	await addHost(pve);
	target = {
		name: pve.nodeName,
		address: pve.host,
		port: pve.port,
		username: 'root',
		keyPath: pve.clientKeyPath,
		hostKeyFingerprint: pve.hostKeyFingerprint
	};
});

afterAll(async () => {
	await pve?.close();
	rmSync(canaryDir, { recursive: true, force: true });
});

describe('the generated corpus', () => {
	it('is 10,000 distinct-enough hostile words, all valid argv words', () => {
		expect(values).toHaveLength(COUNT);
		expect(new Set(values).size).toBeGreaterThan(COUNT * 0.85);
		expect(values.every((v) => !v.includes('\0'))).toBe(true);
		expect(values.every((v) => v.length <= 4096)).toBe(true);
		// no lone surrogates: every word survives a UTF-8 round trip
		expect(values.every((v) => Buffer.from(v, 'utf8').toString('utf8') === v)).toBe(true);
		for (const needle of [';', '$(', '`', "'", '"', '\\', '\n', '\r', '\t', '$IFS', '*', '?', '[', '~', '&&', '|', '>', '#', '!', '\u202e', '😀', '\u0301']) {
			expect(
				values.some((v) => v.includes(needle)),
				`corpus contains ${JSON.stringify(needle)}`
			).toBe(true);
		}
		expect(values.some((v) => v.startsWith('-'))).toBe(true);
		expect(values.some((v) => v === '')).toBe(true);
		expect(values.filter((v) => v.length > 1000).length).toBeGreaterThan(50);
		for (const v of values) expect(argvWord.safeParse(v).success).toBe(true);
	});
});

describe('toCommand (local shells)', () => {
	for (const shell of ['sh', 'bash']) {
		it(`round-trips every word byte-exact through ${shell} -c`, () => {
			const batches = chunk(values, 500, 120_000, 20);
			expect(batches.length).toBeLessThan(60);
			for (const batch of batches) {
				const script = `printf '%s\\0' ${toCommand(batch)}`;
				const r = spawnSync(shell, ['-c', script], { maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: canaryDir } });
				expect(r.error).toBeUndefined();
				expect(r.stderr.toString()).toBe('');
				expect(r.status).toBe(0);
				const expected = nulJoined(batch);
				if (!r.stdout.equals(expected)) {
					const got = r.stdout.toString('utf8').split('\0');
					const i = batch.findIndex((w, k) => got[k] !== w);
					expect.fail(`word ${i} changed: ${firstDiff(batch[i], got[i])}`);
				}
			}
			expect(canaries()).toEqual([]);
		});
	}

	it('refuses NUL in shellQuote, toCommand and the argv schemas', async () => {
		expect(() => shellQuote('a\0b')).toThrow(/NUL/);
		expect(() => shellQuote('\0')).toThrow(/NUL/);
		expect(() => toCommand(['echo', 'ok', 'x\0;touch /tmp/x'])).toThrow(/NUL/);
		expect(() => toCommand([])).toThrow(/empty/);
		const word = argvWord.safeParse('a\0b');
		expect(word.success).toBe(false);
		expect(word.error?.issues[0].message).toMatch(/NUL/);
		const params = ACTIONS.pct_exec.params.safeParse({ argv: ['echo', 'x\0y'] });
		expect(params.success).toBe(false);
		expect(params.error?.issues[0].path).toEqual(['argv', 1]);
		const prepared = await prepareExecution({ target: 'strong/100', action: 'pct_exec', params: { argv: ['echo', '\0'] }, reason: 'x' });
		expect(prepared).toMatchObject({ error: expect.stringMatching(/argv\.1: arguments cannot contain NUL/) });
	});
});

describe('pct exec over SSH', () => {
	it(
		'delivers every word to the container program exactly, over one connection, running nothing else',
		async () => {
			// `printf '%s\0' …` inside the CT echoes each word back NUL-terminated (pct exec runs argv without a shell).
			const head = ['printf', '%s\\0'];
			// ssh2's server refuses packets over 35,000 bytes: keep each command well below.
			const batches = chunk(values, 40, 28_000, 64);
			expect(batches.length).toBeGreaterThanOrEqual(250);
			const client: Client = await connect(target);
			const argvs: string[][] = [];
			const failures: string[] = [];
			try {
				let next = 0;
				const worker = async () => {
					while (next < batches.length) {
						const i = next++;
						const params = ACTIONS.pct_exec.params.parse({ argv: [...head, ...batches[i]] });
						const [step] = ACTIONS.pct_exec.steps(params, { vmid: '100' });
						expect(step.argv).toEqual(['pct', 'exec', '100', '--', ...head, ...batches[i]]);
						argvs[i] = step.argv;
						const r = await execArgv(client, step.argv, { timeoutMs: 30_000, maxOutput: 1 << 20 });
						if (r.exitCode !== 0 || r.stderr) failures.push(`batch ${i}: exit ${r.exitCode} ${r.stderr.slice(0, 200)}`);
						const want = nulJoined(batches[i]).toString('utf8');
						if (r.stdout !== want) {
							const got = r.stdout.split('\0');
							const k = batches[i].findIndex((w, j) => got[j] !== w);
							failures.push(`batch ${i} word ${k}: ${firstDiff(batches[i][k], got[k])}`);
						}
					}
				};
				await Promise.all(Array.from({ length: 6 }, worker));
			} finally {
				client.end();
			}
			expect(failures.slice(0, 5)).toEqual([]);

			// The same batches through the whole request path (validation, target resolution, preview).
			for (let i = 0; i < batches.length; i += 10) {
				const p = await prepareExecution({ target: 'lxc:strong/100', action: 'pct_exec', params: { argv: [...head, ...batches[i]] }, reason: 'fuzz' });
				if ('error' in p) expect.fail(`batch ${i}: ${p.error}`);
				expect(p.steps[0].argv).toEqual(argvs[i]);
				expect(p.commandPreview).toBe(toCommand(argvs[i]));
			}

			const execs = (await pve.argvLog()).filter((a) => a[0] === 'pct' && a[1] === 'exec');
			expect(execs).toHaveLength(batches.length);
			// Runs were concurrent: match each logged argv to its batch by content.
			const byKey = new Map(execs.map((a) => [JSON.stringify(a), a]));
			for (const argv of argvs) expect(byKey.get(JSON.stringify(argv)), 'logged exactly as sent').toEqual(argv);
			expect(execs.reduce((n, a) => n + a.length - 6, 0)).toBe(COUNT);
			// Nothing but `pct exec` ran: no other fake binary was invoked and no payload created its canary.
			expect((await pve.argvLog()).filter((a) => !(a[0] === 'pct' && a[1] === 'exec'))).toEqual([]);
			expect(canaries()).toEqual([]);
			// The double saw one SSH exec per command, each the single-quoted argv.
			expect(pve.execLog()).toHaveLength(batches.length);
		},
		scaled(60_000)
	);
});

describe("the catalogue's text params", () => {
	/** Every free-text param of the newer actions, with what makes a request of it valid. */
	const fields: Array<{ action: keyof typeof ACTIONS; field: string; base: Record<string, unknown> }> = [
		{ action: 'pct_set', field: 'description', base: {} },
		{ action: 'pct_snapshot', field: 'description', base: { name: 'fuzz' } },
		{ action: 'pct_snapshot', field: 'name', base: {} },
		{ action: 'pct_rollback', field: 'name', base: {} },
		{ action: 'pct_push', field: 'path', base: { content: 'x' } },
		{ action: 'pct_push', field: 'content', base: { path: '/etc/fuzz' } },
		{ action: 'pct_push', field: 'mode', base: { path: '/etc/fuzz', content: 'x' } },
		{ action: 'ct_http_check', field: 'path', base: { port: 8080 } },
		{ action: 'ct_service_active', field: 'unit', base: {} },
		{ action: 'pveam_download', field: 'template', base: {} },
		{ action: 'pveam_download', field: 'storage', base: { template: 'debian-12-standard_12.7-1_amd64.tar.zst' } },
		{ action: 'pct_resize', field: 'size', base: {} },
		{ action: 'vzdump', field: 'storage', base: {} }
	];

	it(
		'an accepted value is one whole argv word (or stdin), never spliced into a shell string',
		() => {
			const accepted: Record<string, number> = {};
			// 13 fields × 10,000 values: mismatches are collected and asserted once (an expect per value is most of the time).
			const wrong: string[] = [];
			for (const { action, field, base } of fields) {
				const def = ACTIONS[action];
				const plain =
					field === 'content' ? JSON.stringify(def.steps(def.params.parse({ ...base, [field]: 'x' }) as never, { vmid: '100' }).map((s) => s.argv)) : '';
				for (const v of values) {
					const parsed = def.params.safeParse({ ...base, [field]: v });
					if (!parsed.success) continue;
					accepted[`${action}.${field}`] = (accepted[`${action}.${field}`] ?? 0) + 1;
					const steps = def.steps(parsed.data as never, { vmid: '100' });
					const words = steps.flatMap((s) => s.argv);
					const what = `${action}.${field} ${JSON.stringify(v).slice(0, 60)}`;
					if (field === 'content') {
						// The content travels only on stdin: the commands are the same whatever it is.
						if (steps[0].stdin !== v) wrong.push(`${what}: not on stdin`);
						if (JSON.stringify(steps.map((s) => s.argv)) !== plain) wrong.push(`${what}: changed the commands`);
					} else if (action === 'ct_http_check') {
						if (!words.includes(`http://127.0.0.1:8080${v}`)) wrong.push(`${what}: not one whole word`);
					} else if (!words.includes(v)) wrong.push(`${what}: not one whole word`);
					for (const s of steps) {
						try {
							toCommand(s.argv);
						} catch (e) {
							wrong.push(`${what}: ${(e as Error).message}`);
						}
					}
				}
			}
			expect(wrong.slice(0, 5)).toEqual([]);
			// Free text really was exercised: most hostile words are valid descriptions, contents and paths.
			expect(accepted['pct_set.description']).toBeGreaterThan(COUNT * 0.9);
			expect(accepted['pct_push.content']).toBeGreaterThan(COUNT * 0.9);
			expect(accepted['pct_push.path'] ?? 0).toBeGreaterThan(100);
			// The narrow ones let nothing shell-ish through.
			for (const k of [
				'pct_snapshot.name',
				'pct_rollback.name',
				'pct_push.mode',
				'ct_service_active.unit',
				'pveam_download.template',
				'pveam_download.storage',
				'pct_resize.size',
				'vzdump.storage'
			]) {
				for (const v of values.filter((v) => /[;$`'"\\|&<>\s*?]/.test(v))) {
					const [action, field] = k.split('.') as [keyof typeof ACTIONS, string];
					const base = fields.find((f) => f.action === action && f.field === field)!.base;
					expect(ACTIONS[action].params.safeParse({ ...base, [field]: v }).success, `${k} ${JSON.stringify(v).slice(0, 60)}`).toBe(false);
				}
			}
		},
		scaled(90_000)
	);

	it(
		'pct set descriptions reach the host byte-exact over SSH',
		async () => {
			const sample = values.filter((v) => ACTIONS.pct_set.params.safeParse({ description: v }).success).slice(0, 150);
			const client: Client = await connect(target);
			const before = (await pve.argvLog()).length;
			try {
				let next = 0;
				const worker = async () => {
					while (next < sample.length) {
						const v = sample[next++];
						const [step] = ACTIONS.pct_set.steps(ACTIONS.pct_set.params.parse({ description: v }), { vmid: '100' });
						const r = await execArgv(client, step.argv, { timeoutMs: 30_000 });
						expect(r.exitCode, r.stderr).toBe(0);
					}
				};
				await Promise.all(Array.from({ length: 6 }, worker));
			} finally {
				client.end();
			}
			const sets = (await pve.argvLog()).slice(before).filter((a) => a[0] === 'pct' && a[1] === 'set');
			expect(sets).toHaveLength(sample.length);
			expect(new Set(sets.map((a) => a[4]))).toEqual(new Set(sample));
			expect(sets.every((a) => a.length === 5 && a[3] === '--description')).toBe(true);
			expect(canaries()).toEqual([]);
		},
		scaled(60_000)
	);

	it(
		'pct_push: hostile contents and paths land byte-exact and pass the sha256 read-back',
		async () => {
			const { verified } = await import('../../src/lib/server/executions/runner');
			// Contents: the hostile words joined into files of up to 32 KiB.
			const contents: string[] = [];
			let cur = '';
			for (const v of values.slice(0, 3000)) {
				if (Buffer.byteLength(cur + v + '\n') > 32 * 1024) {
					contents.push(cur);
					cur = '';
				}
				cur += v + '\n';
			}
			contents.push(cur);
			// Paths: hostile words as file names (no '/', at most 200 bytes, never '.' or '..').
			const names = values
				.map((v) => v.replace(/\//g, '_').slice(0, 60))
				.filter((n) => n && n !== '.' && n !== '..' && Buffer.byteLength(n) <= 200)
				.slice(0, 40);
			const cases = [
				...contents.map((content, i) => ({ path: `/fuzz/content-${i}`, content })),
				...names.map((n, i) => ({ path: `/fuzz/${i}-${n}`, content: `file ${i}\n` }))
			];
			const client: Client = await connect(target);
			const failures: string[] = [];
			const execsBefore = pve.execLog().length;
			try {
				let next = 0;
				const worker = async () => {
					while (next < cases.length) {
						const c = cases[next++];
						const params = ACTIONS.pct_push.params.parse(c);
						const [push, check] = ACTIONS.pct_push.steps(params, { vmid: '100' });
						const r = await execArgv(client, push.argv, { timeoutMs: 30_000, stdin: Buffer.from(push.stdin!, 'utf8') });
						if (r.exitCode !== 0) failures.push(`${JSON.stringify(c.path)}: push exit ${r.exitCode} ${r.stderr.slice(0, 200)}`);
						const v = await execArgv(client, check.argv, { timeoutMs: 30_000 });
						if (v.exitCode !== 0 || !verified(check.verify!, v.stdout))
							failures.push(`${JSON.stringify(c.path)}: verify ${v.exitCode} ${v.stdout.slice(0, 200)} ${v.stderr.slice(0, 200)}`);
						const onDisk = await pve.guestFile(100, c.path);
						if (!onDisk?.equals(Buffer.from(c.content, 'utf8'))) failures.push(`${JSON.stringify(c.path)}: content differs`);
					}
				};
				await Promise.all(Array.from({ length: 4 }, worker));
			} finally {
				client.end();
			}
			expect(failures.slice(0, 5)).toEqual([]);
			expect(contents.length).toBeGreaterThan(5);
			// The content never travelled on a command line.
			const log = pve.execLog().slice(execsBefore).join('\n');
			for (const c of contents) expect(log.includes(c.slice(0, 200))).toBe(false);
			expect(canaries()).toEqual([]);
		},
		scaled(120_000)
	);
});
