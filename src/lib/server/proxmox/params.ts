import { z } from 'zod';

/** Proxmox guest ids: 100–999999999 (`^[1-9][0-9]{2,8}$`). */
export const vmid = z
	.union([z.string(), z.number().int()])
	.transform((v) => String(v))
	.pipe(z.string().regex(/^[1-9][0-9]{2,8}$/, 'a vmid is a number from 100 to 999999999'));

export const hostname = z
	.string()
	.regex(/^(?=.{1,63}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a hostname: lowercase letters, digits and dashes, 1–63 characters, no leading/trailing dash');

export const unit = z
	.string()
	.regex(/^[A-Za-z0-9@._:-]{1,200}(\.(service|socket|timer|target|mount|path))?$/, 'a systemd unit name such as nginx.service')
	.refine((u) => !u.startsWith('-'), 'a unit name cannot start with a dash');

export const storage = z.string().regex(/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/, 'a Proxmox storage id such as local-lvm');

export const template = z
	.string()
	.regex(
		/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}:vztmpl\/[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.tar\.(gz|xz|zst)$/,
		'a container template volume such as local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
	);

export const bridge = z.string().regex(/^vmbr[0-9]{1,4}$/, 'a bridge such as vmbr0');

const ipv4 = String.raw`(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}`;
export const ipConfig = z
	.string()
	.regex(new RegExp(`^(dhcp|${ipv4}/([0-9]|[12][0-9]|3[0-2]))$`), "'dhcp' or an IPv4 address with prefix, e.g. 192.168.1.50/24");
export const gateway = z.string().regex(new RegExp(`^${ipv4}$`), 'an IPv4 gateway address');

/** One argv word for `pct exec`: any text but NUL, bounded. */
export const argvWord = z
	.string()
	.max(4096, 'each argument is at most 4096 characters')
	.refine((s) => !s.includes('\0'), 'arguments cannot contain NUL');
