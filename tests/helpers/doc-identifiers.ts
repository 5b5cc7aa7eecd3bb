import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// What the docs name in backticks must be in the code: a function, type, column or tool name
// (camelCase, PascalCase, snake_case), an environment variable (NOMOS_*), or a file or folder
// (`executions/runner.ts`, `db/queries/`). Shell commands, SQL, URLs, flags and placeholders
// (anything with a space, `<`, `*`, `=` …) are not identifiers and are left alone.

/** Folders whose text is "the code" for a name (docs/ only for paths: no Markdown is read), and whose files and folders a path may name. */
const CODE_DIRS = ['src', 'scripts', 'tasks', 'tests', 'bench', 'drizzle', 'deploy', 'static', '.ci', 'docs'];
const SKIP_DIRS = new Set(['node_modules', '.tmp', '.git', 'build', '.svelte-kit']);
const TEXT = /\.(ts|js|mjs|cjs|svelte|sql|json|sh|service|timer|conf|txt|yml|yaml|html|css)$|^(Caddyfile|run|\.env\.example)$/;
const FILE_EXT = /\.(ts|js|mjs|cjs|svelte|sql|md|json|sh|service|timer)$/;

/**
 * Names cited from other projects' source, not Nomos's: Proxmox VE's Perl and C (docs/clusters.md,
 * docs/migrate.md) and Postgres's tools (deploy/README.md).
 */
const FOREIGN = new Set([
	'rrd_entry_is_old',
	'proxy_handler',
	'create_vm',
	'print_api_result',
	'fork_worker',
	'check_cfs_quorum',
	'check_node_exists',
	'storage_check_node',
	'pg_dump',
	'pg_restore'
]);

export interface CodeIndex {
	/** Every word of the code's text. */
	words: Set<string>;
	/** Every file and folder, relative to the root, '/'-separated. */
	paths: Set<string>;
	/** The code's text, for literal names a path check cannot find (a state file's name). */
	text: string;
}

/** The code's index; `except`: files (relative to the root) that are not evidence, such as the test that names made-up words. */
export function codeIndex(root: string, except: string[] = []): CodeIndex {
	const words = new Set<string>();
	const paths = new Set<string>();
	const texts: string[] = [];
	const walk = (rel: string) => {
		for (const name of readdirSync(path.join(root, rel))) {
			if (SKIP_DIRS.has(name) || name.startsWith('.tmp-')) continue;
			const r = rel ? `${rel}/${name}` : name;
			paths.add(r);
			if (statSync(path.join(root, r)).isDirectory()) {
				if (rel || CODE_DIRS.includes(name)) walk(r);
			} else if ((rel || name !== 'package-lock.json') && TEXT.test(name) && !except.includes(r)) {
				const t = readFileSync(path.join(root, r), 'utf8');
				texts.push(t);
				for (const m of t.matchAll(/[A-Za-z_$][\w$]*/g)) words.add(m[0]);
			}
		}
	};
	walk('');
	return { words, paths, text: texts.join('\n') };
}

/** What an inline code span names: an identifier, a path, or nothing to check. */
export function kindOf(span: string, index: CodeIndex): 'identifier' | 'path' | null {
	const s = span.replace(/\(\)$/, '');
	if (/[\s<>*…={}'"$|\\]|^[-/.]|^node_modules\/|^tests\/\.tmp\//.test(s)) return null;
	if (/^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/.test(s)) return 'identifier'; // camelCase
	if (/^[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*$/.test(s)) return 'identifier'; // PascalCase, two humps or more
	if (/^[a-z][a-z0-9]*(_[a-z0-9]+)+$/.test(s)) return 'identifier'; // snake_case
	if (/^NOMOS_[A-Z0-9_]+$/.test(s)) return 'identifier';
	if (!/^[\w@+.[\]()-]+(\/[\w@+.[\]()-]+)*\/?$/.test(s)) return null;
	const first = s.split('/')[0];
	if (FILE_EXT.test(s)) return 'path';
	// A folder path: its first part is a folder of the repository (`db/queries/`, `agent/tools`).
	if (s.includes('/') && [...index.paths].some((p) => p === first || p.endsWith(`/${first}`))) return 'path';
	return null;
}

/** Whether the code has what a span names: the word, or a file or folder (from the root, the doc, or any folder down). */
export function inCode(span: string, doc: string, root: string, index: CodeIndex): boolean {
	const s = span.replace(/\(\)$/, '');
	const kind = kindOf(s, index);
	if (kind === null) return true;
	if (kind === 'identifier') return FOREIGN.has(s) || index.words.has(s);
	const p = s.replace(/\/$/, '');
	const fromDoc = path
		.relative(root, path.resolve(path.dirname(doc), p))
		.split(path.sep)
		.join('/');
	return index.paths.has(p) || index.paths.has(fromDoc) || [...index.paths].some((q) => q.endsWith(`/${p}`)) || index.text.includes(p);
}

/** Backticked names of a Markdown page (prose only) that the code does not have: `doc:line: name`. */
export function missingIdentifiers(doc: string, prose: string, root: string, index: CodeIndex): string[] {
	const missing: string[] = [];
	prose.split('\n').forEach((line, i) => {
		for (const m of line.matchAll(/`([^`]+)`/g)) {
			if (!inCode(m[1], doc, root, index)) missing.push(`${path.relative(root, doc)}:${i + 1}: \`${m[1]}\` (${kindOf(m[1], index)} not in the code)`);
		}
	});
	return missing;
}
