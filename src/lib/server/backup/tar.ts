import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';

/*
 * The archive is a plain gzipped POSIX tar (ustar), readable with `tar tzf` / `tar xzf`. Only
 * regular files; names up to 255 bytes (ustar's prefix + name). Written and read here in a few
 * lines rather than with a dependency: the format is fixed and this is all Nomos needs of it.
 */

const BLOCK = 512;

function octal(n: number, width: number): string {
	return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mode: number, mtime: Date): Buffer {
	const h = Buffer.alloc(BLOCK);
	let prefix = '';
	let base = name;
	if (Buffer.byteLength(name) > 100) {
		const cut = name.lastIndexOf('/', 155);
		if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`archive: name too long: ${name}`);
		prefix = name.slice(0, cut);
		base = name.slice(cut + 1);
	}
	h.write(base, 0, 100, 'utf8');
	h.write(octal(mode & 0o7777, 8), 100, 'ascii');
	h.write(octal(0, 8), 108, 'ascii');
	h.write(octal(0, 8), 116, 'ascii');
	h.write(octal(size, 12), 124, 'ascii');
	h.write(octal(Math.floor(mtime.getTime() / 1000), 12), 136, 'ascii');
	h.write('        ', 148, 'ascii');
	h.write('0', 156, 'ascii');
	h.write('ustar\0', 257, 'ascii');
	h.write('00', 263, 'ascii');
	h.write(prefix, 345, 155, 'utf8');
	let sum = 0;
	for (const b of h) sum += b;
	h.write(octal(sum, 7) + ' ', 148, 'ascii');
	return h;
}

export interface TarEntry {
	/** The name inside the archive (`db/messages.copy`). */
	name: string;
	/** A file on disk to store, or the content itself (in one buffer or several). */
	file?: string;
	content?: Buffer | Buffer[];
	mode?: number;
}

/**
 * Writes `entries` as a gzipped tar to `out` (created with mode 0600 and refused if it exists:
 * the archive holds secrets). Entries may be produced while the archive is written (an async
 * generator), so nothing has to be staged on disk first. `signal` stops the write; the caller
 * removes what was written.
 */
export async function writeTarGz(out: string, entries: Iterable<TarEntry> | AsyncIterable<TarEntry>, signal?: AbortSignal): Promise<void> {
	async function* blocks() {
		for await (const e of entries) {
			if (e.content) {
				const parts = Array.isArray(e.content) ? e.content : [e.content];
				const size = parts.reduce((n, b) => n + b.length, 0);
				yield header(e.name, size, e.mode ?? 0o600, new Date());
				yield* parts;
				yield Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
				continue;
			}
			const st = await fs.stat(e.file!);
			yield header(e.name, st.size, e.mode ?? 0o600, st.mtime);
			let n = 0;
			for await (const chunk of createReadStream(e.file!)) {
				n += (chunk as Buffer).length;
				yield chunk as Buffer;
			}
			if (n !== st.size) throw new Error(`archive: ${e.file} changed while it was being stored`);
			yield Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);
		}
		yield Buffer.alloc(BLOCK * 2);
	}
	await pipeline(blocks, createGzip(), createWriteStream(out, { mode: 0o600, flags: 'wx' }), { signal });
}

/**
 * Extracts a gzipped tar written by writeTarGz into `dir` (which must exist); returns the names.
 * Refuses anything but regular files and names that would leave `dir`.
 */
export async function extractTarGz(archive: string, dir: string): Promise<string[]> {
	const names: string[] = [];
	let buf = Buffer.alloc(0);
	let current: { name: string; left: number; pad: number; handle: fs.FileHandle } | null = null;
	let ended = false;
	const root = path.resolve(dir);
	const gunzip = createGunzip();
	const input = createReadStream(archive).pipe(gunzip);
	for await (const chunk of input) {
		buf = Buffer.concat([buf, chunk as Buffer]);
		for (;;) {
			if (ended) break;
			if (current) {
				if (current.left > 0) {
					if (buf.length === 0) break;
					const take = Math.min(current.left, buf.length);
					await current.handle.write(buf.subarray(0, take));
					buf = buf.subarray(take);
					current.left -= take;
					if (current.left > 0) break;
				}
				if (buf.length < current.pad) break;
				buf = buf.subarray(current.pad);
				await current.handle.close();
				current = null;
				continue;
			}
			if (buf.length < BLOCK) break;
			const h = buf.subarray(0, BLOCK);
			buf = buf.subarray(BLOCK);
			if (h.every((b) => b === 0)) {
				ended = true;
				break;
			}
			if (h.subarray(257, 262).toString('ascii') !== 'ustar') throw new Error('not a Nomos backup (no tar header)');
			const str = (off: number, len: number) => h.subarray(off, off + len).toString('utf8').replace(/\0.*$/s, '');
			const type = String.fromCharCode(h[156]);
			if (type !== '0' && type !== '\0') throw new Error(`archive: unexpected entry type ${JSON.stringify(type)}`);
			const prefix = str(345, 155);
			const name = prefix ? `${prefix}/${str(0, 100)}` : str(0, 100);
			const size = parseInt(str(124, 12).trim() || '0', 8);
			const target = path.resolve(root, name);
			if (!target.startsWith(root + path.sep)) throw new Error(`archive: entry outside the archive: ${name}`);
			await fs.mkdir(path.dirname(target), { recursive: true });
			current = { name, left: size, pad: (BLOCK - (size % BLOCK)) % BLOCK, handle: await fs.open(target, 'wx', 0o600) };
			names.push(name);
		}
	}
	if (current) {
		await current.handle.close();
		throw new Error(`archive: truncated inside ${current.name}`);
	}
	if (!ended) throw new Error('archive: truncated (no end marker)');
	return names;
}
