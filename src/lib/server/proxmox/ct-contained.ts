// Whether a container keeps its root inside: what nomos-gate checks in /etc/pve/lxc/<vmid>.conf
// before pct_exec or pct_push on the mutation key (deploy/nomos-gate `contained`), read here from
// `pct config` so that Nomos refuses before approval what the gate would refuse at run time.

/**
 * Why running a command or pushing a file in this container would reach the node (privileged,
 * a bind mount of a node path, a node device, a raw lxc.* key), from its `pct config`; null when
 * it is contained.
 */
export function uncontained(vmid: string, config: string): string | null {
	const lines = config.split('\n');
	const key = (re: RegExp) => lines.map((l) => re.exec(l)?.[1]).find((k) => k !== undefined);
	const bind = key(/^(mp[0-9]+|rootfs):\s*\//);
	if (bind) return `CT ${vmid} has a bind mount of a node path (${bind}): a command or file in it would reach the node`;
	const dev = key(/^(dev[0-9]+):/);
	if (dev) return `CT ${vmid} has a device of the node (${dev}): a command or file in it would reach the node`;
	const raw = key(/^(lxc\.[^:\s]*)/);
	if (raw) return `CT ${vmid} has a raw lxc key (${raw}): a command or file in it could reach the node`;
	if (!lines.some((l) => /^unprivileged:\s*1\s*$/.test(l)))
		return `CT ${vmid} is privileged: its root is the node's, so Nomos runs no command and pushes no file in it`;
	return null;
}
