// What an action is (its definition's types) and the small pieces every family builds steps from.
import type { z } from 'zod';
import type { Classification } from '../../db/schema';
import type { Retention } from '../../../schemas/backup-params';
import { createHash } from 'node:crypto';

/** Where an action runs: on the host itself, or in/on one container of that host. */
export type Scope = 'host' | 'ct' | 'host-or-ct';

/**
 * One command of an execution: a label and its argv (quoted later, in one place). `stdin` is
 * written to the command's standard input over the SSH channel (never onto a command line).
 * `verify` makes it a read-back: it succeeds only when some line of its output starts with the
 * word `expect` — for tools whose exit code does not tell (pveam download, pct push).
 */
export type Step = { label: string; argv: string[]; timeoutMs: number; stdin?: string; verify?: Verify };
export type Verify = {
	expect: string;
	failure: string;
	/** match `<field>: <expect>` lines instead of a line's first word */
	field?: string;
	/** the output is JSON (`pvesh … --output-format json`): the array item whose `id` is `json.id` (or the object itself), its `json.key` */
	json?: { id?: string; key: string };
	/** the output is a `pct|qm listsnapshot` tree: some entry is `` `-> <expect> `` */
	snapshot?: true;
	/**
	 * `<key>: <value>` lines of a config (`pct config`, `qm config`): each key's value holds the
	 * given item among its comma-separated parts (`rootfs: local-lvm:vm-101-disk-0,size=16G` holds
	 * `size=16G`); null: the config has no such line (`lock` after an unlock). `expect` names it.
	 */
	fields?: Record<string, string | null>;
	/** The guest must be gone: only pct/qm's own "Configuration file … does not exist" verifies it, an exit 0 is still failing, any other failure is inconclusive. */
	gone?: true;
	/** Judged by its output whatever its exit status (`systemctl is-active` exits 3 when inactive). */
	anyExit?: true;
	/** The output is a JSON array that must be empty (`/nodes/<n>/apt/update` after an upgrade: nothing pending). */
	none?: true;
	/**
	 * The output is a storage's backup list (`…/content --content backup`, JSON): `gone`, none of
	 * these volids is listed; `newOf`, a volume of this guest is listed that `before` did not hold
	 * (proxmox/backup-facts.ts judges it). A list that does not parse is no answer.
	 */
	backups?: { gone?: string[]; newOf?: { vmid: string; before: string[] } };
	/** The output is a backup job (`/cluster/backup/<id>`, JSON): its `prune-backups` is exactly this retention (`keep-last=3,…`). */
	retention?: string;
};

/**
 * How an action is finished when the process running it stopped part-way (executions/resume.ts):
 * only for an action whose effect can be read back and that is safe to run again when that
 * effect is missing. `state` reads it (exit 0 and `verify` matched: in place; exit 0 otherwise:
 * missing; no answer or another exit: unknown, and then it is not resumed); `config` is read
 * first, and a `lock:` there (a task of the host's own half done) also leaves it unresumed. The
 * same read, after the command ran again, verifies it.
 */
export type Resume = { state: Step & { verify: Verify }; config: string[] };

/** What must hold right before running, re-read on the host (staleness check). */
export type Precondition =
	| { kind: 'ct-absent'; vmid: string }
	| { kind: 'ct-status'; vmid: string; status: 'running' | 'stopped' }
	| { kind: 'ct-exists'; vmid: string }
	/** `pct config` shows the CT contained: unprivileged, no bind mount, device or raw lxc key (ct-contained.ts; nomos-gate checks the same). */
	| { kind: 'ct-contained'; vmid: string }
	/** `pct config` shows `disk` smaller than `size` (an absolute `<n>G`; `+<n>G` always grows). */
	| { kind: 'ct-disk-grows'; vmid: string; disk: string; size: string }
	| { kind: 'vm-exists'; vmid: string }
	| { kind: 'vm-status'; vmid: string; status: 'running' | 'stopped' }
	/**
	 * The VM's guest agent reports an address to reach it on (guest-agent.ts readAgentAddress): the
	 * runner hands it to the steps as `ctx.address` (vm_http_check); no agent, a silent one or no
	 * usable address refuses the run.
	 */
	| { kind: 'vm-agent-address'; vmid: string }
	/** No guest (VM or CT) has this id: the id space is shared. */
	| { kind: 'vm-absent'; vmid: string }
	/** `qm config` shows `disk` smaller than `size`, as ct-disk-grows. */
	| { kind: 'vm-disk-grows'; vmid: string; disk: string; size: string }
	/**
	 * The migration pre-check (proxmox/migrate.ts): the target node is another member, online and
	 * quorate, has the memory for a running guest and every storage the guest's disks are on; a
	 * running VM goes online, and online with local disks only with `withLocalDisks`.
	 */
	| { kind: 'migrate-target'; guest: 'ct' | 'vm'; vmid: string; node: string; online?: boolean; withLocalDisks?: boolean }
	/** Backups (proxmox/backup-facts.ts): the live dry run of this prune marks exactly `remove` for removal. */
	| { kind: 'prune-set'; storage: string; vmid: string; keep: Retention; remove: string[] }
	/** The backup volume is listed on its storage and not protected. */
	| { kind: 'backup-deletable'; storage: string; vmid: string; volid: string }
	/**
	 * The storage has room for a backup of the guest: its free space not below the guest's last
	 * backup there (else refused), or with none there, not below what its disk uses now (else a
	 * warning; proxmox/backup-facts.ts). Leaves the guest's volumes in `backupsBefore`.
	 */
	| { kind: 'backup-space'; storage: string; vmid: string };

/**
 * What the steps are built from besides the params: the resolved container (ct-scoped actions),
 * and what a reading precondition found on the host right before the run (`vm-agent-address`;
 * `backup-space`: the guest's backup volumes before, for vzdump's read-back).
 */
export type StepContext = { vmid?: string; address?: string; backupsBefore?: string[] };

export interface ActionDef<P extends z.ZodType = z.ZodType> {
	classification: Classification;
	description: string;
	scope: Scope;
	params: P;
	/** The fixed command template; `vmid` is the resolved container for ct-scoped actions. */
	steps(p: z.output<P>, ctx: StepContext): Step[];
	preconditions?(p: z.output<P>, ctx: StepContext): Precondition[];
	/** Refresh the inventory afterwards. */
	changesInventory?: boolean;
	/** Loses nothing but cannot be undone (a grown disk never shrinks): approved like a destructive action. */
	irreversible?: true;
	/** Can stop more than itself (the cluster stack: quorum, an HA fence): approved like a destructive action. */
	disruptive?: true;
	/** A one-line result for a success (default: the last lines of output). */
	summary?(p: z.output<P>, ctx: StepContext): string;
	/** Repeatable: a live worker finishes it after its process stopped (see `Resume`). */
	resume?(p: z.output<P>, ctx: StepContext): Resume;
	/**
	 * A mutation's independent read-back after its command exited 0 (executions/verdict.ts): reads
	 * with a `verify`, judged verified, still failing or inconclusive. Used when no `verify` step of
	 * its own and no health check (executions/safeguards.ts) covers it; none (or none for these
	 * params): only the exit status is known, and the verdict is inconclusive.
	 */
	readBack?(p: z.output<P>, ctx: StepContext): Step[];
	/**
	 * A read's result for the model from its steps' full stdout (in order): a few lines instead of
	 * raw output. Throws when the output does not parse: the read then fails (unknown, with why).
	 */
	digest?(p: z.output<P>, stdout: string[]): string;
	/**
	 * The host task a failure of the command leaves behind (`vzstart` for `pct start`): when the
	 * command fails, the runner reads that task's log and adds its decisive line to the error
	 * (executions/phases/task-cause.ts).
	 */
	failedTask?(p: z.output<P>, ctx: StepContext): { type: string; vmid: string };
}

export const MIN = 60_000;
export const def = <P extends z.ZodType>(d: ActionDef<P>) => d;

export const inCt = (v: string | undefined, argv: string[]) => (v ? ['pct', 'exec', v, '--', ...argv] : argv);
export const running = (vmid: string): Precondition[] => [{ kind: 'ct-status', vmid, status: 'running' }];
/** Running, and a container a command or file in cannot reach the node from (pct_exec, pct_push). */
export const runningContained = (vmid: string): Precondition[] => [...running(vmid), { kind: 'ct-contained', vmid }];
export const exists = (vmid: string): Precondition[] => [{ kind: 'ct-exists', vmid }];
export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
export const vmExists = (vmid: string): Precondition[] => [{ kind: 'vm-exists', vmid }];
export const vmRunning = (vmid: string): Precondition[] => [{ kind: 'vm-status', vmid, status: 'running' }];
