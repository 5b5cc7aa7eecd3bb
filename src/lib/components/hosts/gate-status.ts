import type { GateState } from '$lib/types/gate';

/** A host's gate check (hosts.checkGate, or as stored on the host) in words for its card; `ok` only when every key is gated as it should be. */
export function gateStatus(r: { state: GateState; problem: string | null; version?: string | null }): { ok: boolean; text: string } {
	switch (r.state) {
		case 'gated':
			return r.problem
				? { ok: false, text: `Gated, but ${r.problem}.` }
				: { ok: true, text: r.version ? `Gated: catalogue ${r.version} matches this Nomos.` : 'Gated: its keys run only the catalogue.' };
		case 'shell':
			return { ok: false, text: `Warning: ${r.problem ?? 'a key still reaches a full shell'}.` };
		case 'old_version':
			return { ok: false, text: `Gate out of date: ${r.problem}.` };
		case 'wrong_role':
			return { ok: false, text: `Gate set up for the wrong key: ${r.problem}.` };
		default:
			return { ok: false, text: `Gate unknown: ${r.problem ?? 'no answer'}.` };
	}
}
