// The backup archive's tar (tar-stream): what the hand-written writer before it stored still
// extracts byte-exact, and whole backups it wrote (versions 1 and 2) still restore.
import { execFile } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractTarGz, writeTarGz } from '../../src/lib/server/backup/tar';
import { restoreBackup } from '../../src/lib/server/backup/restore';
import { createTestDatabase } from '../helpers/db';
import { LONG_NAME, OLD_WRITER_ENTRIES } from '../fixtures/backup/entries';

const root = path.resolve('tests/.tmp', `backup-tar-${process.pid}`);
const fixture = (name: string) => path.resolve('tests/fixtures/backup', name);

beforeAll(async () => {
	await fs.rm(root, { recursive: true, force: true });
	await fs.mkdir(root, { recursive: true });
});
afterAll(async () => {
	await fs.rm(root, { recursive: true, force: true });
});

async function unpacked(dir: string, names: string[]): Promise<Record<string, string>> {
	const out: Record<string, string> = {};
	for (const n of names) out[n] = (await fs.readFile(path.join(dir, n))).toString('hex');
	return out;
}
const expected = (entries: typeof OLD_WRITER_ENTRIES) => Object.fromEntries(entries.map((e) => [e.name, Buffer.concat(e.content).toString('hex')]));

/** A gzipped tar made with tar-stream directly, for entries writeTarGz would never write. */
async function rawArchive(file: string, add: (pack: tar.Pack) => void): Promise<void> {
	const pack = tar.pack();
	add(pack);
	pack.finalize();
	await pipeline(pack, createGzip(), createWriteStream(file));
}

describe('the backup tar', () => {
	it('extracts an archive of the old hand-written writer byte-exact (long names, empty and 512-byte entries)', async () => {
		const dir = path.join(root, 'old');
		const names = await extractTarGz(fixture('old-writer.tar.gz'), dir);
		expect(names).toEqual(OLD_WRITER_ENTRIES.map((e) => e.name));
		expect(names).toContain(LONG_NAME);
		expect(await unpacked(dir, names)).toEqual(expected(OLD_WRITER_ENTRIES));
	});

	it('writes what it reads back and what the system tar lists, content in parts or from a file', async () => {
		const file = path.join(root, 'new.tar.gz');
		const onDisk = path.join(root, 'on-disk.bin');
		await fs.writeFile(onDisk, Buffer.alloc(70_000, 7));
		async function* entries() {
			for (const e of OLD_WRITER_ENTRIES) yield { name: e.name, content: e.content };
			yield { name: 'data/on-disk.bin', file: onDisk };
		}
		await writeTarGz(file, entries());
		expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
		const { stdout } = await promisify(execFile)('tar', ['tzf', file]);
		expect(stdout.trim().split('\n')).toEqual([...OLD_WRITER_ENTRIES.map((e) => e.name), 'data/on-disk.bin']);
		const dir = path.join(root, 'new');
		const names = await extractTarGz(file, dir);
		expect(await unpacked(dir, names)).toEqual({ ...expected(OLD_WRITER_ENTRIES), 'data/on-disk.bin': Buffer.alloc(70_000, 7).toString('hex') });
		// never over an existing archive
		await expect(writeTarGz(file, [])).rejects.toThrow(/EEXIST/);
	});

	it('reports the producer’s error as the error', async () => {
		async function* failing() {
			yield { name: 'a', content: Buffer.from('a') };
			throw new Error('COPY failed');
		}
		await expect(writeTarGz(path.join(root, 'failing.tar.gz'), failing())).rejects.toThrow('COPY failed');
	});

	it('refuses entries that are not regular files, that leave the folder, and a cut-off archive', async () => {
		const link = path.join(root, 'link.tar.gz');
		await rawArchive(link, (p) => p.entry({ name: 'evil', type: 'symlink', linkname: '/etc/passwd' }));
		await expect(extractTarGz(link, path.join(root, 'x1'))).rejects.toThrow(/unexpected entry type "symlink"/);
		const escape = path.join(root, 'escape.tar.gz');
		await rawArchive(escape, (p) => p.entry({ name: '../outside.txt' }, 'x'));
		await expect(extractTarGz(escape, path.join(root, 'x2'))).rejects.toThrow(/entry outside the archive/);
		expect(existsSync(path.join(root, 'outside.txt'))).toBe(false);
		const whole = await fs.readFile(fixture('old-writer.tar.gz'));
		const cut = path.join(root, 'cut.tar.gz');
		await fs.writeFile(cut, whole.subarray(0, whole.length - 40));
		await expect(extractTarGz(cut, path.join(root, 'x3'))).rejects.toThrow();
	});
});

describe('backups written by the old writer', () => {
	it.each(['v1', 'v2'])(
		'a %s archive restores row for row',
		async (v) => {
			const dest = await createTestDatabase({ empty: true });
			const r = await restoreBackup(fixture(`old-writer-${v}.tar.gz`), { databaseUrl: dest, dataDir: path.join(root, 'unused'), pgPort: 1 });
			expect(r.manifest.version).toBe(v === 'v1' ? 1 : 2);
			if (v === 'v2') expect(r.manifest.tables.find((t) => t.name === 'knowledge')?.parts?.length).toBeGreaterThan(0);
			const sql = postgres(dest, { max: 1, onnotice: () => undefined });
			try {
				expect(await sql`select username from operators`).toEqual([{ username: 'alice' }]);
				const [m] = await sql<{ parts: Array<{ text: string }> }[]>`select parts from messages`;
				expect(m.parts[0].text).toBe('line one\nline two\ttab \\ backslash ünïcødé');
				const pages = await sql<{ title: string; body: string }[]>`select title, body from knowledge`;
				expect(pages).toHaveLength(60);
				expect(pages.find((p) => p.title === 'page 60')).toEqual({ title: 'page 60', body: 'ünïcødé \\ tab	'.repeat(60 % 7) });
			} finally {
				await sql.end();
			}
		},
		120_000
	);
});
