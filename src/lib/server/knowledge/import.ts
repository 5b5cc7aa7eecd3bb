import fs from 'node:fs/promises';
import path from 'node:path';
import { sql } from '../db/index';
import { replaceFileNotes } from '../db/queries/knowledge';

export type ImportCounts = {
	/** Markdown files read and kept in the knowledge table. */
	imported: number;
	created: number;
	updated: number;
	unchanged: number;
	/** File-sourced notes deleted because their file is gone. */
	removed: number;
	/** Files not imported (too large, unreadable), with the reason. */
	skipped: Array<{ path: string; reason: string }>;
};

/** A larger note is not useful to the agent and could overflow a tsvector (1 MB). */
const MAX_FILE_BYTES = 512 * 1024;
const MAX_TITLE = 200;

/** The first level-1 ATX heading outside code fences, else the file name without `.md`. */
export function titleOf(markdown: string, relPath: string): string {
	let fence: string | null = null;
	for (const line of markdown.split(/\r?\n/)) {
		const f = /^ {0,3}(`{3,}|~{3,})/.exec(line);
		if (f) {
			if (!fence) fence = f[1][0];
			else if (f[1][0] === fence) fence = null;
			continue;
		}
		if (fence) continue;
		const h = /^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
		if (h && h[1].trim()) return h[1].trim().slice(0, MAX_TITLE);
	}
	return path.basename(relPath).replace(/\.md$/i, '').slice(0, MAX_TITLE) || relPath;
}

/** Relative paths (with `/`) of the `*.md` files under dir; hidden entries and symlinks are skipped. */
async function markdownFiles(dir: string, rel = ''): Promise<string[]> {
	const entries = await fs.readdir(path.join(dir, rel), { withFileTypes: true });
	const out: string[] = [];
	for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
		if (e.name.startsWith('.') || e.name === 'node_modules') continue;
		const child = rel ? `${rel}/${e.name}` : e.name;
		if (e.isDirectory()) out.push(...(await markdownFiles(dir, child)));
		else if (e.isFile() && /\.md$/i.test(e.name)) out.push(child);
	}
	return out;
}

/**
 * Imports `*.md` under dir (recursively) as source 'file' notes keyed by their relative path:
 * new files are inserted, changed ones updated (updated_at only moves when the text changed),
 * and file notes whose file is gone are deleted. Idempotent; a missing dir throws and deletes
 * nothing.
 */
export async function importKnowledgeDir(dir: string): Promise<ImportCounts> {
	const root = path.resolve(dir);
	const stat = await fs.stat(root);
	if (!stat.isDirectory()) throw new Error(`${root} is not a directory`);

	const files: Array<{ path: string; title: string; body: string }> = [];
	const skipped: ImportCounts['skipped'] = [];
	for (const rel of await markdownFiles(root)) {
		try {
			const full = path.join(root, rel);
			const { size } = await fs.stat(full);
			if (size > MAX_FILE_BYTES) {
				skipped.push({ path: rel, reason: `larger than ${MAX_FILE_BYTES / 1024} KB` });
				continue;
			}
			const body = (await fs.readFile(full, 'utf8')).replace(/^\uFEFF/, '').replaceAll('\0', '');
			files.push({ path: rel, title: titleOf(body, rel), body });
		} catch (e) {
			skipped.push({ path: rel, reason: (e as Error).message });
		}
	}

	// A file that is present but was skipped keeps its previous note.
	const counts = await replaceFileNotes(sql(), files, [...files.map((f) => f.path), ...skipped.map((s) => s.path)]);
	return { imported: files.length, ...counts, unchanged: files.length - counts.created - counts.updated, skipped };
}
