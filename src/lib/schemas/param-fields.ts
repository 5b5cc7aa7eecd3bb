import { z } from 'zod';

/** Proxmox guest ids: 100–999999999 (`^[1-9][0-9]{2,8}$`). */
export const vmid = z
	.union([z.string(), z.number().int()])
	.transform((v) => String(v))
	.pipe(z.string().regex(/^[1-9][0-9]{2,8}$/, 'a vmid is a number from 100 to 999999999'))
	.describe('a guest id, 100–999999999');

export const hostname = z
	.string()
	.regex(/^(?=.{1,63}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a hostname: lowercase letters, digits and dashes, 1–63 characters, no leading/trailing dash')
	.describe('lowercase letters, digits, dashes');

// The rules a gate carries are the regex's (gate-shapes.ts turns it into the allowlist's pattern;
// a .refine never reaches nomos-gate): what must hold on the node is said in the regex.
export const unit = z
	.string()
	.regex(
		/^(?!-)[A-Za-z0-9@._:-]{1,200}(\.(service|socket|timer|target|mount|path))?$/,
		'a systemd unit name such as nginx.service (not starting with a dash: that would be an option)'
	)
	.describe('e.g. nginx.service');

export const storage = z
	.string()
	.regex(/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/, 'a Proxmox storage id such as local-lvm')
	.describe('a storage id');

export const template = z
	.string()
	.regex(
		/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}:vztmpl\/[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.tar\.(gz|xz|zst)$/,
		'a container template volume such as local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
	)
	.describe('a template volume, e.g. local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst (pveam list / pveam_download)');

export const bridge = z
	.string()
	.regex(/^vmbr[0-9]{1,4}$/, 'a bridge such as vmbr0')
	.describe('e.g. vmbr0');

const ipv4 = String.raw`(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}`;
export const ipConfig = z
	.string()
	.regex(new RegExp(`^(dhcp|${ipv4}/([0-9]|[12][0-9]|3[0-2]))$`), "'dhcp' or an IPv4 address with prefix, e.g. 192.168.1.50/24")
	.describe("'dhcp' or IPv4/prefix, e.g. 192.168.1.50/24");
export const gateway = z
	.string()
	.regex(new RegExp(`^${ipv4}$`), 'an IPv4 gateway address')
	.describe('an IPv4 address');

/** One argv word for `pct exec`: any text but NUL, bounded. */
export const argvWord = z
	.string()
	.max(4096, 'each argument is at most 4096 characters')
	.refine((s) => !s.includes('\0'), 'arguments cannot contain NUL');

/** A template file name as `pveam available` lists it (no storage, no path). */
export const templateName = z
	.string()
	.regex(
		/^[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.tar\.(gz|xz|zst)$/,
		'a template file name as `pveam available` lists it, e.g. debian-12-standard_12.7-1_amd64.tar.zst'
	)
	.describe('a file name as pveam available lists it, e.g. debian-12-standard_12.7-1_amd64.tar.zst');

/** Snapshot names as PVE accepts them (`pve-configid`); `current` is the live state, never a snapshot. */
export const snapshotName = z
	.string()
	.regex(
		/^(?!(?:current|vzdump)$)[A-Za-z][A-Za-z0-9_-]{1,39}$/,
		"a snapshot name: a letter, then 1–39 letters, digits, _ or - ('current' and 'vzdump' are reserved)"
	);

/** A container disk: rootfs or a mount point mp0–mp255. */
export const ctDisk = z.string().regex(/^(rootfs|mp([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5]))$/, "'rootfs' or a mount point such as mp0");

/** A grow-only size for `pct resize`: `+<n>G` (grow by) or `<n>G` (new total, must exceed the current one). */
export const growSize = z
	.string()
	.regex(/^\+?[1-9][0-9]{0,5}G$/, "a size in GiB: '+2G' to grow by 2 GiB, or '16G' as the new total (grow only)")
	.describe("'+2G' grows by 2 GiB, '16G' is the new total");

/** Free text for `pct set --description`: bounded, no NUL. */
export const description = z
	.string()
	.max(8192, 'a description is at most 8192 characters')
	.refine((s) => !s.includes('\0'), 'a description cannot contain NUL');

/** An absolute file path inside a container: no NUL, no `..` segment, bounded. */
export const ctPath = z
	.string()
	.max(1024, 'a path is at most 1024 characters')
	.regex(/^(?![\s\S]*\/\.\.(?:\/|$))\/[^\0]*[^/\0]$/, "an absolute file path inside the container without a '..' segment, e.g. /etc/systemd/system/app.service")
	.describe('an absolute path inside the CT, e.g. /etc/systemd/system/app.service');

/** pct_push content: text, shown verbatim on the approval card; at most PUSH_MAX_BYTES as UTF-8. */
export const PUSH_MAX_BYTES = 32 * 1024;
const utf8 = new TextEncoder();
export const pushContent = z
	.string()
	.refine((s) => utf8.encode(s).length <= PUSH_MAX_BYTES, `the content is at most ${PUSH_MAX_BYTES} bytes (UTF-8)`)
	.refine((s) => !s.includes('\0'), 'the content is text: no NUL')
	.describe('the whole file, verbatim (at most 32 KiB)');

/** Octal file mode for pct push --perms. */
export const fileMode = z.string().regex(/^0?[0-7]{3}$/, "an octal file mode such as '0644'");

/** A URL path for an HTTP check: starts with /, URL-safe characters only. */
export const urlPath = z
	.string()
	.max(500)
	.regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*$/, "a URL path starting with '/', e.g. /healthz")
	.describe('e.g. /healthz');

/**
 * A cloud image on the host for `import-from`: a storage volume (iso/ or import/ content) or a file
 * directly in a storage's ISO or import directory (/var/lib/vz or /mnt/pve/<storage>). Never any
 * other node path: qm reads it as root, so a path anywhere (a symlink in a container's subvol, a
 * .vmdk whose extent names /dev/sda) would copy the node's files into a guest (docs/security.md).
 */
export const vmImage = z
	.string()
	.max(1024)
	.regex(
		/^((\/var\/lib\/vz|\/mnt\/pve\/[a-zA-Z][a-zA-Z0-9_.-]{0,63})\/(template\/iso|import)\/|[a-zA-Z][a-zA-Z0-9_.-]{0,63}:(iso|import)\/)[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.(img|qcow2|raw|vmdk)$/,
		'a cloud image in a storage: a volume such as local:import/debian-12-genericcloud-amd64.qcow2, or a file in /var/lib/vz/template/iso/, /var/lib/vz/import/ or /mnt/pve/<storage>/template/iso/ (.img, .qcow2, .raw, .vmdk)'
	)
	.describe('a cloud image path on the host, e.g. /var/lib/vz/template/iso/debian-12-genericcloud-amd64.qcow2');

/** A VM disk as qm names it: scsi0–30, virtio0–15, sata0–5, ide0–3. */
export const vmDisk = z.string().regex(/^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|ide[0-3])$/, "a VM disk such as 'scsi0' or 'virtio0'");

/** The cloud-init user (`--ciuser`). */
export const ciUser = z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'a user name: lowercase letters, digits, _ and -, at most 32 characters');

/** OpenSSH public keys, one per line, for cloud-init (written to a file from stdin, never onto a command line). */
export const sshKeys = z
	.string()
	.max(16_384, 'at most 16 KiB of keys')
	.refine((s) => {
		const lines = s
			.split('\n')
			.map((l) => l.trim())
			.filter(Boolean);
		return (
			lines.length > 0 &&
			lines.every((l) =>
				/^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/=]+( [^\0]*)?$/.test(l)
			)
		);
	}, 'OpenSSH public keys, one per line (ssh-ed25519 AAAA… comment)')
	.describe('OpenSSH public keys, one per line');

/** A Proxmox tag (`pve-tag`): lowercase letters, digits, _ + . -. */
export const vmTag = z.string().regex(/^[a-z0-9_][a-z0-9_+.-]{0,63}$/, 'a tag: lowercase letters, digits, _ + . -');

/** A Proxmox node name (`pve-node`: a DNS label). */
export const nodeName = z
	.string()
	.regex(/^(?=.{1,63}$)[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/, 'a cluster node name such as pve2: letters, digits and dashes')
	.describe('a cluster node name, e.g. pve2');
