// Does what Nomos said about an execution hold on the host? Each session's targets are touched by
// that session alone, one loop at a time, so between two of its loops a container must stay as
// the last word about it (the last terminal execution: its status, its read-back) says.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export type CtView = { exists: false } | { exists: true; status: string; lock: string | null; hostname: string; description: string | null };
export type LoopKind = 'set' | 'create' | 'destroy' | 'unlock' | 'start' | 'stop';

/** The Proxmox double's stored state of one container (the host's truth). */
export async function viewCt(stateDir: string, vmid: number): Promise<CtView> {
	const raw = await readFile(path.join(stateDir, 'cts', `${vmid}.json`), 'utf8').catch((e: NodeJS.ErrnoException) => {
		if (e.code === 'ENOENT') return null;
		throw e;
	});
	if (raw === null) return { exists: false };
	const ct = JSON.parse(raw) as { status: string; lock?: string; hostname: string; description?: string };
	return { exists: true, status: ct.status, lock: ct.lock ?? null, hostname: ct.hostname, description: ct.description ?? null };
}

export const describeView = (v: CtView) =>
	v.exists
		? `exists, ${v.status}${v.lock ? `, locked: ${v.lock}` : ''}, hostname ${v.hostname}${v.description ? `, description ${v.description}` : ''}`
		: 'does not exist';

export interface ExecutionFacts {
	id: string;
	status: string;
	leftovers: string | null;
}

/** What one terminal execution claims about its container; `holds` is null when it claims nothing checkable. */
export interface Claim {
	executionId: string;
	vmid: number;
	text: string;
	holds(v: CtView): boolean | null;
}

/** The read-back's own words ("CT 105 does not exist on strong", "CT 105 exists on strong, stopped, locked: create"). */
function leftoversClaim(text: string): ((v: CtView) => boolean) | null {
	if (/^CT \d+ does not exist/.test(text)) return (v) => !v.exists;
	const m = /^CT \d+ exists on \S+, ([^,]+)(?:, locked: (\S+))?/.exec(text);
	if (!m) return null;
	const [, status, lock] = m;
	return (v) => v.exists && v.status === status && v.lock === (lock ?? null);
}

/** Fields an execution of `kind` changes; an execution that says it did not run must leave them as they were. */
function unchanged(kind: LoopKind, before: CtView): (v: CtView) => boolean {
	return (v) => {
		if (v.exists !== before.exists) return false;
		if (!v.exists || !before.exists) return true;
		if (kind === 'set') return v.description === before.description;
		if (kind === 'unlock') return v.lock === before.lock;
		if (kind === 'stop' || kind === 'start') return v.status === before.status;
		return v.hostname === before.hostname;
	};
}

export function claimOf(e: ExecutionFacts, kind: LoopKind, tag: string, vmid: number, before: CtView): Claim {
	const said = `${e.status}${e.leftovers ? ` (left: ${e.leftovers})` : ''}`;
	const claim = (holds: (v: CtView) => boolean | null): Claim => ({ executionId: e.id, vmid, text: said, holds });
	if (e.status === 'succeeded') {
		if (kind === 'set') return claim((v) => v.exists && v.description === tag);
		if (kind === 'create') return claim((v) => v.exists && v.hostname === tag && !v.lock);
		if (kind === 'destroy') return claim((v) => !v.exists);
		if (kind === 'unlock') return claim((v) => v.exists && !v.lock);
		if (kind === 'start') return claim((v) => v.exists && v.status === 'running');
		return claim((v) => v.exists && v.status === 'stopped');
	}
	const readBack = e.leftovers ? leftoversClaim(e.leftovers) : null;
	if (readBack) {
		// A read-back says nothing of a description: for pct set, only what it names is checked.
		return claim(readBack);
	}
	// Never started (withdrawn, expired, denied) or refused before running: nothing may have changed.
	if (['cancelled', 'expired', 'denied', 'failed'].includes(e.status)) return claim(unchanged(kind, before));
	// Interrupted without a read-back: "it may have partly run" claims nothing checkable.
	return claim(() => null);
}

export interface Untruth {
	executionId: string;
	vmid: number;
	said: string;
	host: string;
	when: string;
}

/** The last word about each container and every time the host disagreed with it (once per execution). */
export class TruthLedger {
	readonly untruths: Untruth[] = [];
	readonly #last = new Map<number, Claim>();
	readonly #flagged = new Set<string>();

	constructor(private readonly stateDir: string) {}

	/** Records `claim` as the last word about its container and checks it now. */
	async settle(claim: Claim, when: string): Promise<void> {
		this.#last.set(claim.vmid, claim);
		await this.check(claim.vmid, when);
	}

	/** Checks the last word about `vmid` against the host now. */
	async check(vmid: number, when: string): Promise<CtView> {
		const view = await viewCt(this.stateDir, vmid);
		const claim = this.#last.get(vmid);
		if (claim && claim.holds(view) === false && !this.#flagged.has(claim.executionId)) {
			this.#flagged.add(claim.executionId);
			this.untruths.push({ executionId: claim.executionId, vmid, said: claim.text, host: describeView(view), when });
		}
		return view;
	}

	async checkAll(when: string): Promise<void> {
		for (const vmid of this.#last.keys()) await this.check(vmid, when);
	}
}
