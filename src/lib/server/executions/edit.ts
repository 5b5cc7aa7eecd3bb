import { isActionName } from '../proxmox/actions';
import { describeParams } from '../proxmox/params-schema';
import { paramErrors } from '../../schemas/action-params';
import { sql } from '../db/index';
import { recordAudit } from '../db/queries/audit';
import { applyEdit, getExecution, type ExecutionRow } from '../db/queries/executions';
import { addSystemNote } from '../conversation/notes';
import { diffParams, formatChanges, type EditCheck, type EditForm } from '../../schemas/param-form';
import type { ExecutionEdit, ParamChange } from '../../types/executions';
import { prepareExecution, type PreparedExecution } from './prepare';
import { operatorDecides, tokenDetail, type OperatorRoute } from './decisions';
import type { Credential } from './authority';
import { beforeApprovalText, checkBeforeApproval } from './before-approval';
import type { BeforeApproval } from '../../types/executions';

// Editing before approving. Decisions:
// - Every action's params may be edited, except the fields that name the target (`vmid`): the
//   target, host and action never change by an edit (a different container needs a request of
//   its own, with its own preconditions and approval).
// - An edit exists only as part of an approval: one transaction replaces params, hash and
//   command and approves that new hash. There is no "edited, still pending" state to race.
// - The edited params are prepared exactly as a fresh request (zod parse with defaults, target
//   resolution, argv, preconditions, size limit), and the approval must name the hash the
//   operator's screen showed for that command: a crafted call with other params, or a screen
//   that went stale, is refused. First decision wins; a second gets "already decided".

/** Params that name the target: shown, never editable. */
export const LOCKED_FIELDS = ['vmid'] as const;

/** What the edit form needs for a pending execution, or null when it cannot be edited. */
export function editForm(e: ExecutionRow): EditForm | null {
	if (!isActionName(e.action) || e.status !== 'awaiting_approval') return null;
	return { action: e.action, schema: describeParams(e.action), params: e.params, locked: [...LOCKED_FIELDS], hash: e.hash };
}

type Checked = { ok: true; prepared: PreparedExecution; changes: ParamChange[]; beforeApproval: BeforeApproval | null } | Extract<EditCheck, { ok: false }>;

/** A vmid may come back as 105 or '105'; anything else must be identical. */
const norm = (v: unknown) => (typeof v === 'number' ? String(v) : v);
const sameValue = (a: unknown, b: unknown) => JSON.stringify(norm(a)) === JSON.stringify(norm(b));

/**
 * What is wrong with edited params, per field: a changed target, then the action's zod schema,
 * the same check (paramErrors) the browser's form runs while the operator types.
 */
export function editFieldErrors(e: Pick<ExecutionRow, 'action' | 'params'>, edited: Record<string, unknown>): Record<string, string> {
	const locked: Record<string, string> = {};
	for (const f of LOCKED_FIELDS) {
		if (!sameValue(e.params[f], edited[f])) locked[f] = 'the target cannot be changed by an edit: deny this and ask the agent for a new request';
	}
	return { ...paramErrors(e.action, edited), ...locked };
}

/**
 * Validates edited params with the action's zod schema, prepares them against the execution's own
 * target and checks them on the host as a new request is (before-approval.ts): an edit the host
 * says cannot run is refused with its reason. Writes nothing.
 */
export async function checkEditedParams(e: ExecutionRow, edited: Record<string, unknown>): Promise<Checked> {
	if (!isActionName(e.action)) return { ok: false, error: `unknown action '${e.action}'`, fieldErrors: {} };
	const fieldErrors = editFieldErrors(e, edited);
	if (Object.keys(fieldErrors).length) return { ok: false, error: 'fix the marked fields', fieldErrors };
	const prepared = await prepareExecution({ target: e.target, action: e.action, params: edited, reason: e.reason });
	if ('error' in prepared) return { ok: false, error: prepared.error, fieldErrors: {} };
	if (prepared.target !== e.target || prepared.hostName !== e.hostName) {
		return { ok: false, error: 'the edit would change the target; ask the agent for a new request instead', fieldErrors: {} };
	}
	const beforeApproval = prepared.classification === 'read_only' ? null : await checkBeforeApproval(prepared);
	if (beforeApproval?.outcome === 'cannot_run') return { ok: false, error: beforeApprovalText(beforeApproval), fieldErrors: {} };
	return { ok: true, prepared, changes: diffParams(e.params, prepared.params), beforeApproval };
}

/** The check as the browser gets it: the exact command and hash the edit would approve. */
export async function checkEdit(e: ExecutionRow, edited: Record<string, unknown>): Promise<EditCheck> {
	const c = await checkEditedParams(e, edited);
	return c.ok ? { ok: true, hash: c.prepared.hash, commandPreview: c.prepared.commandPreview, changes: c.changes } : c;
}

export type EditApproval =
	| { ok: true; execution: ExecutionRow }
	| { ok: false; reason: 'invalid'; error: string; fieldErrors: Record<string, string> }
	| { ok: false; reason: 'not_found' | 'already_decided' | 'expired' | 'stale' }
	| { ok: false; reason: 'cannot_run'; why: string };

/** What the agent reads when the operator changed its request before approving it. */
export function editNote(e: Pick<ExecutionRow, 'id' | 'action' | 'target'>, changes: ParamChange[]): string {
	return (
		`The operator changed ${formatChanges(changes)} in execution ${e.id} (${e.action} on ${e.target}) before approving it; ` +
		`it runs with the edited params. Do not request the original values again: the operator chose these.`
	);
}

/**
 * Approves a pending execution with the operator's edited params. `baseHash` is the hash of the
 * request the operator edited and `hash` the one the form showed for the edited command: both
 * must still hold when the server recomputes them, else nothing is written ('stale'). Params
 * that hash like the request's are a plain approval. The audit trail keeps the original and the
 * edited params, hash and command; the session gets a note naming each change.
 */
export async function approveEdited(a: {
	executionId: string;
	baseHash: string;
	params: Record<string, unknown>;
	hash: string;
	route: OperatorRoute;
	operator: { id: string; username: string };
	credential: Credential;
}): Promise<EditApproval> {
	const e = await getExecution(sql(), a.executionId);
	if (!e) return { ok: false, reason: 'not_found' };
	if (e.status !== 'awaiting_approval') return { ok: false, reason: 'already_decided' };
	if (e.hash !== a.baseHash) return { ok: false, reason: 'stale' };
	const c = await checkEditedParams(e, a.params);
	if (!c.ok) return { ok: false, reason: 'invalid', error: c.error, fieldErrors: c.fieldErrors };
	if (c.prepared.hash !== a.hash) return { ok: false, reason: 'stale' };

	const changed = c.prepared.hash !== e.hash;
	return sql()
		.begin(async (tx): Promise<EditApproval> => {
			if (changed) {
				const edit: ExecutionEdit = {
					by: a.operator.id,
					byName: a.operator.username,
					at: new Date().toISOString(),
					original: { params: e.params, hash: e.hash, commandPreview: e.commandPreview },
					changes: c.changes
				};
				const next = { params: c.prepared.params, hash: c.prepared.hash, commandPreview: c.prepared.commandPreview, beforeApproval: c.beforeApproval };
				if (!(await applyEdit(tx, e.id, a.baseHash, next, edit))) {
					const cur = await getExecution(tx, e.id);
					if (!cur) return { ok: false, reason: 'not_found' };
					if (cur.status !== 'awaiting_approval') return { ok: false, reason: 'already_decided' };
					return { ok: false, reason: cur.hash !== a.baseHash || cur.edit ? 'stale' : 'expired' };
				}
				await recordAudit(tx, {
					actor: a.operator,
					action: 'execution.edited',
					route: a.route,
					subjectType: 'execution',
					subjectId: e.id,
					sessionId: e.requestedBySession,
					detail: {
						action: e.action,
						target: e.target,
						original: { params: e.params, hash: e.hash, command: e.commandPreview },
						edited: { params: next.params, hash: next.hash, command: next.commandPreview },
						changes: c.changes,
						...tokenDetail(a.credential.kind === 'token' ? a.credential.token : null)
					}
				});
			}
			const d = await operatorDecides(tx, e.id, { decision: 'approved', route: a.route, operatorId: a.operator.id, credential: a.credential });
			// The edit above holds the row, so only expiry in between (or, unedited, the host's refusal before approval) could refuse; undo the edit then.
			if (!d.ok) throw new EditRefused(d.reason === 'cannot_run' ? { reason: 'cannot_run', why: d.why } : { reason: d.reason });
			if (changed && e.requestedBySession) {
				await addSystemNote(tx, e.requestedBySession, 'edit', editNote(e, c.changes), { executionId: e.id, changes: c.changes });
			}
			return { ok: true, execution: d.execution };
		})
		.catch((err: unknown) => {
			if (err instanceof EditRefused) return { ok: false, ...err.refusal };
			throw err;
		});
}

class EditRefused extends Error {
	constructor(readonly refusal: { reason: 'not_found' | 'already_decided' | 'expired' } | { reason: 'cannot_run'; why: string }) {
		super(refusal.reason);
	}
}
