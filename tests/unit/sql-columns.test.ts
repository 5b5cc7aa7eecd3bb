import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { is } from 'drizzle-orm';
import { getTableColumns } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as schema from '../../src/lib/server/db/schema';

// Every column a raw SQL template names must exist in the drizzle schema (db/schema.ts is the one
// source of a row's shape; the query files are postgres.js templates the compiler cannot read).
// Checked, in each tagged template of src/lib/server and tasks/ (with the templates nested in it):
//   - `alias.column` where the alias (or the table's own name, or `excluded`) is bound to a table
//     of the schema by `from`, `join`, `update`, `insert into … as` or `delete from`;
//   - the column list of `insert into table (…)`;
//   - the assignments of `update table … set col = …`;
//   - a plain select list (`select a, b as "b" from table`) over one table without joins.
// Names of other things (CTEs, subquery aliases, graphile_worker's tables) are not checked.

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Table name → its column names, from the drizzle tables the schema exports. */
export function schemaTables(mod: Record<string, unknown>): Map<string, Set<string>> {
	const out = new Map<string, Set<string>>();
	for (const v of Object.values(mod)) {
		if (!is(v, PgTable)) continue;
		const c = getTableConfig(v);
		out.set(c.name, new Set(c.columns.map((col) => col.name)));
	}
	return out;
}

/** Column name → the keys the schema gives it (`created_at` → createdAt): what a row type calls it. */
export function schemaKeys(mod: Record<string, unknown>): Map<string, Set<string>> {
	const out = new Map<string, Set<string>>();
	for (const v of Object.values(mod)) {
		if (!is(v, PgTable)) continue;
		for (const [key, col] of Object.entries(getTableColumns(v))) out.set(col.name, (out.get(col.name) ?? new Set()).add(key));
	}
	return out;
}

/**
 * `snake_column as "key"` where the key is not what the schema calls that column: the row type
 * (derived from the schema) names the field by its key, so a misspelled or swapped alias would
 * leave the field undefined at run time with the types saying otherwise. `renames` lists the
 * deliberate ones (`col as "key"`).
 */
export function aliasMismatches(rawSql: string, keys: Map<string, Set<string>>, renames: Set<string>): string[] {
	const bad: string[] = [];
	for (const m of rawSql.matchAll(/(?<![\w"$:])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+as\s+"(\w+)"/g)) {
		const [, col, key] = m;
		const known = keys.get(col);
		if (known && !known.has(key) && !renames.has(`${col} as "${key}"`)) bad.push(`${col} as "${key}"`);
	}
	return bad;
}

const KEYWORDS = new Set(
	'where join left right inner outer full cross natural on using order group limit offset for set as returning union having window lateral and or values select from with into default do'.split(
		' '
	)
);

/**
 * The SQL of a template: its literal text, each `${…}` replaced by `$p` — or, when the expression
 * holds tagged templates of its own (`${cond ? sql`and x = ${y}` : sql``}`), by their SQL.
 */
export function templateSql(node: ts.TaggedTemplateExpression): string {
	const t = node.template;
	if (ts.isNoSubstitutionTemplateLiteral(t)) return t.text;
	let s = t.head.text;
	for (const span of t.templateSpans) {
		const nested: string[] = [];
		const walk = (n: ts.Node) => {
			if (ts.isTaggedTemplateExpression(n)) nested.push(templateSql(n));
			else n.forEachChild(walk);
		};
		walk(span.expression);
		s += (nested.length ? ` ${nested.join(' ')} ` : ' $p ') + span.literal.text;
	}
	return s;
}

/** The outermost tagged templates of a source file, with their line numbers. */
export function templatesOf(file: string, source: string): { line: number; sql: string }[] {
	const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
	const out: { line: number; sql: string }[] = [];
	const walk = (n: ts.Node) => {
		if (ts.isTaggedTemplateExpression(n)) {
			out.push({ line: sf.getLineAndCharacterOfPosition(n.getStart()).line + 1, sql: templateSql(n) });
			return;
		}
		n.forEachChild(walk);
	};
	walk(sf);
	return out;
}

/** Splits on commas outside parentheses. */
function topLevel(list: string): string[] {
	const parts: string[] = [];
	let depth = 0;
	let cur = '';
	for (const ch of list) {
		if (ch === '(') depth++;
		if (ch === ')') depth--;
		if (ch === ',' && depth === 0) {
			parts.push(cur);
			cur = '';
		} else cur += ch;
	}
	parts.push(cur);
	return parts.map((p) => p.trim()).filter(Boolean);
}

/** The text up to the first of `stops` outside parentheses (or to the end). */
function untilTopLevel(text: string, stops: RegExp): string {
	let depth = 0;
	for (let i = 0; i < text.length; i++) {
		if (text[i] === '(') depth++;
		else if (text[i] === ')') {
			if (depth === 0) return text.slice(0, i);
			depth--;
		} else if (depth === 0 && stops.test(text.slice(i)) && /\W/.test(text[i - 1] ?? ' ')) return text.slice(0, i);
	}
	return text;
}

/** The columns a piece of SQL names that its tables do not have, each as `table.column` or `alias.column`. */
export function unknownColumns(rawSql: string, tables: Map<string, Set<string>>, checked: string[] = []): string[] {
	const sql = rawSql
		.replace(/--[^\n]*/g, ' ')
		.replace(/'(?:[^']|'')*'/g, "''")
		.toLowerCase();
	const bad = new Set<string>();
	const check = (table: string, col: string, shown: string) => {
		checked.push(shown);
		if (!tables.get(table)?.has(col)) bad.add(shown);
	};

	// Aliases: every table is its own alias; `from|join|update|delete from|insert into <table> [as] <alias>`.
	const aliases = new Map<string, Set<string>>();
	const bind = (alias: string, table: string) => aliases.set(alias, (aliases.get(alias) ?? new Set()).add(table));
	for (const t of tables.keys()) bind(t, t);
	for (const m of sql.matchAll(/\b(?:from|join|update|into)\s+([a-z_][a-z0-9_]*)\b(?!\s*\()(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?/g)) {
		const [, table, alias] = m;
		if (!tables.has(table)) continue;
		if (alias && !KEYWORDS.has(alias)) bind(alias, table);
	}
	for (const m of sql.matchAll(/\binsert\s+into\s+([a-z_][a-z0-9_]*)/g)) if (tables.has(m[1])) bind('excluded', m[1]);
	// An alias also given to a CTE or a subquery in the same SQL names columns that cannot be told apart.
	const opaque = new Set<string>();
	for (const m of sql.matchAll(/\b(?:from|join)\s+([a-z_][a-z0-9_]*)\s+(?:as\s+)?([a-z_][a-z0-9_]*)/g))
		if (!tables.has(m[1]) && !KEYWORDS.has(m[2])) opaque.add(m[2]);
	for (const m of sql.matchAll(/\)\s+(?:as\s+)?([a-z_][a-z0-9_]*)/g)) if (!KEYWORDS.has(m[1])) opaque.add(m[1]);

	// alias.column (not a function call such as pg_catalog.f(…), not alias.*).
	for (const m of sql.matchAll(/(?<![\w.$"])([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b(?!\s*\()/g)) {
		const [, alias, col] = m;
		const bound = aliases.get(alias);
		if (!bound || opaque.has(alias)) continue;
		checked.push(`${alias}.${col}`);
		if (![...bound].some((t) => tables.get(t)!.has(col))) bad.add(`${alias}.${col}`);
	}

	// insert into table [as alias] (a, b, …)
	for (const m of sql.matchAll(/\binsert\s+into\s+([a-z_][a-z0-9_]*)(?:\s+as\s+[a-z_][a-z0-9_]*)?\s*\(([^)]*)\)/g)) {
		if (!tables.has(m[1])) continue;
		for (const col of m[2].split(',').map((c) => c.trim().replace(/"/g, ''))) if (/^[a-z_][a-z0-9_]*$/.test(col)) check(m[1], col, `${m[1]}.${col}`);
	}

	// update table [alias] set a = …, b = …
	for (const m of sql.matchAll(/\bupdate\s+([a-z_][a-z0-9_]*)(?:\s+(?:as\s+)?[a-z_][a-z0-9_]*)?\s+set\s+/g)) {
		if (!tables.has(m[1])) continue;
		const list = untilTopLevel(sql.slice(m.index + m[0].length), /^(where|returning|from)\b/);
		for (const part of topLevel(list)) {
			const a = /^"?([a-z_][a-z0-9_]*)"?\s*=/.exec(part);
			if (a) check(m[1], a[1], `${m[1]}.${a[1]}`);
		}
	}

	// select a, b as "b" from table [alias] [where …] — one table, no join: plain names are its columns.
	for (const m of sql.matchAll(/\bselect\s+(?!distinct\b)/g)) {
		const rest = sql.slice(m.index + m[0].length);
		const list = untilTopLevel(rest, /^from\b/);
		const after = rest.slice(list.length);
		const from = /^from\s+([a-z_][a-z0-9_]*)\b(?!\s*\()(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?/.exec(after);
		if (!from || !tables.has(from[1])) continue;
		const tail = untilTopLevel(after.slice(from[0].length), /^(select|union|returning)\b/);
		if (/\b(join|from)\b|,/.test(untilTopLevel(tail, /^(where|order|group|limit|for|having)\b/))) continue;
		if (from[2] && !KEYWORDS.has(from[2]) && from[2] !== from[1]) bind(from[2], from[1]);
		for (const item of topLevel(list)) {
			const plain = /^([a-z_][a-z0-9_]*)(?:\s+as\s+"?[a-z_][a-z0-9_]*"?)?$/i.exec(item);
			if (plain && !['true', 'false', 'null'].includes(plain[1])) check(from[1], plain[1], `${from[1]}.${plain[1]}`);
		}
	}
	return [...bad].sort();
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const p = path.join(dir, name);
		if (statSync(p).isDirectory()) return sourceFiles(p);
		return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : [];
	});
}

const TABLES = schemaTables(schema);
const KEYS = schemaKeys(schema);
/** Columns a query deliberately returns under another field's name. */
const RENAMES = new Set(['operator_id as "ownerId"', 'requested_by_session as "sessionId"', 'session_id as "lastSessionId"', 'max_attempts as "gaveUp"']);

describe('the checker', () => {
	it('knows the tables', () => {
		expect(TABLES.get('hosts')?.has('key_path')).toBe(true);
		expect(TABLES.size).toBeGreaterThan(30);
	});

	it('finds a misspelled column in each form it reads', () => {
		expect(unknownColumns(`select h.id, h.keypath from hosts h where h.id = $1`, TABLES)).toEqual(['h.keypath']);
		expect(unknownColumns(`select s.id from chat_sessions s join messages m on m.session = s.id`, TABLES)).toEqual(['m.session']);
		expect(unknownColumns(`insert into hosts (name, adress) values ($1, $2)`, TABLES)).toEqual(['hosts.adress']);
		expect(unknownColumns(`insert into hosts (name) values ($1) on conflict (name) do update set port = excluded.prot`, TABLES)).toEqual(['excluded.prot']);
		expect(unknownColumns(`update schedules s set enabled = $1, nxt_at = null where s.id = $2`, TABLES)).toEqual(['schedules.nxt_at']);
		expect(unknownColumns(`select id, nam as "name" from hosts where id = $1`, TABLES)).toEqual(['hosts.nam']);
	});

	it("finds an alias that is not the column's key", () => {
		expect(aliasMismatches(`select key_path as "keyPth", created_at as "createdAt", x.last_error as "lastError"`, KEYS, RENAMES)).toEqual([
			'key_path as "keyPth"'
		]);
		expect(aliasMismatches(`select created_at as "updatedAt", count(*)::int as "runs", e.steps->>'some_thing' as "other"`, KEYS, RENAMES)).toEqual([
			'created_at as "updatedAt"'
		]);
	});

	it('leaves what it cannot bind alone', () => {
		expect(unknownColumns(`with x as (select 1 as y) select x.y, l.slot from x left join lateral (select 1) l on true`, TABLES)).toEqual([]);
		expect(unknownColumns(`select j.id from graphile_worker.jobs j where j.task_identifier = 'x.y'`, TABLES)).toEqual([]);
		expect(unknownColumns(`select count(*)::int as n, max(at) from audit_log`, TABLES)).toEqual([]);
	});

	it('reads nested templates and skips interpolated values', () => {
		const src = 'const q = sql`select h.id from hosts h where ${cond ? sql`h.nme = ${x}` : sql``} and ${h.whatever}`;';
		const [t] = templatesOf('x.ts', src);
		expect(unknownColumns(t.sql, TABLES)).toEqual(['h.nme']);
	});
});

describe('every column a query names exists in the schema', () => {
	const files = [...sourceFiles(path.join(ROOT, 'src/lib/server')), ...sourceFiles(path.join(ROOT, 'tasks'))];
	const found: string[] = [];
	const checked: string[] = [];
	const aliases: string[] = [];
	/** Column names checked per file. */
	const perFile = new Map<string, number>();
	let templates = 0;
	for (const f of files) {
		const rel = path.relative(ROOT, f);
		for (const t of templatesOf(rel, readFileSync(f, 'utf8'))) {
			templates++;
			const before = checked.length;
			for (const c of unknownColumns(t.sql, TABLES, checked)) found.push(`${rel}:${t.line} ${c}`);
			perFile.set(rel, (perFile.get(rel) ?? 0) + checked.length - before);
			for (const a of aliasMismatches(t.sql, KEYS, RENAMES)) aliases.push(`${rel}:${t.line} ${a}`);
		}
	}

	it('reads the query files', () => {
		expect(templates).toBeGreaterThan(300);
		expect(checked.length).toBeGreaterThan(900);
	});

	it('reads the columns of the sessions, messages, review facts and login throttle queries', () => {
		// their row types come from the schema too: a column their SQL names that the parser could not
		// read (a new helper around the templates) would leave those types unchecked
		const counts = ['sessions', 'messages', 'review-facts', 'login-throttle'].map((f) => [f, perFile.get(`src/lib/server/db/queries/${f}.ts`) ?? 0]);
		expect(counts.filter(([, n]) => (n as number) < 5)).toEqual([]);
	});

	it('finds no unknown column', () => {
		expect(found).toEqual([]);
	});

	it('returns each column under its key in the schema', () => {
		expect(aliases).toEqual([]);
	});
});
