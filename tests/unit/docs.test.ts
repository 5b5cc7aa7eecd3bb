import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDelivery } from '../../src/lib/server/watches/parse';
import { codeIndex, missingIdentifiers } from '../helpers/doc-identifiers';

// The README is a door and docs/ is the house behind it: every relative link must lead somewhere
// (a file, and a heading when it names one), every `npm run x` must be a script, every repo path
// in backticks must exist, every identifier in backticks must be in the code, and the Proxmox
// webhook body the operator copies must parse.

const ROOT = path.resolve(import.meta.dirname, '../..');
/** This file names made-up identifiers on purpose: it is no evidence that they exist. */
const THIS_FILE = 'tests/unit/docs.test.ts';

function markdownFiles(): string[] {
	const docs = (dir: string): string[] =>
		readdirSync(dir).flatMap((name) => {
			const p = path.join(dir, name);
			return statSync(p).isDirectory() ? docs(p) : name.endsWith('.md') ? [p] : [];
		});
	return [path.join(ROOT, 'README.md'), path.join(ROOT, 'deploy/README.md'), ...docs(path.join(ROOT, 'docs'))];
}

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading), lines kept in place. */
function prose(md: string): string {
	return md.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ''));
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
	return heading
		.trim()
		.toLowerCase()
		.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
		.replace(/ /g, '-');
}

/** Anchors of a Markdown file's headings, with GitHub's -1, -2 … for repeats. */
function anchors(md: string): Set<string> {
	const seen = new Map<string, number>();
	const out = new Set<string>();
	for (const m of prose(md).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
		const base = slug(m[1]);
		const n = seen.get(base) ?? 0;
		seen.set(base, n + 1);
		out.add(n === 0 ? base : `${base}-${n}`);
	}
	return out;
}

/** Relative links of a Markdown file that lead nowhere: `file → target (why)`. */
function brokenLinks(file: string, md: string, read: (p: string) => string | null, isDir: (p: string) => boolean): string[] {
	const bad: string[] = [];
	for (const m of prose(md).matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
		const href = m[1];
		if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // http:, https:, mailto:
		const [target, anchor] = href.split('#') as [string, string | undefined];
		const p = target ? path.resolve(path.dirname(file), target) : file;
		if (target && isDir(p)) {
			if (anchor !== undefined) bad.push(`${href} (an anchor into a folder)`);
			else if (read(path.join(p, 'README.md')) === null) bad.push(`${href} (a folder without a README.md)`);
			continue;
		}
		const text = read(p);
		if (text === null) bad.push(`${href} (no such file)`);
		else if (anchor !== undefined && p.endsWith('.md') && !anchors(text).has(anchor)) bad.push(`${href} (no heading #${anchor})`);
	}
	return bad;
}

/** Pages about working on Nomos: their links, scripts and paths are checked too (not the changelog's
 * old names: history may name what has since gone). */
const CONTRIBUTING = path.join(ROOT, 'CONTRIBUTING.md');
const CHANGELOG = path.join(ROOT, 'CHANGELOG.md');

const readOrNull = (p: string) => (existsSync(p) && statSync(p).isFile() ? readFileSync(p, 'utf8') : null);
const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

describe('README and docs/', () => {
	const files = markdownFiles();

	it('checks links for real (a wrong file or heading is found)', () => {
		const here = path.join(ROOT, 'docs/x.md');
		const docs: Record<string, string> = { [path.join(ROOT, 'docs/a.md')]: '# A title\n\n## Two: words — here\n\n```sh\n# not a heading\n```\n' };
		const read = (p: string) => docs[p] ?? null;
		expect(brokenLinks(here, '[ok](a.md#two-words--here) [ok](a.md) [web](https://example.net/x)', read, () => false)).toEqual([]);
		expect(brokenLinks(here, '[bad](b.md)', read, () => false)).toEqual(['b.md (no such file)']);
		expect(brokenLinks(here, '[bad](a.md#two-words)', read, () => false)).toEqual(['a.md#two-words (no heading #two-words)']);
		expect(brokenLinks(here, '[bad](a.md#not-a-heading)', read, () => false)).toHaveLength(1);
		expect([...anchors('## Chaos (`npm run bench:chaos`, not in `npm run bench`)\n## 3. A commit → NOTIFY\n## Repeat\n## Repeat')]).toEqual([
			'chaos-npm-run-benchchaos-not-in-npm-run-bench',
			'3-a-commit--notify',
			'repeat',
			'repeat-1'
		]);
	});

	it('has docs/ with the pages the README links to', () => {
		expect(files.map((f) => path.relative(ROOT, f))).toEqual(
			expect.arrayContaining(['docs/architecture.md', 'docs/operations.md', 'docs/benchmarks.md', 'docs/testing.md', 'docs/adr/README.md'])
		);
	});

	it('has no relative link that leads nowhere', () => {
		const bad = [...files, CONTRIBUTING, CHANGELOG].flatMap((f) =>
			brokenLinks(f, readFileSync(f, 'utf8'), readOrNull, isDir).map((b) => `${path.relative(ROOT, f)}: ${b}`)
		);
		expect(bad).toEqual([]);
	});

	it('names only npm scripts that exist', () => {
		const scripts = Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
		const named = new Set([...files, CONTRIBUTING, CHANGELOG].flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1])));
		expect(named.size).toBeGreaterThan(10);
		expect([...named].filter((s) => !scripts.includes(s))).toEqual([]);
	});

	it('names only repository paths that exist', () => {
		const missing: string[] = [];
		for (const f of [...files, CONTRIBUTING, CHANGELOG]) {
			for (const code of prose(readFileSync(f, 'utf8')).matchAll(/`([^`\n]+)`/g)) {
				for (const m of code[1].matchAll(/(?:^|[\s(])((?:src|tests|bench|scripts|deploy|drizzle|tasks|static)\/[^\s`),;:]*)/g)) {
					const p = m[1].replace(/\.$/, '');
					if (/[<*]/.test(p) || p.startsWith('tests/.tmp/')) continue;
					if (!existsSync(path.join(ROOT, p))) missing.push(`${path.relative(ROOT, f)}: ${p}`);
				}
			}
		}
		expect(missing).toEqual([]);
	});

	it('checks backticked names for real (a made-up one is found, with its page and line)', () => {
		const index = codeIndex(ROOT, [THIS_FILE]);
		const doc = path.join(ROOT, 'docs/x.md');
		const md = [
			'The runner (`executions/runner.ts`, `runExecution()`) reads `NOMOS_HOST_WAIT_MIN`;',
			'rows in `worker_processes`, the `db/queries/` folder, the `Hub`, `npm run lint`, `select 1`, `<id>`.',
			'But `plannedSteps`, `NOMOS_NO_SUCH_SETTING`, `db/queries/usage.ts` and `not_a_column_here` are made up.'
		].join('\n');
		expect(missingIdentifiers(doc, md, ROOT, index)).toEqual([
			'docs/x.md:3: `plannedSteps` (identifier not in the code)',
			'docs/x.md:3: `NOMOS_NO_SUCH_SETTING` (identifier not in the code)',
			'docs/x.md:3: `db/queries/usage.ts` (path not in the code)',
			'docs/x.md:3: `not_a_column_here` (identifier not in the code)'
		]);
	});

	it('names only identifiers, settings and files the code has (CONTRIBUTING.md and CHANGELOG.md too)', () => {
		const index = codeIndex(ROOT, [THIS_FILE]);
		const missing = [...files, CONTRIBUTING, CHANGELOG].flatMap((f) => missingIdentifiers(f, prose(readFileSync(f, 'utf8')), ROOT, index));
		expect(missing).toEqual([]);
	});

	it('keeps the README to three screens', () => {
		expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(150);
	});

	it('gives a Proxmox VE webhook body that Nomos reads (docs/watches.md)', () => {
		const md = readFileSync(path.join(ROOT, 'docs/watches.md'), 'utf8');
		const template = /```\n(\{"title":"\{\{ escape title \}\}".*\})\n```/.exec(md)?.[1];
		expect(template).toBeDefined();
		// What Proxmox VE's template engine makes of it: `escape` JSON-escapes inside the quotes, `json` writes JSON.
		const title = 'vzdump backup status (pve1): backup "nightly" failed';
		const values = {
			title,
			message: '102: FAILED\nno space left',
			severity: 'error',
			timestamp: 1796160000,
			fields: { type: 'vzdump', hostname: 'pve1', 'job-id': 'backup-nightly' }
		};
		const body = template!
			.replace(/\{\{ escape (\w+) \}\}/g, (_, k: 'title' | 'message') => JSON.stringify(values[k]).slice(1, -1))
			.replace(/\{\{ json (\w+) \}\}/g, (_, k: 'fields') => JSON.stringify(values[k]))
			.replace(/\{\{ (\w+) \}\}/g, (_, k: 'severity' | 'timestamp') => String(values[k]));
		expect(body).not.toContain('{{');
		const r = parseDelivery('proxmox', JSON.parse(body));
		expect(r).toMatchObject({ ok: true, alerts: [{ groupKey: 'pve:vzdump:pve1:backup-nightly', status: 'firing', title, severity: 'error' }] });
	});
});
