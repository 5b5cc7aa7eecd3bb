import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';

/*
 * The archive is a plain gzipped POSIX tar (ustar), readable with `tar tzf` / `tar xzf`, written
 * and read with tar-stream. Only regular files. Archives from the hand-written writer before it
 * (ustar, names split into prefix + name) read the same: tests/fixtures/backup/old-writer.tar.gz.
 */

export interface TarEntry {
	/** The name inside the archive (`db/messages.copy`). */
	name: string;
	/** A file on disk to store, or the content itself (in one buffer or several). */
	file?: string;
	content?: Buffer | Buffer[];
	mode?: number;
}

/** Adds one entry and resolves once tar-stream has taken all of it (so a slow disk holds the producer back). */
async function addEntry(pack: tar.Pack, e: TarEntry): Promise<void> {
	const mode = e.mode ?? 0o600;
	if (e.content) {
		const content = Array.isArray(e.content) ? Buffer.concat(e.content) : e.content;
		await new Promise<void>((resolve, reject) => pack.entry({ name: e.name, mode, size: content.length }, content, (err) => (err ? reject(err) : resolve())));
		return;
	}
	const st = await fs.stat(e.file!);
	const done = new Promise<void>((resolve, reject) => {
		const sink = pack.entry({ name: e.name, mode, size: st.size, mtime: st.mtime }, (err) => (err ? reject(err) : resolve()));
		// A file that changed size while stored makes tar-stream's entry fail ("Size mismatch").
		pipeline(createReadStream(e.file!), sink).catch((err: unknown) => reject(new Error(`archive: ${e.file} could not be stored: ${(err as Error).message}`)));
	});
	await done;
}

/**
 * Writes `entries` as a gzipped tar to `out` (created with mode 0600 and refused if it exists:
 * the archive holds secrets). Entries may be produced while the archive is written (an async
 * generator), so nothing has to be staged on disk first. `signal` stops the write; the caller
 * removes what was written.
 */
export async function writeTarGz(out: string, entries: Iterable<TarEntry> | AsyncIterable<TarEntry>, signal?: AbortSignal): Promise<void> {
	const pack = tar.pack();
	const written = pipeline(pack, createGzip(), createWriteStream(out, { mode: 0o600, flags: 'wx' }), { signal });
	// Whichever fails first is the error: the producer (its own error) or the write (disk, abort).
	const broken = written.then(() => new Promise<never>(() => undefined));
	broken.catch(() => undefined); // awaited below; only marked handled until then
	try {
		for await (const e of entries) await Promise.race([addEntry(pack, e), broken]);
		pack.finalize();
	} catch (err) {
		pack.destroy(err as Error);
		await written.catch(() => undefined);
		throw err;
	}
	await written;
}

/**
 * Extracts a gzipped tar written by writeTarGz into `dir` (which must exist); returns the names.
 * Refuses anything but regular files and names that would leave `dir`; a cut-off archive fails
 * (gzip's or tar's end of data).
 */
export async function extractTarGz(archive: string, dir: string): Promise<string[]> {
	const names: string[] = [];
	const root = path.resolve(dir);
	const extract = tar.extract();
	const read = pipeline(createReadStream(archive), createGunzip(), extract);
	read.catch(() => undefined); // awaited below; only marked handled until then
	try {
		for await (const entry of extract) {
			const { name, type } = entry.header;
			if (type !== 'file') throw new Error(`archive: unexpected entry type ${JSON.stringify(type)}`);
			const target = path.resolve(root, name);
			if (!target.startsWith(root + path.sep)) throw new Error(`archive: entry outside the archive: ${name}`);
			await fs.mkdir(path.dirname(target), { recursive: true });
			const handle = await fs.open(target, 'wx', 0o600);
			await pipeline(entry, handle.createWriteStream());
			names.push(name);
		}
	} catch (err) {
		extract.destroy(err as Error);
		await read.catch(() => undefined);
		throw err;
	}
	await read;
	return names;
}
