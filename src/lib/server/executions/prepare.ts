import { createHash } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../db/index';
import { getHostByName, listHosts, type Host } from '../db/queries/hosts';
import { resolveEntity } from '../db/queries/entities';
import { ACTIONS, ACTION_NAMES, isActionName, paramFields, type ActionName, type Precondition, type Scope, type Step } from '../proxmox/actions';
import { vmid as vmidSchema } from '../../schemas/param-fields';
import { migrationProblems, readMigrationFacts } from '../proxmox/migrate';
import { execArgv } from '../ssh/client';
import { withHost } from '../ssh/pool';
import { toCommand } from '../ssh/quote';
import type { Classification } from '../db/schema';
import { clusterRefusal } from '../cluster/route';
import { guestOf } from './safeguards';

/** What the agent (or a plan step) asks for, before validation. */
export const executionRequest = z
	.object({
		target: z.string().trim().min(1).max(200).describe("a host ('strong') or a container ('lxc:strong/101', '101', 'caddy')"),
		action: z.string().min(1).max(64),
		params: z.record(z.string(), z.unknown()).default({}),
		reason: z.string().max(2000).default('')
	})
	.strict();
export type ExecutionRequest = z.input<typeof executionRequest>;

/** A validated, resolved execution: exactly what an approval names and the worker runs. */
export interface PreparedExecution {
	action: ActionName;
	classification: Classification;
	hostName: string;
	vmid?: string;
	/** Normalised: `host:<name>` or `lxc:<host>/<vmid>`. */
	target: string;
	params: Record<string, unknown>;
	steps: Step[];
	preconditions: Precondition[];
	commandPreview: string;
	hash: string;
	reason: string;
}

export type PrepareError = { error: string; hint?: string };

/**
 * One SSH exec request carries a whole command, which the host runs as `sh -c <command>`: stay
 * well below what servers accept (OpenSSH: 256 KiB packets, 128 KiB for one exec argument).
 */
export const MAX_COMMAND_BYTES = 32_768;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** The issues, bounded: a hostile input (10,000 unknown keys, a 1 MB key) must not become a 1 MB error for the model. */
function describeIssues(e: z.ZodError): string {
	const shown = e.issues.slice(0, 10).map((i) => clip(i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message, 300));
	const more = e.issues.length - shown.length;
	return shown.join('; ') + (more > 0 ? `; …and ${more} more` : '');
}

/** Stable JSON (sorted keys) so equal requests hash equally. */
export function canonical(v: unknown): string {
	if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
	if (v && typeof v === 'object') {
		return `{${Object.keys(v)
			.filter((k) => (v as Record<string, unknown>)[k] !== undefined)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
			.join(',')}}`;
	}
	return JSON.stringify(v);
}

export function executionHash(action: string, target: string, params: Record<string, unknown>): string {
	return createHash('sha256').update(canonical({ action, target, params })).digest('hex');
}

type ResolvedTarget = { host: Host; vmid?: string } | PrepareError;

async function resolveTarget(raw: string): Promise<ResolvedTarget> {
	const t = raw.trim();
	const hostsHint = async () => `hosts: ${(await listHosts(sql())).map((h) => h.name).join(', ') || '(none configured)'}`;
	const bare = t.replace(/^(host|node):/i, '');
	const asHost = await getHostByName(sql(), bare);
	if (asHost && !/^(lxc|ct):/i.test(t)) return { host: asHost };

	const m = /^(?:(?:lxc|ct):)?([a-zA-Z0-9][a-zA-Z0-9.-]*)\/([1-9][0-9]{2,8})$/.exec(t);
	if (m) {
		const host = await getHostByName(sql(), m[1]);
		if (!host) return { error: `unknown host '${m[1]}' in target '${t}'`, hint: await hostsHint() };
		return { host, vmid: m[2] };
	}
	const ref = /^(lxc|ct):/i.test(t) ? `lxc:${t.replace(/^(lxc|ct):/i, '')}` : `lxc:${t}`;
	const found = await resolveEntity(sql(), ref);
	if (found.ok) {
		const host = found.entity.hostName ? await getHostByName(sql(), found.entity.hostName) : null;
		const attrVmid = (found.entity.attributes as { vmid?: unknown }).vmid;
		const vmid = typeof attrVmid === 'number' || typeof attrVmid === 'string' ? String(attrVmid) : (found.entity.externalId.split('/')[1] ?? '');
		if (!host) return { error: `container '${t}' is on host '${found.entity.hostName}', which is not configured`, hint: await hostsHint() };
		return { host, vmid };
	}
	if (!found.ok && found.reason === 'ambiguous') {
		return { error: `target '${t}' matches several containers`, hint: `use one of: ${found.candidates.map((c) => `lxc:${c.externalId}`).join(', ')}` };
	}
	return {
		error: `unknown target '${t}'`,
		hint: `a host name or a container (lxc:<host>/<vmid>, a vmid or a name); ${await hostsHint()}; list_lxcs shows the containers`
	};
}

/** Where a request runs: its host, its container (none for a host), and the target as an execution stores it. */
export type Placement = { host: Host; vmid?: string; target: string };

/**
 * Resolves a request's target for an action of this scope (`action` names it in errors) to the one
 * stored form, `host:<name>` or `lxc:<host>/<vmid>`: a host, `<host>/<vmid>`, or a vmid or CT name
 * found in the inventory, with `paramVmid` as the container when the target is a host. Nothing is
 * checked on the host. `npm run qualify` judges a call the agent's tools refused by this too.
 */
export async function placeRequest(action: string, scope: Scope, rawTarget: string, paramVmid?: string): Promise<Placement | PrepareError> {
	const resolved = await resolveTarget(rawTarget);
	if ('error' in resolved) return resolved;
	const { host } = resolved;
	if (scope === 'host') {
		if (resolved.vmid) return { error: `${action} runs on a host: target must be a host name, not a container`, hint: `e.g. target '${host.name}'` };
		return { host, target: `host:${host.name}` };
	}
	if (resolved.vmid && paramVmid && resolved.vmid !== paramVmid) {
		return { error: `target '${rawTarget}' is CT ${resolved.vmid} but params.vmid is ${paramVmid}` };
	}
	const vmid = resolved.vmid ?? paramVmid;
	if (scope === 'ct' && !vmid) {
		return { error: `${action} needs a container`, hint: `target 'lxc:${host.name}/<vmid>' or params.vmid` };
	}
	return { host, vmid, target: vmid ? `lxc:${host.name}/${vmid}` : `host:${host.name}` };
}

/** Actions that make a new guest, and the param naming its id ('auto': the host's next free id, fixed before approval). */
const NEW_GUEST_ID: Partial<Record<ActionName, string>> = { pct_create: 'vmid', vm_create: 'vmid', vm_clone: 'newid' };

/** Asks the host for the next free guest id (`pvesh get /cluster/nextid`). */
async function nextFreeVmid(host: Host): Promise<string | PrepareError> {
	try {
		const r = await withHost(host, (c) => execArgv(c, ['pvesh', 'get', '/cluster/nextid'], { timeoutMs: 20_000 }));
		const id = r.stdout.trim().replace(/"/g, '');
		if (r.exitCode === 0 && /^[1-9][0-9]{2,8}$/.test(id)) return id;
		return { error: `could not get the next free vmid from ${host.name}: ${(r.stderr || r.stdout).trim().slice(0, 300)}` };
	} catch (e) {
		return { error: `could not reach ${host.name} to get the next free vmid: ${(e as Error).message}` };
	}
}

/** The migration pre-check, read on the host the guest is on. */
async function precheckMigration(host: Host, p: Extract<Precondition, { kind: 'migrate-target' }>): Promise<string[]> {
	try {
		return await withHost(host, async (c) => migrationProblems(await readMigrationFacts((argv) => execArgv(c, argv, { timeoutMs: 30_000 }), p), p));
	} catch (e) {
		return [`${host.name} could not be reached for the pre-check: ${(e as Error).message}`];
	}
}

/**
 * Validates a request against the catalogue and resolves it to one exact, hashable execution.
 * Returns an error the model can act on (valid actions, fields, targets) instead of throwing;
 * nothing is written here.
 */
export async function prepareExecution(input: unknown): Promise<PreparedExecution | PrepareError> {
	const req = executionRequest.safeParse(input);
	if (!req.success) {
		return { error: `bad request_execution call: ${describeIssues(req.error)}`, hint: 'give target, action, params (an object) and reason' };
	}
	const { target: rawTarget, action, reason } = req.data;
	if (!isActionName(action)) {
		// Names only: with 40 actions their descriptions ran past 4,000 characters; describe_action has each one.
		return { error: `unknown action '${action}'`, hint: `valid actions: ${ACTION_NAMES.join(', ')}. describe_action explains one (params, approval)` };
	}
	const def = ACTIONS[action];
	const parsed = (def.params as z.ZodType).safeParse(req.data.params);
	if (!parsed.success) {
		return { error: `bad params for ${action}: ${describeIssues(parsed.error)}`, hint: `fields of ${action}: ${paramFields(action)}` };
	}
	const params = { ...(parsed.data as Record<string, unknown>) };

	const fromParams = def.scope === 'host' ? undefined : (params.vmid as string | undefined);
	if (def.scope !== 'host') delete params.vmid;
	const placed = await placeRequest(action, def.scope, rawTarget, fromParams);
	if ('error' in placed) return placed;
	const { host, vmid, target } = placed;
	if (!host.hostKeyFingerprint) {
		return { error: `host '${host.name}' has no pinned host key yet`, hint: 'the operator must confirm its fingerprint in Settings → Hosts' };
	}

	// A cluster member: the guest must still be on this node, and the node up and quorate.
	const refusal = await clusterRefusal(host, guestOf(action, vmid, params), { mutation: def.classification !== 'read_only' });
	if (refusal) return refusal;

	const idField = NEW_GUEST_ID[action];
	if (idField && params[idField] === 'auto') {
		const id = await nextFreeVmid(host);
		if (typeof id !== 'string') return id;
		params[idField] = id;
	} else if (idField) {
		params[idField] = vmidSchema.parse(params[idField]);
	}

	const steps = def.steps(params as never, { vmid });
	for (const s of steps) {
		const bytes = Buffer.byteLength(toCommand(s.argv));
		if (bytes > MAX_COMMAND_BYTES) {
			return {
				error: `${action}: the command would be ${bytes} bytes once quoted; at most ${MAX_COMMAND_BYTES} fit in one SSH request`,
				...(action === 'pct_exec' ? { hint: 'use fewer or shorter argv items, or split the work into several executions' } : {})
			};
		}
	}
	const preconditions = def.preconditions?.(params as never, { vmid }) ?? [];
	// A migration is checked before the operator is asked too (and again before the run): a card for a move that cannot happen helps no one.
	for (const p of preconditions) {
		if (p.kind !== 'migrate-target') continue;
		const problems = await precheckMigration(host, p);
		if (problems.length)
			return {
				error: `${action} to ${p.node} refused by the pre-check: ${problems.join('; ')}`,
				hint: "fix what is missing, or pick another node (get_state_snapshot's placement)"
			};
	}
	return {
		action,
		classification: def.classification,
		hostName: host.name,
		vmid,
		target,
		params,
		steps,
		preconditions,
		commandPreview: steps.map((s) => toCommand(s.argv)).join('\n'),
		hash: executionHash(action, target, params),
		reason
	};
}
