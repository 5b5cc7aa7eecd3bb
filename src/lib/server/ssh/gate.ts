import type { Client } from 'ssh2';
import { execArgv } from './client';

/** What a host's key reaches: the gate (with its catalogue version and role), a full shell, or no answer. */
export type GateAnswer = { state: 'gated'; version: string; role: string } | { state: 'shell' } | { state: 'unknown'; detail: string };

/** The request every gate answers for both keys (deploy/nomos-gate). */
export const GATE_VERSION_ARGV: readonly string[] = ['nomos-gate', '--version'];
/** An off-catalogue command: a gate refuses it (exit 126), a full shell runs it. */
export const GATE_PROBE_ARGV: readonly string[] = ['id', '-u'];

const VERSION = /^nomos-gate catalogue ([0-9a-f]+) role (read|mutate)$/m;

/**
 * Asks what the key behind `client` reaches: its gate's version line, else whether an
 * off-catalogue command runs (a full shell) or is refused. No clear answer is `unknown`.
 */
export async function readGate(client: Client, timeoutMs = 10_000): Promise<GateAnswer> {
	try {
		const v = await execArgv(client, GATE_VERSION_ARGV, { timeoutMs });
		const m = v.exitCode === 0 ? VERSION.exec(v.stdout) : null;
		if (m) {
			const probe = await execArgv(client, GATE_PROBE_ARGV, { timeoutMs });
			if (probe.exitCode === 126 && /nomos-gate: refused/.test(probe.stderr)) return { state: 'gated', version: m[1], role: m[2] };
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
	if (a.state === 'shell') return `the ${role} key of ${host} reaches a full shell: install nomos-gate as its forced command (Settings → Hosts)`;
	if (a.state === 'unknown') return `could not tell whether the ${role} key of ${host} is gated: ${a.detail}`;
	if (a.role !== role) return `the ${role} key of ${host} is gated as a ${a.role} key: fix its --role in authorized_keys`;
	if (a.version !== needed)
		return `the gate on ${host} carries catalogue ${a.version}, this Nomos needs ${needed}: copy deploy/nomos-gate.allow of this version to the host`;
	return null;
}
