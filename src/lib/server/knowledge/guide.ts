import fs from 'node:fs/promises';
import path from 'node:path';
import { sql } from '../db/index';
import { replaceGuideNotes } from '../db/queries/knowledge';
import { titleOf } from './import';

/**
 * Nomos's guide for its agent (src/lib/server/agent/guide/*.md, read from the working directory
 * like soul.md): the long how-tos the instructions leave out, kept as knowledge notes that
 * search_knowledge finds. Written at every start, so the notes are those of this version.
 */
export async function seedGuideNotes(dir = path.resolve(process.env.NOMOS_GUIDE_DIR ?? 'src/lib/server/agent/guide')) {
	const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.md')).sort();
	const files = await Promise.all(
		names.map(async (name) => {
			const body = await fs.readFile(path.join(dir, name), 'utf8');
			return { path: name, title: titleOf(body, name), body };
		})
	);
	return replaceGuideNotes(sql(), files);
}
