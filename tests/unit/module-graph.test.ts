import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Every file of src/ (and the repo-root tasks/) belongs to one layer, and a layer imports only the
// layers listed for it below. Read bottom-up:
//
//   model   src/lib/types, src/lib/schemas      types and zod schemas: the words both sides share
//   shared  src/lib/*.ts, messages/, review/    pure helpers the browser and the server both run
//   env     src/lib/server/env.ts, log.js       the zod-parsed process.env and the logger
//   db      src/lib/server/db                   one client, the schema, verb-named queries
//   server  src/lib/server/**, tasks/           the domain: agent, executions, review, ssh, trpc, …
//   edge    hooks.server.ts, +*.server.ts,      where a request enters the server
//           +server.ts, app.d.ts
//   client  components/, state/, lib/trpc.ts,   what the browser runs
//           routes' .svelte and +page.ts
//
// So server code never imports components, db/ never imports the domain above it, and client code
// names a server module only as `import type` of the tRPC router (the one type that crosses). On top
// of the layers, no file imports itself back through any chain of imports: a file cycle is two
// modules that cannot be understood, tested or loaded apart.

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');

export type Layer = 'model' | 'shared' | 'env' | 'db' | 'server' | 'edge' | 'client';

export const ALLOWED: Record<Layer, readonly Layer[]> = {
	model: ['model'],
	shared: ['model', 'shared'],
	env: ['env', 'model'],
	db: ['db', 'env', 'model'],
	server: ['server', 'db', 'env', 'model', 'shared'],
	edge: ['edge', 'server', 'db', 'env', 'model', 'shared'],
	client: ['client', 'shared', 'model']
};

/** The one server module client code may name, and only with `import type`. */
export const ROUTER_TYPE = 'src/lib/server/trpc/router.ts';

/** The layer of a file, from its path relative to the repo root (always with `/`). */
export function layerOf(rel: string): Layer | null {
	if (rel.startsWith('tasks/')) return 'server';
	if (!rel.startsWith('src/')) return null;
	if (rel.startsWith('src/lib/types/') || rel.startsWith('src/lib/schemas/')) return 'model';
	if (rel === 'src/lib/server/env.ts' || rel === 'src/lib/server/log.js') return 'env';
	if (rel.startsWith('src/lib/server/db/')) return 'db';
	if (rel.startsWith('src/lib/server/')) return 'server';
	if (rel.startsWith('src/lib/messages/') || rel.startsWith('src/lib/review/')) return 'shared';
	if (rel.startsWith('src/lib/components/') || rel.startsWith('src/lib/state/') || rel === 'src/lib/trpc.ts') return 'client';
	if (/^src\/lib\/[^/]+\.(ts|js)$/.test(rel)) return 'shared';
	if (rel === 'src/hooks.server.ts' || rel === 'src/app.d.ts') return 'edge';
	if (rel.startsWith('src/routes/')) return /\/\+(page|layout)\.server\.ts$|\/\+server\.ts$/.test(rel) ? 'edge' : 'client';
	return null;
}

export interface Edge {
	from: string;
	to: string;
	typeOnly: boolean;
}

function files(dir: string, exts = ['.ts', '.js', '.svelte']): string[] {
	return readdirSync(dir).flatMap((name) => {
		const p = path.join(dir, name);
		if (statSync(p).isDirectory()) return files(p, exts);
		return exts.some((e) => name.endsWith(e)) ? [p] : [];
	});
}

/**
 * Every module a file names in an import, export-from or dynamic import: the specifier and whether
 * the whole statement is `import type` / `export type` (erased before it runs).
 */
export function importsOf(source: string): { spec: string; typeOnly: boolean }[] {
	const re = /(?:^|\n)\s*(import|export)\s+(type\s)?[^'";]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
	return [...source.matchAll(re)].map((m) => ({ spec: m[3] ?? m[4] ?? m[5], typeOnly: !!m[2] }));
}

/** A specifier as a file of the repo (relative, with `/`), or null for packages and `$app`/`$env`. */
export function resolve(fromRel: string, spec: string, exists: (rel: string) => boolean): string | null {
	let base: string;
	if (spec.startsWith('$lib/')) base = path.posix.join('src/lib', spec.slice(5));
	else if (spec === '$lib') base = 'src/lib';
	else if (spec.startsWith('.')) base = path.posix.join(path.posix.dirname(fromRel), spec);
	else return null;
	if (base.endsWith('/$types')) return null; // SvelteKit's generated route types
	for (const c of [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`, `${base}/index.js`]) if (exists(c)) return c;
	return base;
}

/** The file graph of src/ and tasks/, read from disk. */
export function repoGraph(): Edge[] {
	const all = [...files(SRC), ...files(path.join(ROOT, 'tasks'))].map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
	const known = new Set(all);
	const exists = (rel: string) => known.has(rel) || (existsSync(path.join(ROOT, rel)) && statSync(path.join(ROOT, rel)).isFile());
	return all.flatMap((from) =>
		importsOf(readFileSync(path.join(ROOT, from), 'utf8')).flatMap(({ spec, typeOnly }) => {
			const to = resolve(from, spec, exists);
			return to ? [{ from, to, typeOnly }] : [];
		})
	);
}

/** The edges that break the layering, each as `from → to (layer → layer)`. */
export function layerViolations(edges: Edge[]): string[] {
	return edges.flatMap(({ from, to, typeOnly }) => {
		const a = layerOf(from);
		const b = layerOf(to);
		if (!a || !b || ALLOWED[a].includes(b)) return [];
		if (a === 'client' && to === ROUTER_TYPE && typeOnly) return [];
		return [`${from} → ${to} (${a} → ${b}${typeOnly ? ', type' : ''})`];
	});
}

/** Strongly connected components with more than one node, or a node importing itself (Tarjan). */
export function cycles(graph: Map<string, Set<string>>): string[][] {
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
		for (const w of graph.get(v) ?? []) {
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
			if (scc.length > 1 || graph.get(v)?.has(v)) out.push(scc.sort());
		}
	};
	for (const v of graph.keys()) if (!idx.has(v)) visit(v);
	return out;
}

/** The file cycles of a graph, each written as its files and the imports that close it. */
export function fileCycles(edges: Edge[]): string[] {
	const graph = new Map<string, Set<string>>();
	for (const { from, to } of edges) graph.set(from, (graph.get(from) ?? new Set()).add(to));
	return cycles(graph).map((scc) =>
		edges
			.filter((e) => scc.includes(e.from) && scc.includes(e.to))
			.map((e) => `${e.from} → ${e.to}`)
			.join('; ')
	);
}

/** The folder of src/lib/server a file sits in (or `tasks`), for the coarser folder-cycle rule. */
export function folderOf(rel: string): string | null {
	if (rel.startsWith('tasks/')) return 'tasks';
	const m = /^src\/lib\/server\/([^/]+)(\/)?/.exec(rel);
	if (!m) return null;
	return m[2] ? m[1] : `${m[1].replace(/\.(ts|js)$/, '')} (file)`;
}

/** An import of a file, with its specifier and the repo file it names (null for a package). */
export interface Named {
	from: string;
	spec: string;
	to: string | null;
}

export const SCHEMA_DIR = 'src/lib/server/db/schema/';
export const ACTION_FAMILIES_DIR = 'src/lib/server/proxmox/actions/';
/** What every action family may import from its own folder: the definition's types and the read-backs. */
export const ACTION_SHARED = ['src/lib/server/proxmox/actions/def.ts', 'src/lib/server/proxmox/actions/read-backs.ts'];

/**
 * The tables' files (db/schema/*.ts, re-exported by db/schema.ts) import drizzle, each other and
 * the model layer (the enums and jsonb types they share with the browser), nothing else; the
 * barrel db/schema.ts only re-exports them. The action families (proxmox/actions/*.ts, put in
 * order by proxmox/actions.ts) never import one another: only the shared definition and read-backs.
 */
export function splitViolations(imports: Named[]): string[] {
	return imports.flatMap(({ from, spec, to }) => {
		const bad = `${from} → ${to ?? spec}`;
		if (from === 'src/lib/server/db/schema.ts') return to?.startsWith(SCHEMA_DIR) ? [] : [bad];
		if (from.startsWith(SCHEMA_DIR)) {
			if (to === null) return spec === 'drizzle-orm' || spec.startsWith('drizzle-orm/') ? [] : [bad];
			return to.startsWith(SCHEMA_DIR) || layerOf(to) === 'model' ? [] : [bad];
		}
		if (from.startsWith(ACTION_FAMILIES_DIR) && to?.startsWith(ACTION_FAMILIES_DIR) && !ACTION_SHARED.includes(to)) return [bad];
		if (from.startsWith(ACTION_FAMILIES_DIR) && to === 'src/lib/server/proxmox/actions.ts') return [bad];
		return [];
	});
}

/** Where SQL is written: the db layer (its verb-named queries, the client, the schema). */
export const SQL_HOME = 'src/lib/server/db/';

/**
 * Files outside db/ that still write SQL, each with why; the list only shrinks (a file here that no
 * longer holds SQL fails the test too). A new file with SQL outside db/ fails: give it a query.
 */
export const SQL_ELSEWHERE: Record<string, string> = {
	'src/lib/server/jobs/enqueue.ts': "graphile-worker's add_job: the queue's own API, one call",
	'src/lib/server/review/rebuild.ts': 'an advisory lock held on one reserved connection across transactions'
};

/**
 * The SQL templates of a source file, as `file:line`: every tagged template (postgres.js's `sql`,
 * `tx`, `sql()`, a reserved connection …) except String.raw, the one other tag the code uses.
 */
export function sqlTemplates(rel: string, source: string): string[] {
	const sf = ts.createSourceFile(rel, source, ts.ScriptTarget.Latest, true);
	const out: string[] = [];
	const walk = (n: ts.Node) => {
		if (ts.isTaggedTemplateExpression(n) && n.tag.getText(sf) !== 'String.raw') {
			out.push(`${rel}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`);
			return;
		}
		n.forEachChild(walk);
	};
	walk(sf);
	return out;
}

describe('module graph', () => {
	it('the rules catch a leak in a synthetic graph (the checks themselves can fail)', () => {
		const e = (from: string, to: string, typeOnly = false): Edge => ({ from, to, typeOnly });
		const clean = [
			e('src/lib/server/review/facts.ts', 'src/lib/server/db/queries/review-facts.ts'),
			e('src/lib/server/db/queries/review-facts.ts', 'src/lib/server/db/index.ts'),
			e('src/lib/server/db/index.ts', 'src/lib/server/env.ts'),
			e('src/lib/server/db/queries/messages.ts', 'src/lib/types/messages.ts', true),
			e('src/lib/components/review/chart.svelte', 'src/lib/review/labels.ts'),
			e('src/lib/trpc.ts', ROUTER_TYPE, true),
			e('src/routes/(app)/+page.server.ts', 'src/lib/server/db/index.ts'),
			e('tasks/index.ts', 'src/lib/server/review/facts.ts')
		];
		expect(layerViolations(clean)).toEqual([]);
		expect(fileCycles(clean)).toEqual([]);

		expect(layerViolations([e('src/lib/server/review/markdown.ts', 'src/lib/components/review/labels.ts')])).toEqual([
			'src/lib/server/review/markdown.ts → src/lib/components/review/labels.ts (server → client)'
		]);
		expect(layerViolations([e('src/lib/server/db/queries/messages.ts', 'src/lib/messages/fold.ts')])).toEqual([
			'src/lib/server/db/queries/messages.ts → src/lib/messages/fold.ts (db → shared)'
		]);
		expect(layerViolations([e('src/lib/server/db/queries/x.ts', 'src/lib/server/review/facts.ts', true)])).toHaveLength(1);
		expect(layerViolations([e('src/lib/trpc.ts', ROUTER_TYPE)])).toHaveLength(1);
		expect(layerViolations([e('src/routes/(app)/+page.svelte', 'src/lib/server/db/index.ts', true)])).toHaveLength(1);
		expect(layerViolations([e('src/lib/messages/fold.ts', 'src/lib/state/chat.svelte.ts')])).toHaveLength(1);
		expect(layerViolations([e('src/lib/types/messages.ts', 'src/lib/messages/parts.ts')])).toHaveLength(1);

		expect(
			fileCycles([
				...clean,
				e('src/lib/server/ssh/client.ts', 'src/lib/server/ssh/pool.ts'),
				e('src/lib/server/ssh/pool.ts', 'src/lib/server/ssh/client.ts', true)
			])
		).toEqual(['src/lib/server/ssh/client.ts → src/lib/server/ssh/pool.ts; src/lib/server/ssh/pool.ts → src/lib/server/ssh/client.ts']);
		expect(cycles(new Map([['a', new Set(['a'])]]))).toEqual([['a']]);
	});

	it('the split rules catch a stray import in a synthetic graph (schema files: drizzle and each other; families: shared helpers only)', () => {
		const n = (from: string, spec: string, to: string | null = null): Named => ({ from, spec, to });
		const clean = [
			n('src/lib/server/db/schema.ts', './schema/knowledge', 'src/lib/server/db/schema/knowledge.ts'),
			n('src/lib/server/db/schema/knowledge.ts', 'drizzle-orm/pg-core'),
			n('src/lib/server/db/schema/knowledge.ts', './columns', 'src/lib/server/db/schema/columns.ts'),
			n('src/lib/server/db/schema/review.ts', '../../../types/messages', 'src/lib/types/messages.ts'),
			n('src/lib/server/proxmox/actions/files.ts', './def', 'src/lib/server/proxmox/actions/def.ts'),
			n('src/lib/server/proxmox/actions/files.ts', '../guest-agent', 'src/lib/server/proxmox/guest-agent.ts'),
			n('src/lib/server/proxmox/actions.ts', './actions/files', 'src/lib/server/proxmox/actions/files.ts')
		];
		expect(splitViolations(clean)).toEqual([]);
		expect(splitViolations([n('src/lib/server/db/schema/knowledge.ts', 'zod')])).toEqual(['src/lib/server/db/schema/knowledge.ts → zod']);
		expect(splitViolations([n('src/lib/server/db/schema/hosts-inventory.ts', '../env', 'src/lib/server/env.ts')])).toHaveLength(1);
		expect(splitViolations([n('src/lib/server/db/schema/review.ts', '../queries/review', 'src/lib/server/db/queries/review.ts')])).toHaveLength(1);
		expect(splitViolations([n('src/lib/server/db/schema.ts', './index', 'src/lib/server/db/index.ts')])).toHaveLength(1);
		expect(splitViolations([n('src/lib/server/proxmox/actions/files.ts', './reads', 'src/lib/server/proxmox/actions/reads.ts')])).toEqual([
			'src/lib/server/proxmox/actions/files.ts → src/lib/server/proxmox/actions/reads.ts'
		]);
		expect(splitViolations([n('src/lib/server/proxmox/actions/files.ts', '../actions', 'src/lib/server/proxmox/actions.ts')])).toHaveLength(1);
	});

	it('reads imports and resolves them to files the way the bundler does', () => {
		const src = [
			"import { x } from '../db/index';",
			"import type { T } from '$lib/types/messages';",
			"export * from './c';",
			"export type { U } from './u';",
			"import './side-effect';",
			"const m = await import('$lib/server/env');",
			"import { z } from 'zod';"
		].join('\n');
		expect(importsOf(src)).toEqual([
			{ spec: '../db/index', typeOnly: false },
			{ spec: '$lib/types/messages', typeOnly: true },
			{ spec: './c', typeOnly: false },
			{ spec: './u', typeOnly: true },
			{ spec: './side-effect', typeOnly: false },
			{ spec: '$lib/server/env', typeOnly: false },
			{ spec: 'zod', typeOnly: false }
		]);
		const have = new Set(['src/lib/server/db/index.ts', 'src/lib/state/chat.svelte.ts', 'src/lib/components/ui/index.ts']);
		const exists = (r: string) => have.has(r);
		expect(resolve('src/lib/server/a/b.ts', '../db', exists)).toBe('src/lib/server/db/index.ts');
		expect(resolve('src/routes/+page.svelte', '$lib/state/chat.svelte', exists)).toBe('src/lib/state/chat.svelte.ts');
		expect(resolve('src/routes/+page.svelte', '$lib/components/ui', exists)).toBe('src/lib/components/ui/index.ts');
		expect(resolve('src/routes/+page.svelte', '$app/state', exists)).toBeNull();
		expect(layerOf('src/lib/server/env.ts')).toBe('env');
		expect(layerOf('src/routes/(app)/chat/[sessionId]/chat-session.svelte')).toBe('client');
		expect(layerOf('src/routes/api/events/+server.ts')).toBe('edge');
		expect(layerOf('src/lib/markdown.ts')).toBe('shared');
		expect(folderOf('src/lib/server/executions/runner.ts')).toBe('executions');
		expect(folderOf('src/lib/server/env.ts')).toBe('env (file)');
	});

	const edges = repoGraph();

	it('gives every file of src/ a layer, and resolves every relative or $lib import to a file', () => {
		const all = new Set(edges.map((e) => e.from));
		expect([...all].filter((f) => !layerOf(f) && !f.endsWith('.html') && !f.endsWith('.css'))).toEqual([]);
		const files = new Set([...files_(SRC), ...files_(path.join(ROOT, 'tasks'))]);
		expect(edges.filter((e) => !files.has(e.to) && !/\.(css|md|json|txt|sql)$/.test(e.to)).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
	});

	it('keeps every import inside the layering (server ↛ components, db ↛ above it, client ↛ server)', () => {
		expect(layerViolations(edges)).toEqual([]);
	});

	it('has no file-level import cycle anywhere in src/ and tasks/', () => {
		expect(fileCycles(edges)).toEqual([]);
	});

	it('keeps the schema files to drizzle, each other and the model, and the action families apart', () => {
		const all = new Set(files_(SRC));
		const exists = (rel: string) => all.has(rel);
		const split = [...all].filter((f) => f === 'src/lib/server/db/schema.ts' || f.startsWith(SCHEMA_DIR) || f.startsWith(ACTION_FAMILIES_DIR));
		// the folders exist and hold the split: an empty list would pass anything
		expect(split.filter((f) => f.startsWith(SCHEMA_DIR)).length).toBeGreaterThan(5);
		expect(split.filter((f) => f.startsWith(ACTION_FAMILIES_DIR)).length).toBeGreaterThan(5);
		const named = split.flatMap((from) =>
			importsOf(readFileSync(path.join(ROOT, from), 'utf8')).map(({ spec }) => ({ from, spec, to: resolve(from, spec, exists) }))
		);
		expect(splitViolations(named)).toEqual([]);
	});

	it('keeps SQL in db/: a tagged template elsewhere in src/ or tasks/ fails, but for the listed files', () => {
		expect(sqlTemplates('x.ts', 'const r = await tx<{ id: string }[]>`select id from hosts`; const s = String.raw`a\\b`;')).toEqual(['x.ts:1']);
		expect(sqlTemplates('x.ts', 'const [p] = await sql()<Row[]>`select 1`;\nawait lock`select pg_advisory_unlock(1)`;')).toEqual(['x.ts:1', 'x.ts:2']);
		const all = [...files_(SRC), ...files_(path.join(ROOT, 'tasks'))].filter((f) => /\.(ts|js)$/.test(f) && !f.startsWith(SQL_HOME));
		const found = all.flatMap((f) => sqlTemplates(f, readFileSync(path.join(ROOT, f), 'utf8')));
		const files = new Set(found.map((at) => at.replace(/:\d+$/, '')));
		expect(found.filter((at) => !(at.replace(/:\d+$/, '') in SQL_ELSEWHERE))).toEqual([]);
		// moved into db/queries: the list shrinks with them
		expect(Object.keys(SQL_ELSEWHERE).filter((f) => !files.has(f))).toEqual([]);
	});

	it('leaves transactions to the domain: no tRPC router opens one (routers validate, check authority, call one domain function)', () => {
		const dir = path.join(SRC, 'lib/server/trpc/routers');
		const opened = readdirSync(dir).filter((f) => /\.begin\(/.test(readFileSync(path.join(dir, f), 'utf8')));
		expect(opened).toEqual([]);
	});

	it('has no import cycle between the folders of src/lib/server and tasks/', () => {
		const graph = new Map<string, Set<string>>();
		const via = new Map<string, string>();
		for (const { from, to } of edges) {
			const a = folderOf(from);
			const b = folderOf(to);
			if (!a || !b || a === b) continue;
			graph.set(a, (graph.get(a) ?? new Set()).add(b));
			if (!via.has(`${a} ${b}`)) via.set(`${a} ${b}`, `${from} → ${to}`);
		}
		const found = cycles(graph).map((scc) =>
			scc.flatMap((a) => [...(graph.get(a) ?? [])].filter((b) => scc.includes(b)).map((b) => `${a} → ${b} (${via.get(`${a} ${b}`)})`))
		);
		expect(found).toEqual([]);
	});
});

function files_(dir: string): string[] {
	return files(dir, ['.ts', '.js', '.svelte', '.md', '.json', '.css', '.txt', '.sql']).map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
}
