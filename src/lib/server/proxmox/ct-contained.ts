// Whether a container keeps its root inside: what nomos-gate checks in /etc/pve/lxc/<vmid>.conf
// before pct_exec or pct_push on the mutation key (deploy/nomos-gate `contained`), read here from
// `pct config` before approval: on a gated host Nomos refuses what the gate would refuse at run
// time; on a host whose key still reaches a full shell the card says it (before-approval.ts).

/**
 * Why running a command or pushing a file in this container would reach the node (privileged, a
 * node device, a raw lxc.* key), from its `pct config`; null when it is contained. A bind mount
 * into an unprivileged container is uid-mapped (the node's root is nobody there): it gives what
 * the container's own services have already, so it does not count.
 */
export function uncontained(vmid: string, config: string): string | null {
	const lines = config.split('\n');
	const key = (re: RegExp) => lines.map((l) => re.exec(l)?.[1]).find((k) => k !== undefined);
	const dev = key(/^(dev[0-9]+):/);
	if (dev) return `CT ${vmid} has a device of the node (${dev}): a command or file in it can reach the node`;
	const raw = key(/^(lxc\.[^:\s]*)/);
	if (raw) return `CT ${vmid} has a raw lxc key (${raw}): a command or file in it could reach the node`;
	if (!lines.some((l) => /^unprivileged:\s*1\s*$/.test(l))) return `CT ${vmid} is privileged: its root is the node's root`;
	return null;
}
