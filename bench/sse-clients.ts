// Benchmark client process: opens N SSE streams (or N 3-second pollers) against one target and
// records, per connection, which event ids arrived and when. Driven by bench/realtime.ts over
// the IPC channel (`node --import tsx bench/sse-clients.ts`, stdio 'ipc').
//
// Timestamps are CLOCK_MONOTONIC (process.hrtime), which every process on the machine shares,
// so "receipt − commit" across processes needs no clock sync.
import http from 'node:http';

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

type Cmd =
	| { cmd: 'open'; mode: 'sse'; url: string; count: number; headers: Record<string, string>; batch?: number }
	| { cmd: 'open'; mode: 'poll'; url: string; count: number; headers: Record<string, string>; pollMs: number; after: number }
	| { cmd: 'await'; lastId: number; timeoutMs: number }
	| { cmd: 'count' }
	| { cmd: 'report'; expected: number[]; commitTimes: number[] }
	| { cmd: 'close' };

interface Conn {
	ids: number[];
	times: number[];
	live: boolean;
	error?: string;
	ended: boolean;
	stop: () => void;
}

const conns: Conn[] = [];
let requests = 0;
let stopped = false;

function send(msg: unknown): void {
	process.send?.(msg);
}

/** One SSE stream: node:http without keep-alive; only the `id:` line of each event is parsed. */
function openSse(url: string, headers: Record<string, string>): Promise<Conn> {
	return new Promise((resolve) => {
		const c: Conn = { ids: [], times: [], live: false, ended: false, stop: () => undefined };
		let settled = false;
		const done = () => {
			if (!settled) {
				settled = true;
				resolve(c);
			}
		};
		const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
			if (res.statusCode !== 200) {
				c.error = `HTTP ${res.statusCode}`;
				res.resume();
				return done();
			}
			res.setEncoding('utf8');
			let buf = '';
			res.on('data', (chunk: string) => {
				const t = nowMs();
				buf += chunk;
				let end: number;
				while ((end = buf.indexOf('\n\n')) !== -1) {
					const block = buf.slice(0, end);
					buf = buf.slice(end + 2);
					if (block.startsWith('id: ')) {
						const nl = block.indexOf('\n');
						c.ids.push(Number(block.slice(4, nl === -1 ? undefined : nl)));
						c.times.push(t);
					} else if (block.startsWith(': live')) {
						c.live = true;
						done();
					}
				}
			});
			res.on('end', () => {
				c.ended = true;
				done();
			});
			res.on('error', () => undefined);
		});
		req.on('error', (e) => {
			c.error ??= e.message;
			c.ended = true;
			done();
		});
		c.stop = () => req.destroy();
	});
}

const pollAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/** One poller: GET url?after=cursor every pollMs (fixed schedule, first one after `delay`). */
function startPoller(url: string, headers: Record<string, string>, pollMs: number, delay: number, after: number): Conn {
	const c: Conn = { ids: [], times: [], live: true, ended: false, stop: () => undefined };
	let cursor = after;
	let timer: NodeJS.Timeout | undefined;
	let next = nowMs() + delay;
	const poll = () => {
		if (stopped) return;
		next += pollMs;
		const req = http.get(`${url}?after=${cursor}`, { agent: pollAgent, headers }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d: string) => (body += d));
			res.on('end', () => {
				const t = nowMs();
				requests++;
				try {
					const rows = JSON.parse(body) as Array<{ id: number }>;
					for (const r of rows) {
						c.ids.push(r.id);
						c.times.push(t);
						cursor = r.id;
					}
				} catch (e) {
					c.error ??= `bad body: ${(e as Error).message}`;
				}
				schedule();
			});
		});
		req.on('error', (e) => {
			c.error ??= e.message;
			schedule();
		});
	};
	const schedule = () => {
		if (stopped) return;
		timer = setTimeout(poll, Math.max(0, next - nowMs()));
	};
	timer = setTimeout(poll, delay);
	c.stop = () => clearTimeout(timer);
	return c;
}

async function open(cmd: Extract<Cmd, { cmd: 'open' }>): Promise<void> {
	const t0 = nowMs();
	if (cmd.mode === 'sse') {
		// In batches, so the listen backlog (511) never overflows into SYN retries.
		const batch = cmd.batch ?? 50;
		for (let i = 0; i < cmd.count; i += batch) {
			const n = Math.min(batch, cmd.count - i);
			conns.push(...(await Promise.all(Array.from({ length: n }, () => openSse(cmd.url, cmd.headers)))));
		}
	} else {
		for (let i = 0; i < cmd.count; i++) conns.push(startPoller(cmd.url, cmd.headers, cmd.pollMs, (i * cmd.pollMs) / cmd.count, cmd.after));
	}
	const failed = conns.filter((c) => c.error || (cmd.mode === 'sse' && !c.live));
	send({ ev: 'opened', ms: nowMs() - t0, open: conns.length - failed.length, failed: failed.length, error: failed[0]?.error });
}

async function awaitLast(lastId: number, timeoutMs: number): Promise<void> {
	const until = nowMs() + timeoutMs;
	const has = (c: Conn) => c.ended || (c.ids.length > 0 && c.ids[c.ids.length - 1] >= lastId);
	while (nowMs() < until && !conns.every(has)) await new Promise((r) => setTimeout(r, 5));
	const lastAt = Math.max(0, ...conns.map((c) => c.times[c.times.length - 1] ?? 0));
	send({ ev: 'awaited', complete: conns.every(has), lastAt });
}

/** Per connection: lost / duplicated / out-of-order / unexpected ids against the table, and latencies. */
function report(expected: number[], commitTimes: number[]): void {
	const commitAt = new Map(expected.map((id, i) => [id, commitTimes[i]]));
	const latencies: number[] = [];
	let lost = 0;
	let dup = 0;
	let outOfOrder = 0;
	let unexpected = 0;
	let deliveries = 0;
	let firstAt = Infinity;
	let lastAt = 0;
	for (const c of conns) {
		const seen = new Set<number>();
		let prev = -Infinity;
		c.ids.forEach((id, i) => {
			const at = commitAt.get(id);
			if (at === undefined) return void unexpected++;
			if (seen.has(id)) return void dup++;
			if (id < prev) outOfOrder++;
			prev = id;
			seen.add(id);
			deliveries++;
			const t = c.times[i];
			firstAt = Math.min(firstAt, t);
			lastAt = Math.max(lastAt, t);
			if (!Number.isNaN(at)) latencies.push(Math.round((t - at) * 1000) / 1000);
		});
		lost += expected.length - seen.size;
	}
	const errors = conns.filter((c) => c.error).length;
	const ended = conns.filter((c) => c.ended).length;
	send({ ev: 'report', latencies, lost, dup, outOfOrder, unexpected, deliveries, firstAt, lastAt, errors, ended });
}

process.on('message', (m: Cmd) => {
	switch (m.cmd) {
		case 'open':
			void open(m);
			break;
		case 'await':
			void awaitLast(m.lastId, m.timeoutMs);
			break;
		case 'count':
			send({ ev: 'count', requests });
			break;
		case 'report':
			report(m.expected, m.commitTimes);
			break;
		case 'close':
			stopped = true;
			for (const c of conns) c.stop();
			pollAgent.destroy();
			send({ ev: 'closed' });
			setTimeout(() => process.exit(0), 50);
			break;
	}
});
process.on('disconnect', () => process.exit(0));
send({ ev: 'ready' });
