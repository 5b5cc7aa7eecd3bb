// Checks that every commit subject after the cut-off is at most 72 characters (CONTRIBUTING.md:
// a short subject, then a body that says why). Run by `npm run lint`; commits up to the cut-off
// are history and are not rewritten. It skips, saying so, where it cannot tell: outside a git
// checkout (a tarball), or in a shallow clone that lacks the cut-off commit.
//   node scripts/commit-subjects.js [--since <rev>] [--max <n>]
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** main's HEAD when the rule began (issue #44); older subjects are left as they are. */
export const CUT_OFF = '3e883847ce86371a7f1dc650b10e8b39ccd6bd9c';
export const MAX = 72;

/**
 * The subjects after `since` (up to HEAD) longer than `max`, as `<short hash> <length>: <subject>`;
 * or `{ skipped }` saying why nothing could be checked.
 * @param {{ cwd: string, since?: string, max?: number }} o
 * @returns {{ checked: number, long: string[] } | { skipped: string }}
 */
export function longSubjects({ cwd, since = CUT_OFF, max = MAX }) {
	/** @param {string[]} args */
	const git = (args) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
	try {
		git(['rev-parse', '--git-dir']);
	} catch {
		return { skipped: 'not a git checkout' };
	}
	try {
		git(['cat-file', '-e', `${since}^{commit}`]);
	} catch {
		return { skipped: `the cut-off commit ${since.slice(0, 7)} is not in this clone (shallow?)` };
	}
	const lines = git(['log', '--format=%h %s', `${since}..HEAD`])
		.split('\n')
		.filter((l) => l !== '');
	const long = lines
		.map((l) => ({ hash: l.slice(0, l.indexOf(' ')), subject: l.slice(l.indexOf(' ') + 1) }))
		.filter((c) => [...c.subject].length > max)
		.map((c) => `${c.hash} ${[...c.subject].length}: ${c.subject}`);
	return { checked: lines.length, long };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	/** @param {string} name */
	const arg = (name) => {
		const i = process.argv.indexOf(name);
		return i > 0 ? process.argv[i + 1] : undefined;
	};
	const max = Number(arg('--max') ?? MAX);
	const r = longSubjects({ cwd: process.cwd(), since: arg('--since') ?? CUT_OFF, max });
	if ('skipped' in r) {
		console.log(`commit subjects: not checked, ${r.skipped}`);
	} else if (r.long.length > 0) {
		console.error(`commit subjects longer than ${max} characters (put the rest in the body, which says why):`);
		for (const l of r.long) console.error(`  ${l}`);
		process.exit(1);
	}
}
