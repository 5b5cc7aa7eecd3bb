import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The folders of src/lib/server (and the repo-root tasks/) import each other in one direction:
// routes → trpc → domain (agent → executions, questions → conversation → jobs → db). A cycle
// between folders means two modules that cannot be understood, tested or loaded apart.

const ROOT = path.resolve(import.meta.dirname, '../..');
const SERVER = path.join(ROOT, 'src/lib/server');

function files(dir: string, exts = ['.ts', '.js', '.svelte']): string[] {
	return readdirSync(dir).flatMap((name) => {
		const p = path.join(dir, name);
		if (statSync(p).isDirectory()) return files(p, exts);
		return exts.some((e) => name.endsWith(e)) ? [p] : [];
	});
}

/** Every module a file names in an import, export-from or dynamic import, as a path in the repo. */
export function importsOf(file: string, source: string): string[] {
	const specs = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
		(m) => m[1] ?? m[2]
	);
	return specs.flatMap((s) => {
		if (s.startsWith('$lib/')) return [path.join(ROOT, 'src/lib', s.slice(5))];
		if (s.startsWith('.')) return [path.resolve(path.dirname(file), s)];
		return [];
	});
}

/** The node a file belongs to: a folder of src/lib/server, a file at its top, or `tasks`. */
export function nodeOf(p: string): string | null {
	const rel = path.relative(ROOT, p);
	if (rel.startsWith('tasks' + path.sep) || rel === 'tasks') return 'tasks';
	const s = path.relative(SERVER, p);
	if (s.startsWith('..')) return null;
	const [head, ...rest] = s.split(path.sep);
	return rest.length ? head : `${head.replace(/\.(ts|js)$/, '')} (file)`;
}

function folderGraph(): Map<string, Map<string, string>> {
	const graph = new Map<string, Map<string, string>>();
	for (const f of [...files(SERVER), ...files(path.join(ROOT, 'tasks'))]) {
		const from = nodeOf(f)!;
		for (const target of importsOf(f, readFileSync(f, 'utf8'))) {
			const to = nodeOf(target);
			if (!to || to === from) continue;
			const edges = graph.get(from) ?? new Map<string, string>();
			if (!edges.has(to)) edges.set(to, `${path.relative(ROOT, f)} → ${path.relative(ROOT, target)}`);
			graph.set(from, edges);
		}
	}
	return graph;
}

/** Strongly connected components with more than one node (Tarjan). */
export function cycles(graph: Map<string, Map<string, string>>): string[][] {
	let index = 0;
	const idx = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const on = new Set<string>();
	const out: string[][] = [];
	const visit = (v: string) => {
		idx.set(v, index);
		low.set(v, index++);
		stack.push(v);
		on.add(v);
		for (const w of graph.get(v)?.keys() ?? []) {
			if (!idx.has(w)) {
				visit(w);
				low.set(v, Math.min(low.get(v)!, low.get(w)!));
			} else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
		}
		if (low.get(v) === idx.get(v)) {
			const scc: string[] = [];
			let w: string;
			do {
				w = stack.pop()!;
				on.delete(w);
				scc.push(w);
			} while (w !== v);
			if (scc.length > 1) out.push(scc.sort());
		}
	};
	for (const v of graph.keys()) if (!idx.has(v)) visit(v);
	return out;
}

describe('module graph', () => {
	it('finds a cycle when there is one (the check itself works)', () => {
		const g = new Map([
			['a', new Map([['b', '']])],
			['b', new Map([['c', '']])],
			['c', new Map([['a', '']])],
			['d', new Map([['a', '']])]
		]);
		expect(cycles(g)).toEqual([['a', 'b', 'c']]);
		expect(nodeOf(path.join(SERVER, 'executions/runner.ts'))).toBe('executions');
		expect(nodeOf(path.join(SERVER, 'env.ts'))).toBe('env (file)');
		expect(nodeOf(path.join(ROOT, 'tasks/index.ts'))).toBe('tasks');
		expect(importsOf(path.join(SERVER, 'a/b.ts'), "import { x } from '../db/index';\nexport * from './c';\nawait import('$lib/server/env');")).toEqual([
			path.join(SERVER, 'db/index'),
			path.join(SERVER, 'a/c'),
			path.join(SERVER, 'env')
		]);
	});

	it('has no import cycle between the folders of src/lib/server and tasks/', () => {
		const graph = folderGraph();
		const found = cycles(graph).map((scc) =>
			scc.flatMap((from) => [...(graph.get(from) ?? [])].filter(([to]) => scc.includes(to)).map(([to, via]) => `${from} → ${to} (${via})`))
		);
		expect(found).toEqual([]);
	});

	it('keeps db/ at the bottom: queries import only db, env and the shared types', () => {
		const allowed = new Set(['db', 'env (file)']);
		const offenders = files(path.join(SERVER, 'db')).flatMap((f) =>
			importsOf(f, readFileSync(f, 'utf8'))
				.filter((t) => {
					const n = nodeOf(t);
					return n !== null && !allowed.has(n);
				})
				.map((t) => `${path.relative(ROOT, f)} → ${path.relative(ROOT, t)}`)
		);
		expect(offenders).toEqual([]);
	});

	it('keeps client code from naming server modules (only the tRPC router type crosses)', () => {
		const client = [...files(path.join(ROOT, 'src/lib')).filter((f) => !f.startsWith(SERVER)), ...files(path.join(ROOT, 'src/routes'))].filter(
			(f) => !/\+(page|layout)\.server\.ts$|\+server\.ts$/.test(f)
		);
		const offenders = client.flatMap((f) =>
			importsOf(f, readFileSync(f, 'utf8'))
				.filter((t) => t.startsWith(SERVER) && path.relative(SERVER, t) !== path.join('trpc', 'router'))
				.map((t) => `${path.relative(ROOT, f)} → ${path.relative(ROOT, t)}`)
		);
		expect(offenders).toEqual([]);
	});
});
