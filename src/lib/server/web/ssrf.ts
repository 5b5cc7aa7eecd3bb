import ipaddr from 'ipaddr.js';

type Cidr = [ipaddr.IPv4, number] | [ipaddr.IPv6, number];
const cidrs = (list: string[]): Cidr[] => list.map((c) => ipaddr.parseCIDR(c) as Cidr);

/** IPv4 blocks that are not the public internet (IANA special-purpose registry). */
const V4_FORBIDDEN = cidrs([
	'0.0.0.0/8', // "this network"
	'10.0.0.0/8', // RFC 1918
	'100.64.0.0/10', // CGNAT
	'127.0.0.0/8', // loopback
	'169.254.0.0/16', // link-local, incl. cloud metadata 169.254.169.254
	'172.16.0.0/12', // RFC 1918
	'192.0.0.0/24', // IETF protocol assignments
	'192.0.2.0/24', // TEST-NET-1
	'192.88.99.0/24', // 6to4 relay anycast
	'192.168.0.0/16', // RFC 1918
	'198.18.0.0/15', // benchmarking
	'198.51.100.0/24', // TEST-NET-2
	'203.0.113.0/24', // TEST-NET-3
	'224.0.0.0/4', // multicast
	'240.0.0.0/4' // reserved, incl. broadcast 255.255.255.255
]);

/** IPv6 forms that carry an IPv4 address in their last 32 bits: judge the embedded address. */
const V6_EMBEDDING_V4 = cidrs([
	'::ffff:0:0/96', // IPv4-mapped
	'::/96', // IPv4-compatible (deprecated); also covers :: and ::1
	'::ffff:0:0:0/96', // IPv4-translated (RFC 6145)
	'64:ff9b::/96' // NAT64 well-known prefix
]);

const V6_FORBIDDEN = cidrs([
	'::/128', // unspecified
	'::1/128', // loopback
	'64:ff9b:1::/48', // local-use NAT64
	'100::/64', // discard
	'2001::/32', // Teredo (embeds an obfuscated IPv4)
	'2001:db8::/32', // documentation
	'fc00::/7', // unique local
	'fe80::/10', // link-local
	'fec0::/10', // site-local (deprecated)
	'ff00::/8' // multicast
]);
const V6_GLOBAL = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const V6_6TO4 = ipaddr.parseCIDR('2002::/16') as [ipaddr.IPv6, number];

function forbiddenV4(ip: ipaddr.IPv4): boolean {
	return V4_FORBIDDEN.some((c) => ip.match(c)) || ip.range() !== 'unicast';
}

function forbiddenV6(ip: ipaddr.IPv6): boolean {
	const p = ip.parts;
	if (V6_EMBEDDING_V4.some((c) => ip.match(c))) {
		return forbiddenV4(new ipaddr.IPv4([p[6] >> 8, p[6] & 0xff, p[7] >> 8, p[7] & 0xff]));
	}
	if (ip.match(V6_6TO4)) {
		return forbiddenV4(new ipaddr.IPv4([p[1] >> 8, p[1] & 0xff, p[2] >> 8, p[2] & 0xff]));
	}
	if (V6_FORBIDDEN.some((c) => ip.match(c))) return true;
	// Only 2000::/3 is global unicast; within it, refuse every special range ipaddr.js knows.
	return !ip.match(V6_GLOBAL) || ip.range() !== 'unicast';
}

/**
 * True when `ip` must not be contacted by server-side fetches: loopback, private, CGNAT,
 * link-local/metadata, multicast, reserved, and IPv6 forms embedding such an IPv4
 * (mapped, compatible, NAT64, 6to4). Anything that does not parse as an IP is refused too.
 */
export function isForbiddenAddress(ip: string): boolean {
	const raw = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
	let addr: ipaddr.IPv4 | ipaddr.IPv6;
	try {
		addr = ipaddr.process(raw); // unwraps ::ffff:a.b.c.d; other embeddings are handled below
	} catch {
		return true;
	}
	return addr.kind() === 'ipv4' ? forbiddenV4(addr as ipaddr.IPv4) : forbiddenV6(addr as ipaddr.IPv6);
}
