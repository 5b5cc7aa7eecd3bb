import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { env } from '../env';

/*
 * Sealed approvals (#43): every approval row carries an HMAC-SHA256 over what it decides, made
 * with a key the database never holds. Someone with only the database (the app role's rights:
 * add an `approvals` row, set a status, queue a job) cannot make a seal the runner accepts, so
 * a forged or altered approval runs nothing (executions/runner.ts).
 *
 * The key: NOMOS_SEAL_KEY when set (at least 32 characters), otherwise the file `seal-key` in the
 * data dir (NOMOS_DATA_DIR, also with an external DATABASE_URL), made with mode 0600 on first use.
 * Rotation: move the old key to NOMOS_SEAL_KEY_PREVIOUS and set a new NOMOS_SEAL_KEY; new
 * approvals are sealed with the new key, approvals sealed with either verify (docs/operations.md).
 */

/** The key file's name in the data dir (left out of backups: a backup never holds both the rows and their key). */
export const SEAL_KEY_FILE = 'seal-key';

/** What a seal covers: the decision as the server recorded it. */
export interface SealFields {
	executionId: string;
	hash: string;
	decision: 'approved' | 'denied';
	/** How it arrived (`button`, `ops`, `chat`, `plan`, `rest`, `rule:<id>`). */
	route: string;
	decidedBy: string | null;
	/**
	 * Which credential decided (`session`, `token:<id>`, `rule:<id>`, `plan:<id>`; see
	 * authority.ts credentialRef). Null only on approvals sealed before it was recorded (0033): those
	 * keep their v1 seal, which covers everything else; a v2 seal never verifies as v1 or back.
	 */
	credential: string | null;
	/** When it was decided, in milliseconds since the epoch (as stored in `decided_at`). */
	decidedAt: number;
}

const fileKeys = new Map<string, Promise<Buffer>>();

/** The data dir's key file: read, or made (0600) the first time; two processes starting at once agree. */
async function fileKey(dataDir: string): Promise<Buffer> {
	const file = path.join(path.resolve(dataDir), SEAL_KEY_FILE);
	await fs.mkdir(path.dirname(file), { recursive: true });
	const fresh = randomBytes(32).toString('base64url');
	try {
		await fs.writeFile(file, fresh + '\n', { mode: 0o600, flag: 'wx' });
		return Buffer.from(fresh);
	} catch (e) {
		if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
	}
	await fs.chmod(file, 0o600);
	const key = (await fs.readFile(file, 'utf8')).trim();
	if (key.length < 32)
		throw new Error(`${file} holds no usable seal key: restore it from where you keep it (approvals sealed with it no longer run without it)`);
	return Buffer.from(key);
}

/** The key new approvals are sealed with. */
async function currentKey(): Promise<Buffer> {
	const { NOMOS_SEAL_KEY, NOMOS_DATA_DIR } = env();
	if (NOMOS_SEAL_KEY) return Buffer.from(NOMOS_SEAL_KEY);
	const dir = path.resolve(NOMOS_DATA_DIR);
	let k = fileKeys.get(dir);
	if (!k) {
		k = fileKey(dir);
		fileKeys.set(dir, k);
		k.catch(() => fileKeys.delete(dir));
	}
	return k;
}

/**
 * The seal key and, during a rotation, the previous one (NOMOS_SEAL_KEY_PREVIOUS): for other
 * secrets sealed with the same outside key (watches/sealed-secret.ts derives its own key from them).
 */
export async function sealKeys(): Promise<{ current: Buffer; previous: Buffer | null }> {
	const previous = env().NOMOS_SEAL_KEY_PREVIOUS;
	return { current: await currentKey(), previous: previous ? Buffer.from(previous) : null };
}

/** Makes sure the key exists (boot calls it, so the file is made on first start, not on first approval). */
export async function ensureSealKey(): Promise<void> {
	await currentKey();
}

function mac(key: Buffer, f: SealFields): Buffer {
	const fields = [f.executionId, f.hash, f.decision, f.route, f.decidedBy, f.decidedAt];
	const text = JSON.stringify(f.credential === null ? ['nomos-approval-v1', ...fields] : ['nomos-approval-v2', ...fields, f.credential]);
	return createHmac('sha256', key).update(text).digest();
}

/** The seal for an approval (hex), made with the current key. */
export async function seal(f: SealFields): Promise<string> {
	return mac(await currentKey(), f).toString('hex');
}

/** True when `sealed` is the seal of exactly these fields under the current or the previous key. */
export async function verifySeal(f: SealFields, sealed: string | null | undefined): Promise<boolean> {
	if (!sealed || !/^[0-9a-f]{64}$/.test(sealed)) return false;
	const given = Buffer.from(sealed, 'hex');
	const keys = [await currentKey()];
	const previous = env().NOMOS_SEAL_KEY_PREVIOUS;
	if (previous) keys.push(Buffer.from(previous));
	let ok = false;
	for (const k of keys) ok = timingSafeEqual(mac(k, f), given) || ok;
	return ok;
}
