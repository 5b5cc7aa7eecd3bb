import type { Client } from 'ssh2';
import { execArgv, type ExecResult } from './client';

/** What a host's key reaches: the gate (with its catalogue version, role and script revision), a full shell, or no answer. */
export type GateAnswer = { state: 'gated'; version: string; role: string; revision: number } | { state: 'shell' } | { state: 'unknown'; detail: string };

/**
 * The revision of deploy/nomos-gate this Nomos ships (its `$REVISION`; a test keeps them equal).
 * A gate before revision 2 said none: it is revision 1, and lacks the container check of
 * pct_exec and pct_push.
 */
export const GATE_REVISION = 2;

/** The request every gate answers for both keys (deploy/nomos-gate). */
export const GATE_VERSION_ARGV: readonly string[] = ['nomos-gate', '--version'];
/** An off-catalogue command: a gate refuses it (exit 126), a full shell runs it. */
export const GATE_PROBE_ARGV: readonly string[] = ['id', '-u'];

const VERSION = /^nomos-gate catalogue ([0-9a-f]+) role (read|mutate)(?: revision ([0-9]+))?$/m;

type GateVersion = { version: string; role: 'read' | 'mutate'; revision: number };

/** The gate's answer to GATE_VERSION_ARGV, or null: no gate answered (a full shell says "command not found"). */
export function gateVersionOf(r: Pick<ExecResult, 'exitCode' | 'stdout'>): GateVersion | null {
	const m = r.exitCode === 0 ? VERSION.exec(r.stdout) : null;
	return m ? { version: m[1], role: m[2] as 'read' | 'mutate', revision: m[3] ? Number(m[3]) : 1 } : null;
}

/** An older (or newer) gate by name, with what to do; null when it is the script and carries the catalogue this Nomos needs. */
export function versionProblem(host: string, gate: Pick<GateVersion, 'version' | 'revision'>, needed: string): string | null {
	if (gate.revision < GATE_REVISION)
		return `nomos-gate on ${host} is revision ${gate.revision}, Nomos needs ${GATE_REVISION}: copy deploy/nomos-gate of this Nomos to /usr/local/sbin/nomos-gate on ${host}`;
	return gate.version === needed
		? null
		: `nomos-gate on ${host} has catalogue ${gate.version}, Nomos needs ${needed}: copy deploy/nomos-gate.allow of this Nomos to /usr/local/etc/nomos-gate.allow on ${host}`;
}

/**
 * What keeps the key of `role` from running what Nomos sends with it: a mutation key gated as a
 * read key (every change would be refused), or a gate of another catalogue. Null: it fits, or
 * no gate answered (an ungated key works as before; the host card warns, hosts/gate.ts).
 */
export function runProblem(host: string, gate: GateVersion | null, needed: string, role: 'read' | 'mutate'): string | null {
	if (!gate) return null;
	if (role === 'mutate' && gate.role !== 'mutate') return `the mutation key of ${host} is gated as a ${gate.role} key: fix its --role in authorized_keys`;
	return versionProblem(host, gate, needed);
}

/**
 * Asks what the key behind `client` reaches: its gate's version line, else whether an
 * off-catalogue command runs (a full shell) or is refused. No clear answer is `unknown`.
 */
export async function readGate(client: Client, timeoutMs = 10_000): Promise<GateAnswer> {
	try {
		const v = await execArgv(client, GATE_VERSION_ARGV, { timeoutMs });
		const gate = gateVersionOf(v);
		if (gate) {
			const probe = await execArgv(client, GATE_PROBE_ARGV, { timeoutMs });
			if (probe.exitCode === 126 && /nomos-gate: refused/.test(probe.stderr)) return { state: 'gated', ...gate };
			return { state: 'unknown', detail: `the gate answered its version but did not refuse \`${GATE_PROBE_ARGV.join(' ')}\`` };
		}
		const probe = await execArgv(client, GATE_PROBE_ARGV, { timeoutMs });
		if (probe.exitCode === 0 && /^[0-9]+\s*$/.test(probe.stdout)) return { state: 'shell' };
		return { state: 'unknown', detail: (probe.stderr || v.stderr).trim().slice(0, 300) || `exit ${String(probe.exitCode)}` };
	} catch (e) {
		return { state: 'unknown', detail: (e as Error).message };
	}
}

/** What is wrong with a host's gate for this Nomos, by name (null: nothing), for the host card and before a run. */
export function gateProblem(host: string, a: GateAnswer, needed: string, role: 'read' | 'mutate'): string | null {
	if (a.state === 'shell')
		return `the ${role} key of ${host} still reaches a full shell: install nomos-gate as its forced command (Settings → Hosts, Node gate)`;
	if (a.state === 'unknown') return `could not tell whether the ${role} key of ${host} is gated: ${a.detail}`;
	if (a.role !== role) return `the ${role} key of ${host} is gated as a ${a.role} key: fix its --role in authorized_keys`;
	return versionProblem(host, a, needed);
}
