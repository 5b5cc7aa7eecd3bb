// Where the CPU went during a bench window, per process group, from /proc (Linux only; elsewhere
// the table is left out). The benches run every part on one machine — the app, Postgres and the
// doubles standing in for the Proxmox host and the model server — so a latency figure under load
// is only readable beside who used the cores.
import fs from 'node:fs';
import os from 'node:os';

const TICK = 100; // USER_HZ on Linux
/** Named processes: `tree` adds their descendants (Postgres backends), else the process alone. */
export type CpuGroups = Record<string, { pid: number; tree: boolean }>;
type Reading = { at: number; total: number; groups: Record<string, number> };

function statOf(pid: number): number[] | null {
	try {
		const raw = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
		// The command name may hold spaces: fields start after its closing parenthesis.
		return raw
			.slice(raw.lastIndexOf(')') + 2)
			.split(' ')
			.map(Number);
	} catch {
		return null;
	}
}

/** CPU seconds of `pid` and of its descendants (live ones read directly, reaped ones through cutime/cstime). */
function cpuSeconds(pid: number, tree: boolean, parents: Map<number, number[]>): number {
	const f = statOf(pid);
	if (!f) return 0;
	// After ')': state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14)
	if (!tree) return (f[11] + f[12]) / TICK;
	let ticks = f[11] + f[12] + f[13] + f[14];
	const stack = [...(parents.get(pid) ?? [])];
	while (stack.length) {
		const c = stack.pop()!;
		const cf = statOf(c);
		if (cf) ticks += cf[11] + cf[12] + cf[13] + cf[14];
		stack.push(...(parents.get(c) ?? []));
	}
	return ticks / TICK;
}

function parentsMap(): Map<number, number[]> {
	const m = new Map<number, number[]>();
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) continue;
		const f = statOf(Number(d));
		if (!f) continue;
		const list = m.get(f[1]) ?? [];
		list.push(Number(d));
		m.set(f[1], list);
	}
	return m;
}

/** Busy CPU seconds of the whole machine (all cores) from /proc/stat. */
function machineBusy(): number {
	const [, ...v] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
	const n = v.map(Number);
	const idle = n[3] + (n[4] ?? 0);
	return (n.reduce((a, b) => a + b, 0) - idle) / TICK;
}

export function readCpu(groups: CpuGroups): Reading | null {
	if (process.platform !== 'linux') return null;
	const parents = parentsMap();
	const out: Record<string, number> = {};
	for (const [name, g] of Object.entries(groups)) out[name] = cpuSeconds(g.pid, g.tree, parents);
	return { at: Date.now(), total: machineBusy(), groups: out };
}

/** A Markdown table: CPU seconds and share of the machine's capacity over the window, per group and the rest. */
export function cpuTable(a: Reading | null, b: Reading | null): string[] {
	if (!a || !b) return [];
	const wall = (b.at - a.at) / 1000;
	const capacity = wall * os.cpus().length;
	const rows: Array<[string, number]> = Object.keys(a.groups).map((k) => [k, b.groups[k] - a.groups[k]]);
	const ours = rows.reduce((s, [, x]) => s + x, 0);
	rows.push(['everything else on the machine', Math.max(0, b.total - a.total - ours)]);
	rows.push(['idle', Math.max(0, capacity - (b.total - a.total))]);
	const w = Math.max(...rows.map(([k]) => k.length), 20);
	return [
		`CPU over ${wall.toFixed(1)} s × ${os.cpus().length} cores = ${capacity.toFixed(1)} CPU-s:`,
		'',
		`| ${'process'.padEnd(w)} |  CPU-s | share |`,
		`|:${'-'.repeat(w + 1)}|-------:|------:|`,
		...rows.map(([k, s]) => `| ${k.padEnd(w)} | ${s.toFixed(1).padStart(6)} | ${((100 * s) / capacity).toFixed(0).padStart(4)}% |`)
	];
}
