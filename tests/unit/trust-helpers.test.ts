import { stat, rm, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ModelMessage } from 'ai';
import { isAdminRoute, safeNext } from '../../src/lib/server/auth/guard';
import { fitHistory } from '../../src/lib/server/agent/history';
import { boundedForStorage, boundedText, MAX_TOOL_INPUT_BYTES } from '../../src/lib/server/agent/tools/context';
import { writeInitdbPasswordFile } from '../../src/lib/server/db/embedded';
import { connect, SshError } from '../../src/lib/server/ssh/client';

const origin = 'http://127.0.0.1:3000';

describe('safeNext (the redirect after sign-in)', () => {
	it.each([
		'/\\evil.example/phish',
		'//evil.example',
		'/%5Cevil.example/phish',
		'/%2F%2Fevil.example',
		'/%2f%5cevil',
		'https:evil.example',
		'https://evil.example/',
		'javascript:alert(1)',
		'/\t/evil.example',
		' /x',
		''
	])('%j stays on the app', (next) => {
		const out = safeNext(next, origin);
		expect(new URL(out, origin).origin).toBe(origin);
		expect(out.startsWith('/')).toBe(true);
		expect(out).not.toMatch(/evil/);
	});
	it('keeps a plain path with its query', () => {
		expect(safeNext('/chat/abc?x=1#y', origin)).toBe('/chat/abc?x=1#y');
		expect(safeNext('/ops', origin)).toBe('/ops');
	});
});

describe('admin routes are recognised by route id', () => {
	it.each([
		['/(app)/admin/review', true],
		['/(app)/admin/review/[sessionId]/export', true],
		['/(app)/admin/audit', true],
		['/(app)/ops', false],
		['/(app)/administer', false],
		[null, false]
	])('%s → %s', (id, want) => expect(isAdminRoute(id)).toBe(want));
});

describe('bounded model input', () => {
	it('stores a 1 MB argument as a marker with its size and a preview', () => {
		const big = { command: 'x'.repeat(1_000_000) };
		const stored = boundedForStorage(big) as { truncated: boolean; originalBytes: number; preview: string };
		expect(stored.truncated).toBe(true);
		expect(stored.originalBytes).toBe(JSON.stringify(big).length);
		expect(JSON.stringify(stored).length).toBeLessThan(2000);
		expect(boundedForStorage({ a: 1 })).toEqual({ a: 1 });
		expect(MAX_TOOL_INPUT_BYTES).toBe(40 * 1024);
		expect(boundedText('y'.repeat(10_000)).length).toBeLessThan(2100);
	});

	it('keeps the replayed history under its budget: tool outputs first, then whole exchanges, never the latest question', () => {
		const tool = (i: number): ModelMessage[] => [
			{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `t${i}`, toolName: 'http_get', input: {} }] },
			{
				role: 'tool',
				content: [{ type: 'tool-result', toolCallId: `t${i}`, toolName: 'http_get', output: { type: 'json', value: { text: 'z'.repeat(50_000) } } }]
			}
		];
		const history: ModelMessage[] = [{ role: 'user', content: 'first' }, ...tool(1), ...tool(2), { role: 'user', content: 'latest question' }, ...tool(3)];
		const fitted = fitHistory(history, 60_000);
		const size = JSON.stringify(fitted).length;
		expect(size).toBeLessThan(60_000 + 1000);
		expect(JSON.stringify(fitted)).toContain('latest question');
		expect(JSON.stringify(fitted)).toContain('shortened to fit the history budget');
		// The newest tool output (after the latest operator message) is kept whole.
		expect(JSON.stringify(fitted.at(-1))).toContain('z'.repeat(50_000));
		// Every tool result still follows its call.
		fitted.forEach((m, i) => {
			if (m.role === 'tool') expect(fitted[i - 1].role).toBe('assistant');
		});
		const chatty: ModelMessage[] = [
			...Array.from({ length: 100 }, (_, i) => ({ role: 'user' as const, content: `${i} ${'q'.repeat(1000)}` })),
			{ role: 'user', content: 'latest question' }
		];
		const tiny = fitHistory(chatty, 20_000);
		expect(JSON.stringify(tiny[0])).toContain('earlier messages of this conversation were left out');
		expect(JSON.stringify(tiny).length).toBeLessThan(21_000);
		expect(JSON.stringify(tiny.at(-1))).toContain('latest question');
	});
});

describe('secrets', () => {
	it('the initdb password file is 0600 inside a 0700 directory', async () => {
		const file = await writeInitdbPasswordFile('s3cret', null);
		try {
			expect((await stat(file)).mode & 0o777).toBe(0o600);
			expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
			expect(await readFile(file, 'utf8')).toBe('s3cret\n');
		} finally {
			await rm(path.dirname(file), { recursive: true, force: true });
		}
	});

	it('an unreadable SSH key is reported without its local path', async () => {
		const keyPath = '/etc/nomos-secret-dir/id_ed25519';
		const err = await connect({ name: 'strong', address: '127.0.0.1', port: 1, username: 'root', keyPath, hostKeyFingerprint: 'SHA256:x' }).catch((e) => e);
		expect(err).toBeInstanceOf(SshError);
		expect(err.message).not.toContain(keyPath);
		expect(err.message).not.toContain('nomos-secret-dir');
		expect(err.message).toContain('strong');
		expect(err.localDetail).toContain(keyPath);
	});
});

describe('the per-call argument cap', () => {
	it('refuses a call over the cap before it runs, naming the largest field', async () => {
		const { buildTools } = await import('../../src/lib/server/agent/tools/index');
		const tools = buildTools({
			sessionId: '00000000-0000-4000-8000-000000000001',
			messageId: 'm',
			signal: new AbortController().signal,
			turn: { httpGets: 0 }
		});
		const input = { target: 'lxc:strong/100', action: 'pct_exec', params: { argv: ['ls', 'y'.repeat(50_000)] }, reason: 'r' };
		const out = await tools.request_execution.execute!(input, { toolCallId: 't', messages: [] });
		expect(out).toMatchObject({ error: expect.stringMatching(/at most 40960 \(the largest field is params\.argv\.1, 50000 characters\)/) });
	});
});
