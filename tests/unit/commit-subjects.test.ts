import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CUT_OFF, longSubjects } from '../../scripts/commit-subjects.js';

// The subject rule is checked on a real repository: a cut-off, a short subject, a long one, and a
// shallow clone that lacks the cut-off (skipped, never a false failure).

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function repo(): { dir: string; git: (...args: string[]) => string } {
	const dir = mkdtempSync(path.join(tmpdir(), 'nomos-subjects-'));
	dirs.push(dir);
	const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.net', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.net' };
	const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env, encoding: 'utf8' }).trim();
	git('init', '-q', '-b', 'main');
	return { dir, git };
}

describe('commit subjects after the cut-off', () => {
	it('names each subject over 72 characters, with its hash and length, and only those after the cut-off', () => {
		const { dir, git } = repo();
		git('commit', '-q', '--allow-empty', '-m', `old history ${'x'.repeat(100)}`);
		const cut = git('rev-parse', 'HEAD');
		git('commit', '-q', '--allow-empty', '-m', 'a'.repeat(72), '-m', 'why: a body may be as long as it likes');
		expect(longSubjects({ cwd: dir, since: cut })).toEqual({ checked: 1, long: [] });
		git('commit', '-q', '--allow-empty', '-m', `${'b'.repeat(73)}`);
		const hash = git('rev-parse', '--short', 'HEAD');
		expect(longSubjects({ cwd: dir, since: cut })).toEqual({ checked: 2, long: [`${hash} 73: ${'b'.repeat(73)}`] });
	});

	it('skips a clone without the cut-off commit, and a folder that is no checkout', () => {
		const { dir } = repo();
		expect(longSubjects({ cwd: dir, since: CUT_OFF })).toEqual({ skipped: `the cut-off commit ${CUT_OFF.slice(0, 7)} is not in this clone (shallow?)` });
		const bare = mkdtempSync(path.join(tmpdir(), 'nomos-subjects-'));
		dirs.push(bare);
		expect(longSubjects({ cwd: bare })).toEqual({ skipped: 'not a git checkout' });
	});

	it('passes on this repository', () => {
		const r = longSubjects({ cwd: path.resolve(import.meta.dirname, '../..') });
		if ('skipped' in r) expect(r.skipped).toMatch(/not in this clone|not a git checkout/);
		else expect(r.long).toEqual([]);
	});
});
