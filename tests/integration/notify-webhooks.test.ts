// Outgoing webhooks against real Postgres, the SSH Proxmox double, a real graphile-worker and a
// real local HTTP receiver: a waiting approval (or question) queues one delivery job per webhook
// that is on, in the transaction that makes it wait (rolled back → nothing queued or sent);
// ntfy and JSON bodies; a 500 is retried and then works; failures (status, redirect, timeout,
// refused) are recorded and shown; URLs and headers never come back in full; admins only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { insertMessage } from '../../src/lib/server/db/queries/messages';
import { requestExecution } from '../../src/lib/server/executions/request';
import { askOperatorTool } from '../../src/lib/server/agent/tools/ask-operator';
import { proposePlanTool } from '../../src/lib/server/agent/tools/propose-plan';
import { syncAllHosts } from '../../src/lib/server/inventory/sync';
import { startWorker, type WorkerHandle } from '../../src/lib/server/jobs/worker';
import { notificationsRouter } from '../../src/lib/server/trpc/routers/notifications';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { resetEnvCache } from '../../src/lib/server/env';
import { notify__webhook } from '../../tasks/notify__webhook';
import { headerText } from '../../src/lib/server/notify/deliver';
import { startProxmoxDouble, type ProxmoxDouble } from '../doubles/proxmox/server';
import { useTestDatabase } from '../helpers/db';
import { addHost, decide, jobs, newOperator, newSession, useHub, waitUntil } from '../helpers/executions';
import { scaled } from '../helpers/time';

const dbUrl = useTestDatabase();
const until = <T>(probe: () => T | null | Promise<T | null>, timeoutMs: number) =>
	waitUntil(async () => probe(), 'the condition', { timeoutMs, intervalMs: 50 });
useHub();

type Received = { path: string; headers: http.IncomingHttpHeaders; body: string };

/** A real HTTP receiver: answers each request with the next scripted reply (then 200), records what came. */
async function startReceiver() {
	const received: Received[] = [];
	let replies: Array<(res: http.ServerResponse) => void> = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c: Buffer) => (body += c.toString('utf8')));
		req.on('end', () => {
			received.push({ path: req.url ?? '', headers: req.headers, body });
			const reply = replies.shift();
			if (reply) reply(res);
			else res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"ok"}');
		});
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		base,
		received,
		script(...r: Array<(res: http.ServerResponse) => void>) {
			replies = r;
		},
		reset() {
			received.length = 0;
			replies = [];
		},
		close: () => new Promise<void>((r) => server.close(() => r()))
	};
}

let pve: ProxmoxDouble;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let admin: { id: string; username: string; role: 'admin' };
let sessionId: string;

const caller = (user: { id: string; username: string; role: 'admin' | 'operator' }) =>
	createCallerFactory(notificationsRouter)({ user, event: {} as RequestEvent });
const notifyJobs = async () =>
	(await jobs('notify__webhook')).map((j) => j.payload as { webhookId: string; notice: { kind: string; title: string; path: string } });
const deliveries = (webhookId: string) =>
	sql()<{ ok: boolean; httpStatus: number | null; error: string | null; attempt: number; final: boolean }[]>`
		select ok, http_status as "httpStatus", error, attempt, final from webhook_deliveries where webhook_id = ${webhookId} order by id`;

async function pending(vmid = 101) {
	const r = await requestExecution(sessionId, { target: `lxc:strong/${vmid}`, action: 'pct_start', params: {}, reason: 'db is down' });
	if ('error' in r) throw new Error(r.error);
	return r.execution;
}

beforeAll(async () => {
	Object.assign(process.env, { ORIGIN: '' });
	resetEnvCache();
	rx = await startReceiver();
	pve = await startProxmoxDouble({
		nodeName: 'strong',
		delayMs: 1,
		seed: [
			{ vmid: 101, hostname: 'db', status: 'stopped' },
			{ vmid: 102, hostname: 'web', status: 'stopped' }
		]
	});
	await addHost(pve);
	await syncAllHosts();
	admin = { id: await newOperator('root-admin'), username: 'root-admin', role: 'admin' };
	sessionId = await newSession(admin.id, 'notify');
});

afterAll(async () => {
	await pve?.close();
	await rx?.close();
});

beforeEach(async () => {
	await sql()`delete from webhooks`;
	await sql()`delete from graphile_worker._private_jobs`;
	await sql()`update executions set status = 'denied' where status = 'awaiting_approval'`;
	await caller(admin).setOrigin({ origin: '' });
	rx.reset();
});

describe('webhook notices', () => {
	it('a waiting approval queues one job per webhook that is on, in its transaction; nothing for what does not wait', async () => {
		const on = await caller(admin).createWebhook({ name: 'phone', kind: 'ntfy', url: `${rx.base}/nomos-topic` });
		const off = await caller(admin).createWebhook({ name: 'old', kind: 'json', url: `${rx.base}/hook` });
		await caller(admin).setEnabled({ id: off.id, enabled: false });

		const e = await pending();
		const queued = await notifyJobs();
		expect(queued).toHaveLength(1);
		expect(queued[0].webhookId).toBe(on.id);
		expect(queued[0].notice).toMatchObject({
			kind: 'approval',
			title: 'Approval waiting: pct_start on lxc:strong/101',
			path: `/chat/${sessionId}#execution-${e.id}`
		});

		// A read-only request runs at once: nobody waits, nothing is queued.
		const ro = await requestExecution(sessionId, { target: 'lxc:strong/101', action: 'pct_status', params: {}, reason: 'look' });
		expect('error' in ro).toBe(false);
		expect(await notifyJobs()).toHaveLength(1);

		// A question waits too.
		const [m] = await sql().begin((tx) => insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'complete', origin: 'chat' }).then((r) => [r]));
		const ask = askOperatorTool({ sessionId, messageId: m.id, signal: new AbortController().signal, turn: { httpGets: 0 } });
		await ask.execute!({ prompt: 'Which host should run it?' }, { toolCallId: 't1', messages: [] });
		const after = await notifyJobs();
		expect(after).toHaveLength(2);
		expect(after[1].notice).toMatchObject({
			kind: 'question',
			title: 'Nomos asks you',
			path: expect.stringMatching(new RegExp(`^/chat/${sessionId}#question-`))
		});

		// And a proposed plan.
		const plan = proposePlanTool({ sessionId, messageId: m.id, signal: new AbortController().signal, turn: { httpGets: 0 } });
		const out = (await plan.execute!(
			{
				title: 'Start both',
				steps: [
					{ action: 'pct_start', target: 'lxc:strong/101', params: {}, why: 'db' },
					{ action: 'pct_start', target: 'lxc:strong/102', params: {}, why: 'web' }
				]
			},
			{ toolCallId: 't3', messages: [] }
		)) as { planId: string };
		const last = (await notifyJobs()).at(-1)!;
		expect(last.notice).toMatchObject({
			kind: 'plan',
			title: 'Plan waiting: Start both',
			text: '2 steps to approve',
			path: `/chat/${sessionId}#plan-${out.planId}`
		});
	});

	it('one transaction with the approval: rolled back → no job; the job not queued → no waiting approval', async () => {
		await caller(admin).createWebhook({ name: 'phone', kind: 'ntfy', url: `${rx.base}/nomos-topic` });
		// Fails at commit, after everything in the transaction (the job included) was written.
		await sql().unsafe(`
			create or replace function test_doom() returns trigger language plpgsql as $$
			begin if new.reason = 'doomed' then raise exception 'doomed at commit'; end if; return null; end $$;
			drop trigger if exists test_doom on executions;
			create constraint trigger test_doom after insert on executions deferrable initially deferred for each row execute function test_doom();`);
		try {
			await expect(requestExecution(sessionId, { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'doomed' })).rejects.toThrow(
				'doomed at commit'
			);
		} finally {
			await sql().unsafe('drop trigger test_doom on executions; drop function test_doom();');
		}
		expect(await sql()`select 1 from executions where reason = 'doomed'`).toHaveLength(0);
		expect(await notifyJobs()).toHaveLength(0);

		// The other way round: when the job cannot be queued, the approval does not start waiting
		// either (queued after the commit, the wait would stay and its notice be lost).
		await sql().unsafe(`
			create or replace function test_queue_down() returns trigger language plpgsql as $$
			begin raise exception 'job queue down'; end $$;
			create trigger test_queue_down before insert on graphile_worker._private_jobs for each row execute function test_queue_down();`);
		try {
			await expect(requestExecution(sessionId, { target: 'lxc:strong/102', action: 'pct_start', params: {}, reason: 'unqueued' })).rejects.toThrow(
				'job queue down'
			);
		} finally {
			await sql().unsafe('drop trigger test_queue_down on graphile_worker._private_jobs; drop function test_queue_down();');
		}
		expect(await sql()`select 1 from executions where reason = 'unqueued'`).toHaveLength(0);
		// The same request that commits does queue one (the test above fails without the feature).
		await pending(102);
		expect(await notifyJobs()).toHaveLength(1);
	});

	describe('delivery by the worker', () => {
		let worker: WorkerHandle | undefined;
		beforeAll(async () => {
			worker = await startWorker({ url: dbUrl(), concurrency: 2, taskList: { notify__webhook } });
		});
		afterAll(async () => {
			await worker?.stop();
		});

		it('ntfy: text body, Title (RFC 2047 when not ASCII), Tags and Click to the card at the public origin', async () => {
			await caller(admin).setOrigin({ origin: 'https://nomos.example.net' });
			const hook = await caller(admin).createWebhook({
				name: 'phone',
				kind: 'ntfy',
				url: `${rx.base}/nomos-topic`,
				headers: { Authorization: 'Bearer tk_secret_123' }
			});
			const e = await pending();
			await until(() => (rx.received.length ? rx.received : null), 10_000);
			const r = rx.received[0];
			expect(r.path).toBe('/nomos-topic');
			expect(r.headers.title).toBe('Approval waiting: pct_start on lxc:strong/101');
			expect(r.headers.tags).toBe('warning');
			expect(r.headers.click).toBe(`https://nomos.example.net/chat/${sessionId}#execution-${e.id}`);
			expect(r.headers.authorization).toBe('Bearer tk_secret_123');
			expect(r.body).toContain('db is down');
			expect(r.body).toContain("'pct' 'start' '101'");
			await until(async () => ((await deliveries(hook.id)).length ? true : null), 5000);
			expect(await deliveries(hook.id)).toEqual([{ ok: true, httpStatus: 200, error: null, attempt: 1, final: true }]);

			// A question in another language: the Title header is an encoded-word.
			rx.reset();
			const [m] = await sql().begin((tx) =>
				insertMessage(tx, { sessionId, role: 'assistant', parts: [], status: 'complete', origin: 'chat' }).then((r) => [r])
			);
			await sql()`update executions set status = 'denied' where status = 'awaiting_approval'`;
			await askOperatorTool({ sessionId, messageId: m.id, signal: new AbortController().signal, turn: { httpGets: 0 } }).execute!(
				{ prompt: 'Größe für „db“?' },
				{ toolCallId: 't2', messages: [] }
			);
			await until(() => (rx.received.length ? true : null), 10_000);
			expect(rx.received[0].headers.tags).toBe('question');
			expect(rx.received[0].body).toBe('Größe für „db“?');
			expect(rx.received[0].headers.title).toBe('Nomos asks you');
			// A plan's title comes from the model and may be in any language.
			expect(headerText('Größe für db')).toBe(`=?UTF-8?B?${Buffer.from('Größe für db').toString('base64')}?=`);
			expect(headerText('line\nbreak')).toBe('line break');
		});

		it('JSON: {kind, sessionId, title, text, url, at}; a 500 is retried with backoff and then works; the failure is shown', async () => {
			const hook = await caller(admin).createWebhook({ name: 'json', kind: 'json', url: `${rx.base}/hook?token=abcdef123` });
			rx.script((res) => res.writeHead(500).end('upstream down'));
			const e = await pending();
			await until(() => (rx.received.length >= 2 ? true : null), 20_000);
			const first = JSON.parse(rx.received[0].body) as Record<string, unknown>;
			expect(first).toEqual({
				kind: 'approval',
				sessionId,
				title: 'Approval waiting: pct_start on lxc:strong/101',
				text: expect.stringContaining('db is down'),
				url: null,
				at: expect.any(String)
			});
			expect(rx.received[1].body).toBe(rx.received[0].body);
			await until(async () => ((await deliveries(hook.id)).length >= 2 ? true : null), 5000);
			expect(await deliveries(hook.id)).toEqual([
				{ ok: false, httpStatus: 500, error: 'HTTP 500 Internal Server Error', attempt: 1, final: false },
				{ ok: true, httpStatus: 200, error: null, attempt: 2, final: true }
			]);
			const [view] = (await caller(admin).settings()).webhooks;
			expect(view.failures).toMatchObject([{ ok: false, httpStatus: 500, error: 'HTTP 500 Internal Server Error', attempt: 1 }]);
			expect(view.lastOkAt).toEqual(expect.any(String));
			// Secrets are not shown back in full.
			expect(view.maskedUrl).toBe(`${rx.base}/•••?token=•••`);
			expect(JSON.stringify(view)).not.toContain('abcdef123');
			expect(e.status).toBe('awaiting_approval');
		});

		it('a retry after the approval was decided sends nothing', async () => {
			const hook = await caller(admin).createWebhook({ name: 'json', kind: 'json', url: `${rx.base}/hook` });
			rx.script((res) => res.writeHead(503).end());
			const e = await pending();
			await until(async () => ((await deliveries(hook.id)).length ? true : null), 10_000);
			await decide(e.id, admin.id, 'denied');
			await until(async () => ((await notifyJobs()).length === 0 ? true : null), 15_000);
			expect(rx.received).toHaveLength(1);
			expect(await deliveries(hook.id)).toMatchObject([{ ok: false, httpStatus: 503, attempt: 1 }]);
		});
	});

	it('Send test tells the status and a fixed reason, never what the target answered (no read-back channel)', async () => {
		const secret = 'root:x:0:0:internal-admin-panel-7c1e';
		rx.script((res) => res.writeHead(500, 'made-up reason ' + secret).end(`{"error": "${secret}"}`));
		const hook = await caller(admin).createWebhook({ name: 'internal', kind: 'json', url: `${rx.base}/admin` });
		const r = await caller(admin).sendTest({ id: hook.id });
		expect(r).toEqual({ ok: false, httpStatus: 500, error: 'HTTP 500 Internal Server Error' });
		rx.script((res) => res.writeHead(418).end(secret));
		expect(await caller(admin).sendTest({ id: hook.id })).toEqual({ ok: false, httpStatus: 418, error: "HTTP 418 I'm a Teapot" });
		const all = JSON.stringify(await caller(admin).settings());
		expect(all).not.toContain('internal-admin-panel');
		expect(JSON.stringify(await sql()`select * from webhook_deliveries`)).not.toContain('internal-admin-panel');
		rx.reset();
	});

	it(
		'Send test: a redirect is not followed, a silent receiver times out after 5 s, a closed port is refused; each shown',
		async () => {
			const other = await startReceiver();
			try {
				rx.script((res) => res.writeHead(302, { location: `${other.base}/elsewhere` }).end());
				const hook = await caller(admin).createWebhook({ name: 'redirect', kind: 'ntfy', url: `${rx.base}/topic` });
				expect(await caller(admin).sendTest({ id: hook.id })).toEqual({
					ok: false,
					httpStatus: 302,
					error: `redirected to ${new URL(other.base).host}; redirects are not followed`
				});
				expect(other.received).toHaveLength(0);

				rx.script(() => undefined);
				const t0 = Date.now();
				expect(await caller(admin).sendTest({ id: hook.id })).toEqual({ ok: false, httpStatus: null, error: 'no answer within 5 s' });
				expect(Date.now() - t0).toBeLessThan(7000);

				const gone = await startReceiver();
				await gone.close();
				const closed = await caller(admin).createWebhook({ name: 'closed', kind: 'json', url: `${gone.base}/x` });
				expect(await caller(admin).sendTest({ id: closed.id })).toMatchObject({ ok: false, httpStatus: null, error: expect.stringContaining('ECONNREFUSED') });

				rx.reset();
				expect(await caller(admin).sendTest({ id: hook.id })).toEqual({ ok: true, httpStatus: 200 });
				expect(rx.received[0].headers.title).toBe('Nomos test notification');

				const views = (await caller(admin).settings()).webhooks;
				const r = views.find((v) => v.id === hook.id)!;
				expect(r.failures.map((f) => f.error)).toEqual(['no answer within 5 s', `redirected to ${new URL(other.base).host}; redirects are not followed`]);
				expect(r.lastOkAt).not.toBeNull();
				expect(views.find((v) => v.id === closed.id)!.failures).toHaveLength(1);
			} finally {
				await other.close();
			}
		},
		scaled(20_000)
	);

	it('URL secrets and header values are masked; admins only; bad input is refused by field', async () => {
		const hook = await caller(admin).createWebhook({
			name: 'ntfy',
			kind: 'ntfy',
			url: 'https://user:pa55word@ntfy.lan:8443/nomos-alerts-7f3k?auth=tk_abc',
			headers: { Authorization: 'Bearer tk_secret_123' }
		});
		expect(hook.maskedUrl).toBe('https://•••:•••@ntfy.lan:8443/no•••?auth=•••');
		expect(hook.maskedHeaders).toEqual({ Authorization: 'Be•••' });
		// A secret anywhere in the path is masked, also before a trailing slash.
		const slash = await caller(admin).createWebhook({ name: 'slash', kind: 'json', url: 'https://hooks.example.net/api/hook/s3cr3t-hook-id/' });
		expect(slash.maskedUrl).toBe('https://hooks.example.net/•••/•••/s3•••/');
		const all = JSON.stringify(await caller(admin).settings());
		for (const secret of ['pa55word', 'nomos-alerts-7f3k', 'tk_abc', 'tk_secret_123', 's3cr3t-hook-id']) expect(all).not.toContain(secret);

		const op = { id: await newOperator('plain-op'), username: 'plain-op', role: 'operator' as const };
		await expect(caller(op).settings()).rejects.toThrow('Admins only.');
		await expect(caller(op).createWebhook({ name: 'x', kind: 'json', url: 'http://127.0.0.1/x' })).rejects.toThrow('Admins only.');
		await expect(caller(op).sendTest({ id: hook.id })).rejects.toThrow('Admins only.');
		await expect(caller(admin).createWebhook({ name: 'x', kind: 'json', url: 'file:///etc/passwd' })).rejects.toThrow('url: an http:// or https:// address');
		await expect(caller(admin).setOrigin({ origin: 'https://nomos.example.net/path' })).rejects.toThrow('origin: like https://nomos.example.net');
	});

	it('a change keeps the URL and headers unless new ones are given, and Send test goes where it now points', async () => {
		rx.reset();
		const stored = async (id: string) =>
			(
				await sql()<
					{ url: string; headers: Record<string, string>; name: string; kind: string }[]
				>`select url, headers, name, kind from webhooks where id = ${id}`
			)[0];
		const hook = await caller(admin).createWebhook({
			name: 'old name',
			kind: 'ntfy',
			url: `${rx.base}/old-topic`,
			headers: { Authorization: 'Bearer tk_keep' }
		});

		// Name and kind only: the secrets stay as they were.
		const renamed = await caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json' });
		expect(renamed).toMatchObject({ name: 'phone', kind: 'json', maskedUrl: hook.maskedUrl, maskedHeaders: hook.maskedHeaders });
		expect(await stored(hook.id)).toEqual({ url: `${rx.base}/old-topic`, headers: { Authorization: 'Bearer tk_keep' }, name: 'phone', kind: 'json' });

		// A new URL; then new headers replace all the old ones; then none.
		await caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', url: `${rx.base}/new-topic` });
		const sent = await caller(admin).sendTest({ id: hook.id });
		expect(sent.ok).toBe(true);
		expect(rx.received.map((r) => r.path)).toEqual(['/new-topic']);
		expect(rx.received[0].headers.authorization).toBe('Bearer tk_keep');
		await caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', headers: { 'X-Token': 'tk_new' } });
		expect((await stored(hook.id)).headers).toEqual({ 'X-Token': 'tk_new' });
		await caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', headers: {} });
		expect((await stored(hook.id)).headers).toEqual({});

		// Another host: the kept headers would go with it, so they must be typed again or removed.
		await caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', headers: { Authorization: 'Bearer tk_keep' } });
		await expect(caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', url: 'https://elsewhere.example.net/topic' })).rejects.toThrow(
			'headers: the URL now points at another host'
		);
		expect((await stored(hook.id)).url).toBe(`${rx.base}/new-topic`);

		// Bad input changes nothing and says which field; a plain operator may not; the trail names no secret.
		await expect(caller(admin).updateWebhook({ id: hook.id, name: 'phone', kind: 'json', url: 'ftp://x' })).rejects.toThrow(
			'url: an http:// or https:// address'
		);
		await expect(caller(admin).updateWebhook({ id: hook.id, name: '', kind: 'json' })).rejects.toThrow('name: required');
		expect((await stored(hook.id)).url).toBe(`${rx.base}/new-topic`);
		const op = { id: await newOperator('plain-op-2'), username: 'plain-op-2', role: 'operator' as const };
		await expect(caller(op).updateWebhook({ id: hook.id, name: 'mine', kind: 'json' })).rejects.toThrow('Admins only.');
		await expect(caller(admin).updateWebhook({ id: '00000000-0000-4000-8000-000000000000', name: 'x', kind: 'json' })).rejects.toThrow('No such webhook.');
		const trail = await sql()<
			{ detail: Record<string, unknown> }[]
		>`select detail from audit_log where action = 'webhook.updated' and subject_id = ${hook.id} order by id`;
		expect(trail).toHaveLength(5);
		expect(trail[1].detail).toMatchObject({ before: { name: 'phone', kind: 'json', url: `${rx.base}/ol•••` }, url: `${rx.base}/ne•••` });
		expect(JSON.stringify(trail)).not.toMatch(/tk_keep|tk_new|new-topic|old-topic/);
	});
});
