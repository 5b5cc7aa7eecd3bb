// ed25519 key generation (via ssh-keygen) and OpenSSH-style SHA256 fingerprints.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
	/** OpenSSH-format private key, no passphrase */
	privateKeyPath: string;
	publicKeyPath: string;
	/** `SHA256:<base64, no padding>` exactly as `ssh-keygen -lf` prints it */
	fingerprint: string;
}

/** `SHA256:...` fingerprint of a raw SSH public key blob (what ssh2's hostVerifier receives). */
export function fingerprintOf(blob: Buffer): string {
	return 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
}

export async function publicKeyBlob(publicKeyPath: string): Promise<Buffer> {
	const [, b64] = (await readFile(publicKeyPath, 'utf8')).trim().split(/\s+/);
	if (!b64) throw new Error(`not an OpenSSH public key: ${publicKeyPath}`);
	return Buffer.from(b64, 'base64');
}

export async function generateKeyPair(dir: string, name: string, comment = 'nomos-proxmox-double'): Promise<KeyPair> {
	const privateKeyPath = join(dir, name);
	await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', privateKeyPath]);
	const publicKeyPath = `${privateKeyPath}.pub`;
	return { privateKeyPath, publicKeyPath, fingerprint: fingerprintOf(await publicKeyBlob(publicKeyPath)) };
}

/** A fresh host key in its own temp dir — e.g. to start a second server with a DIFFERENT key. */
export async function generateHostKey(): Promise<KeyPair> {
	const dir = await mkdtemp(join(tmpdir(), 'pve-double-hostkey-'));
	return generateKeyPair(dir, 'ssh_host_ed25519_key', 'root@pve-double');
}

/** Fingerprint of an existing private key file (reads `<path>.pub`, or derives it with ssh-keygen -y). */
export async function fingerprintOfPrivateKey(privateKeyPath: string): Promise<string> {
	const pub = await readFile(`${privateKeyPath}.pub`, 'utf8').catch(async () => {
		const { stdout } = await run('ssh-keygen', ['-y', '-f', privateKeyPath]);
		return stdout;
	});
	const [, b64] = pub.trim().split(/\s+/);
	if (!b64) throw new Error(`cannot read public key for ${privateKeyPath}`);
	return fingerprintOf(Buffer.from(b64, 'base64'));
}
