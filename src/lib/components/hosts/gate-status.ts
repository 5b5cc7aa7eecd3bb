/** A hosts.checkGate answer in words for the host card; `ok` only when the gate fits this Nomos. */
export function gateStatus(r: { state: 'gated'; version: string; role: string; problem: string | null } | { state: 'shell' | 'unknown'; problem: string }): {
	ok: boolean;
	text: string;
} {
	if (r.state === 'gated')
		return r.problem
			? { ok: false, text: `Gated (catalogue ${r.version}, role ${r.role}), but ${r.problem}.` }
			: { ok: true, text: `Gated: catalogue ${r.version} matches this Nomos, role ${r.role}.` };
	if (r.state === 'shell') return { ok: false, text: `Warning: this key still reaches a full shell — ${r.problem}.` };
	return { ok: false, text: `Gate unknown: ${r.problem}.` };
}
