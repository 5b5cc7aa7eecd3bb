// What can be known before approval is checked before approval. A request the host says cannot
// run as asked — a disk that would shrink, a running guest to destroy, a guest that is not there —
// is recorded with `cannot_run` and is never approved (setDecision refuses it, whatever the route);
// the card and the agent say why. Only the host's own definite answer (its words and exit status)
// counts: a host that does not answer within NOMOS_BEFORE_APPROVAL_S makes the check `unknown`,
// the card says "could not check before approval" and approval stays possible, because the runner
// reads the target again right before it runs (runner.ts). Guests on another node and cluster
// members that are down are refused earlier, when the request is prepared (cluster/route.ts).
import type { Client } from 'ssh2';
import { sql } from '../db/index';
import { getHostByName } from '../db/queries/hosts';
import { env } from '../env';
import { execArgv, type ExecResult } from '../ssh/client';
import { lease } from '../ssh/pool';
import type { BeforeApproval } from '../../types/executions';
import type { Precondition } from '../proxmox/actions';
import { KERNEL } from '../proxmox/health-parse';
import { backupChecks } from '../proxmox/backup-facts';
import { uncontained } from '../proxmox/ct-contained';

/** What the checks need of a prepared request. */
export type Checkable = { action: string; hostName: string; vmid?: string; params: Record<string, unknown>; preconditions: Precondition[] };
/** What the checks need of the host: whether its keys are gated (its last stored gate check). */
type HostFacts = { gated: boolean };

/** One read on the host and how its answer is judged: a reason it cannot run, null when it can, `unknown`, or a fact for the approver. */
type Judged = { cannot: string } | { unknown: string } | { note: string } | null;
interface Check {
	argv: string[];
	judge: (r: ExecResult) => Judged;
	/** Not run when the reads before it made it needless (a vzdump's disk use once its last backup is known). */
	skip?: () => boolean;
}

/**
 * apt_upgrade on a node: a kernel among the pending updates (as of the node's last refresh) means
 * a reboot afterwards, said on the card before approval. A list that cannot be read says that
 * whether a reboot follows is unknown (no note would read as "no reboot").
 */
export function rebootNote(r: ExecResult): { note: string } | null {
	const unknown = (why: string) => ({ note: `whether a reboot is needed afterwards is unknown: the pending updates could not be read (${why})` });
	if (r.timedOut) return unknown('no answer in time');
	if (r.exitCode !== 0) return unknown((r.stderr.trim().split('\n')[0] ?? '').slice(0, 200) || `exit ${r.exitCode}`);
	try {
		const list: unknown = JSON.parse(r.stdout);
		if (!Array.isArray(list)) return unknown('not a list');
		const pkgs = list.map((x) => (x && typeof x === 'object' ? (x as Record<string, unknown>).Package : undefined));
		const kernels = pkgs.filter((p): p is string => typeof p === 'string' && KERNEL.test(p));
		return kernels.length ? { note: `reboot needed afterwards: a new kernel (${kernels.join(', ')}) is among the ${pkgs.length} pending updates` } : null;
	} catch {
		return unknown('not JSON');
	}
}

const GIB: Record<string, number> = { K: 1 / 1024 ** 2, M: 1 / 1024, G: 1, T: 1024 };

/** `Configuration file 'nodes/<node>/lxc/<id>.conf' does not exist`: how pct and qm say a guest is not on this node (exit 2). */
const NO_SUCH_GUEST = /Configuration file '[^']*\/(?:lxc|qemu-server)\/\d+\.conf' does not exist/;

/** The host's own words for "no such guest", else null (any other failure says nothing about the guest). */
function absent(r: ExecResult, what: string, host: string, tool: string): { cannot: string } | null {
	const said = NO_SUCH_GUEST.exec(r.stderr) ?? NO_SUCH_GUEST.exec(r.stdout);
	return r.exitCode !== null && r.exitCode !== 0 && said ? { cannot: `${what} does not exist on ${host} (${tool}: ${said[0]})` } : null;
}

const failed = (r: ExecResult, tool: string) => ({
	unknown: `${tool} ${r.timedOut ? 'did not answer in time' : `exited with ${r.exitCode ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(0, 200) || 'no output'}`}`
});

/**
 * `size` compared with the disk's line in `pct config` / `qm config`: the reason a resize to an
 * absolute size cannot grow it, null when it grows, `unknown` when the size cannot be read.
 */
export function shrinkRefusal(
	config: string,
	g: { what: 'CT' | 'VM'; vmid: string; disk: string; size: string; action: string }
): { cannot: string } | { unknown: string } | null {
	if (g.size.startsWith('+')) return null;
	const line = config.split('\n').find((l) => l.startsWith(`${g.disk}: `));
	if (!line) return { cannot: `${g.what} ${g.vmid} has no disk ${g.disk}` };
	const m = /(?:^|,)size=(\d+(?:\.\d+)?)([KMGT])/.exec(line.slice(g.disk.length + 2));
	if (!m) return { unknown: `the size of ${g.what} ${g.vmid} ${g.disk} cannot be read from its config` };
	const current = Number(m[1]) * GIB[m[2]];
	const wanted = Number(g.size.slice(0, -1)) * (GIB[g.size.slice(-1)] ?? 1);
	if (wanted > current) return null;
	const verb = wanted < current ? 'shrink it' : 'change nothing';
	return {
		cannot: `${g.what} ${g.vmid} ${g.disk} is ${m[1]}${m[2]} now; resizing it to ${g.size} would ${verb} (${g.action} only grows a disk; Proxmox cannot shrink one)`
	};
}

/** The reads a request needs before approval: none for most actions. */
export function checksFor(p: Checkable, host: HostFacts = { gated: false }): Check[] {
	const checks: Check[] = [];
	for (const c of p.preconditions) {
		if ((c.kind === 'ct-disk-grows' || c.kind === 'vm-disk-grows') && !c.size.startsWith('+')) {
			const [what, tool] = c.kind === 'ct-disk-grows' ? (['CT', 'pct'] as const) : (['VM', 'qm'] as const);
			checks.push({
				argv: [tool, 'config', c.vmid],
				judge: (r) => {
					if (r.exitCode === 0 && !r.timedOut) return shrinkRefusal(r.stdout, { what, vmid: c.vmid, disk: c.disk, size: c.size, action: p.action });
					return absent(r, `${what} ${c.vmid}`, p.hostName, `${tool} config`) ?? failed(r, `${tool} config ${c.vmid}`);
				}
			});
		}
	}
	for (const c of p.preconditions) {
		if (c.kind !== 'ct-contained') continue;
		checks.push({
			argv: ['pct', 'config', c.vmid],
			judge: (r) => {
				if (r.exitCode === 0 && !r.timedOut) {
					const why = uncontained(c.vmid, r.stdout);
					// A gated node refuses it at run time: say so now. A full-shell key runs it: the card says what it reaches.
					if (!why) return null;
					return host.gated ? { cannot: `${why}: nomos-gate on ${p.hostName} refuses ${p.action} in it` } : { note: why };
				}
				return absent(r, `CT ${c.vmid}`, p.hostName, 'pct config') ?? failed(r, `pct config ${c.vmid}`);
			}
		});
	}
	// Backups (issue #45): a prune's set against its live dry run, a delete's volume, a vzdump's room.
	checks.push(...backupChecks(p.preconditions));
	const vmVmid = typeof p.params.vmid === 'string' || typeof p.params.vmid === 'number' ? String(p.params.vmid) : undefined;
	const destroyed =
		p.action === 'pct_destroy'
			? { what: 'CT', tool: 'pct', stop: 'pct_stop', vmid: p.vmid }
			: p.action === 'vm_destroy'
				? { what: 'VM', tool: 'qm', stop: 'vm_shutdown or qm_stop', vmid: vmVmid }
				: null;
	if (p.action === 'apt_upgrade' && !p.vmid)
		checks.push({ argv: ['pvesh', 'get', '/nodes/localhost/apt/update', '--output-format', 'json'], judge: rebootNote });
	if (destroyed?.vmid) {
		const { what, tool, stop, vmid } = destroyed;
		checks.push({
			argv: [tool, 'status', vmid],
			judge: (r) => {
				if (r.exitCode !== 0 || r.timedOut) return absent(r, `${what} ${vmid}`, p.hostName, `${tool} status`) ?? failed(r, `${tool} status ${vmid}`);
				const status = /^status:\s*(\S+)/m.exec(r.stdout)?.[1];
				if (status === 'running')
					return {
						cannot: `${what} ${vmid} is running: a running guest is not destroyed (stop it first with ${stop}, then ask again, or propose a plan that stops it and then destroys it)`
					};
				if (status === 'stopped') return null;
				return { unknown: `${tool} status ${vmid} said ${JSON.stringify(r.stdout.trim().slice(0, 100))}` };
			}
		});
	}
	return checks;
}

/** Runs `checks` on one connection, within `ms` in all; the first definite refusal wins, else the first unknown, else the first note. */
async function runChecks(client: Client, checks: Check[], signal: AbortSignal, ms: number): Promise<Judged> {
	let unknown: { unknown: string } | null = null;
	let note: { note: string } | null = null;
	for (const c of checks) {
		if (c.skip?.()) continue;
		const r = await execArgv(client, c.argv, { timeoutMs: ms, signal, group: true });
		const v = c.judge(r);
		if (v && 'cannot' in v) return v;
		if (v && 'unknown' in v) unknown ??= v;
		if (v && 'note' in v) note ??= v;
	}
	return unknown ?? note;
}

/**
 * Checks a prepared mutation on its host before anyone is asked to approve it. Null when there is
 * nothing to check, or the host said it can run; `cannot_run` on the host's definite answer;
 * `unknown` when it did not answer within the budget (or not with anything that can be read).
 * Never throws, never waits past the budget (a turn waits for it).
 */
export async function checkBeforeApproval(p: Checkable, opts: { budgetMs?: number } = {}): Promise<BeforeApproval | null> {
	if (!checksFor(p).length) return null;
	const budgetMs = opts.budgetMs ?? env().NOMOS_BEFORE_APPROVAL_S * 1000;
	const at = () => new Date().toISOString();
	const host = await getHostByName(sql(), p.hostName);
	const checks = checksFor(p, { gated: host?.gateState === 'gated' });
	if (!host?.hostKeyFingerprint) return { outcome: 'unknown', why: `host ${p.hostName} is not configured with a pinned key`, checkedAt: at() };
	const stop = new AbortController();
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), budgetMs)));
	let held: Awaited<ReturnType<typeof lease>> | undefined;
	const work = (async () => {
		held = await lease(host, budgetMs);
		return runChecks(held.client, checks, stop.signal, budgetMs);
	})();
	try {
		const v = await Promise.race([work, late]);
		if (v === 'late') {
			stop.abort();
			return { outcome: 'unknown', why: `${host.name} did not answer within ${Math.round(budgetMs / 1000)} s`, checkedAt: at() };
		}
		if (!v) return null;
		if ('note' in v) return { outcome: 'note', why: v.note, checkedAt: at() };
		return 'cannot' in v ? { outcome: 'cannot_run', why: v.cannot, checkedAt: at() } : { outcome: 'unknown', why: v.unknown, checkedAt: at() };
	} catch (e) {
		return { outcome: 'unknown', why: `${host.name} could not be reached: ${(e as Error).message}`, checkedAt: at() };
	} finally {
		clearTimeout(timer);
		// A late read or connect ends by its own timeout; its connection goes back to the pool then.
		void work.then(
			() => held?.release(),
			() => held?.release(true)
		);
	}
}

/** The guests (`<host>/<vmid>`) a prepared step acts on or makes: its container, params.vmid, params.newid. */
function guestsOf(p: Checkable): string[] {
	const ids = [p.vmid, p.params.vmid, p.params.newid].filter((v): v is string | number => typeof v === 'string' || typeof v === 'number');
	return ids.map((v) => `${p.hostName}/${String(v)}`);
}

/**
 * The before-approval checks of a plan's steps, in order. A step is checked only when no earlier
 * mutation of the plan acts on the same guest: "destroy CT 105" after "stop CT 105" is fine though
 * 105 runs now, and a step on a guest an earlier step creates cannot be read yet. Those are checked
 * by the runner when the plan reaches them. Entry i is step i's outcome (null: nothing to say).
 */
export async function checkPlanBeforeApproval(steps: Array<Checkable & { classification: string }>): Promise<Array<BeforeApproval | null>> {
	const touched = new Set<string>();
	const out: Array<BeforeApproval | null> = [];
	for (const s of steps) {
		const mine = guestsOf(s);
		out.push(s.classification === 'read_only' || mine.some((g) => touched.has(g)) ? null : await checkBeforeApproval(s));
		if (s.classification !== 'read_only') mine.forEach((g) => touched.add(g));
	}
	return out;
}

/** How the card, the agent and a refused approval say it. */
export function beforeApprovalText(b: BeforeApproval): string {
	if (b.outcome === 'note') return b.why;
	return b.outcome === 'cannot_run' ? `cannot run now: ${b.why}` : `could not check before approval: ${b.why}`;
}

/** Why an approval of such a request is refused, by any route (tRPC, REST, typed assent). */
export function cannotRunMessage(why: string): string {
	return `This execution cannot run now: ${why}. It cannot be approved; deny it, or edit it into something that can run.`;
}
