import { isIP } from 'node:net';
import { z } from 'zod';

// A VM's address as its guest agent reports it (`qm guest cmd <vmid> network-get-interfaces`).
// The agent runs inside the guest: whatever it says is untrusted. Only a string that parses as an
// IP address (zod and net.isIP both) is ever used, and only in a URL built by vm_http_check.

/** One interface as QEMU's guest agent reports it; everything else it says is ignored. */
const agentInterfaces = z.array(
	z
		.object({
			name: z.string().optional(),
			'ip-addresses': z.array(z.object({ 'ip-address': z.unknown(), 'ip-address-type': z.unknown().optional() }).loose()).optional()
		})
		.loose()
);

const ipv4 = z.ipv4();
const ipv6 = z.ipv6();

/**
 * The addresses vm_http_check may fetch from the node, as patterns (Perl and JS alike) that
 * nomos-gate's allowlist carries too (gate-shapes.ts): an IPv4 outside 0/8, loopback 127/8 and
 * link-local 169.254/16; an IPv6 that starts with a non-zero hex digit (so not ::1, ::, an
 * IPv4-mapped ::ffff:7f00:1 or 0:…:1), no dotted tail, not link-local fe80::/10. Else a guest's
 * agent, or a stolen read key, could make the node fetch its own local services.
 */
export const AGENT_IPV4 = String.raw`(?!0|127\.|169\.254\.)[0-9]{1,3}(?:\.[0-9]{1,3}){3}`;
export const AGENT_IPV6 = String.raw`(?![fF][eE][89aAbB])[1-9A-Fa-f][0-9A-Fa-f:]*`;
const reachable4 = new RegExp(`^(?:${AGENT_IPV4})$`);
const reachable6 = new RegExp(`^(?:${AGENT_IPV6})$`);

/** Not an address another machine reaches the guest on (loopback, link-local, unspecified, mapped). */
function unreachable(ip: string, family: 4 | 6): boolean {
	return !(family === 4 ? reachable4 : reachable6).test(ip);
}

/** `lasting`: time will not change it (no agent configured); other refusals may pass on a later read (no DHCP lease yet, the agent starting). */
export type AgentAddress = { address: string } | { refuse: string; lasting?: true };

/**
 * The address to reach a VM on, from its agent's `network-get-interfaces` JSON: the first IPv4
 * that is neither loopback nor link-local, else the first such IPv6; anything that is not an IP
 * address is skipped (never echoed back). A refusal says why there is none.
 */
export function pickAgentAddress(vmid: string, json: string): AgentAddress {
	let data: unknown;
	try {
		data = JSON.parse(json);
	} catch {
		return { refuse: `VM ${vmid}'s guest agent did not answer with its interfaces (not JSON)` };
	}
	const parsed = agentInterfaces.safeParse(data);
	if (!parsed.success) return { refuse: `VM ${vmid}'s guest agent did not answer with its interfaces (unexpected shape)` };
	const found: { ip: string; family: 4 | 6 }[] = [];
	let skipped = 0;
	for (const iface of parsed.data) {
		if (iface.name === 'lo') continue;
		for (const a of iface['ip-addresses'] ?? []) {
			const raw = a['ip-address'];
			const family = typeof raw === 'string' ? isIP(raw) : 0;
			const valid = family === 4 ? ipv4.safeParse(raw).success : family === 6 ? ipv6.safeParse(raw).success : false;
			if (!valid) {
				skipped++;
				continue;
			}
			if (!unreachable(raw as string, family as 4 | 6)) found.push({ ip: raw as string, family: family as 4 | 6 });
		}
	}
	const pick = found.find((a) => a.family === 4) ?? found[0];
	if (pick) return { address: pick.ip };
	const junk = skipped ? `; ${skipped} reported value${skipped === 1 ? ' was' : 's were'} not an IP address` : '';
	return { refuse: `VM ${vmid}'s guest agent reports no usable address (only loopback or link-local)${junk}` };
}

/** How an IP goes into a URL: IPv6 in brackets. Throws for anything that is not an IP address. */
export function urlHost(ip: string): string {
	const family = isIP(ip);
	if (family === 0) throw new Error('not an IP address');
	if (unreachable(ip, family as 4 | 6)) throw new Error('a loopback, link-local or mapped address: not one the node fetches');
	return family === 4 ? ip : `[${ip}]`;
}

type Read = (argv: string[]) => Promise<{ exitCode: number | null; stdout: string; stderr: string }>;

/** Asks the agent (through `read`, one command on the host) and picks the address; a refusal names what is missing. */
export async function readAgentAddress(read: Read, vmid: string): Promise<AgentAddress> {
	const r = await read(['qm', 'guest', 'cmd', vmid, 'network-get-interfaces']);
	if (r.exitCode !== 0) {
		const why = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-1)[0]?.slice(0, 300) || `exit ${r.exitCode}`;
		if (/No QEMU guest agent configured/i.test(why)) return { refuse: `VM ${vmid} has no guest agent configured, so its address is unknown`, lasting: true };
		return { refuse: `VM ${vmid}'s guest agent does not answer (${why})` };
	}
	return pickAgentAddress(vmid, r.stdout);
}
