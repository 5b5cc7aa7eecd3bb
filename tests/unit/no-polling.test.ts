import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** Client code: components, state, pages. Server code (src/lib/server, +server.ts, *.server.ts) is excluded. */
function clientFiles(dir: string): string[] {
	const out: string[] = [];
	for (const name of readdirSync(dir)) {
		const p = path.join(dir, name);
		if (statSync(p).isDirectory()) {
			if (p.includes(path.join('lib', 'server'))) continue;
			out.push(...clientFiles(p));
		} else if (/\.(svelte|ts)$/.test(name) && !/\.server\.ts$|\+server\.ts$/.test(name)) out.push(p);
	}
	return out;
}

describe('no polling in the browser', () => {
	const files = clientFiles('src');
	it('finds the client files', () => {
		expect(files.some((f) => f.endsWith('live-events.svelte.ts'))).toBe(true);
		expect(files.length).toBeGreaterThan(10);
	});
	it('has no setInterval, refetchInterval or timed fetch in client code (the countdown clock excepted)', () => {
		const offenders: string[] = [];
		for (const f of files) {
			const src = readFileSync(f, 'utf8');
			const isClock = f.endsWith(path.join('state', 'clock.svelte.ts'));
			if (/setInterval\s*\(/.test(src) && !isClock) offenders.push(`${f}: setInterval`);
			if (/refetchInterval|pollInterval/.test(src)) offenders.push(`${f}: refetch/poll interval`);
			if (/setTimeout\([^)]*(fetch|trpc|invalidate)/s.test(src)) offenders.push(`${f}: timed fetch`);
			if (isClock && /\bfetch\(|trpc\(|invalidate(All)?\(/.test(src)) offenders.push(`${f}: the clock must not fetch`);
		}
		expect(offenders).toEqual([]);
	});
});
