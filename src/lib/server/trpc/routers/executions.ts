import { TRPCError } from '@trpc/server';
import { approveEditedInput, checkEditInput, decideInput, decidePlanInput, executionIdInput, planIdInput } from '$lib/schemas/executions';
import { approveEdited, checkEdit, editForm } from '$lib/server/executions/edit';
import { sessionIdInput } from '$lib/schemas/chat';
import { sql } from '$lib/server/db/index';
import { activeWindow } from '$lib/server/db/queries/assent-windows';
import { decisionRoute, tokenDetail } from '$lib/server/executions/decisions';
import { cancelExecution, decideAsOperator, decidePlanAsOperator, revokeAssentWindow, stopRunningPlan } from '$lib/server/executions/by-operator';
import { NotAllowed } from '$lib/server/executions/authority';
import { cannotRunMessage } from '$lib/server/executions/before-approval';
import { requestExecution } from '$lib/server/executions/request';
import { requestRollback } from '$lib/server/executions/rollback';
import { getExecution, listRecentExecutions } from '$lib/server/db/queries/executions';
import { blastRadius } from '$lib/server/db/queries/blast-radius';
import { getPlan } from '$lib/server/db/queries/plans';
import { keepListed, requireRead, requireWrite, requireWriteOf, type Viewer } from '$lib/server/access/sessions';
import { operatorProcedure, router } from '../t';
import { credential, surfaceOf } from '../credential';
import type { Context } from '../context';

const conflictMessages = {
	not_found: 'No such execution.',
	already_decided: 'This execution was already decided.',
	expired: 'This approval has expired; ask the agent to request it again.',
	stale: 'This request changed since you opened it (or the command shown is not what these params would run); review it again.'
} as const;

/** Why a decision did not apply, as the operator reads it (a request the host refused before approval says what the host said). */
function refusedDecision(r: { reason: keyof typeof conflictMessages } | { reason: 'cannot_run'; why: string }): TRPCError {
	if (r.reason === 'cannot_run') return new TRPCError({ code: 'CONFLICT', message: cannotRunMessage(r.why) });
	return new TRPCError({ code: r.reason === 'not_found' ? 'NOT_FOUND' : 'CONFLICT', message: conflictMessages[r.reason] });
}

/**
 * Refuses unless the caller may act on what this execution's session asked for (access/sessions.ts):
 * its owner or a read-write share; an admin, anything. Another operator's is "no such execution".
 */
async function mayActOn(executionId: string, viewer: Viewer): Promise<void> {
	const e = await getExecution(sql(), executionId);
	if (!e) throw new TRPCError({ code: 'NOT_FOUND', message: conflictMessages.not_found });
	await requireWriteOf(sql(), e.requestedBySession, viewer);
}

async function mayActOnPlan(planId: string, viewer: Viewer): Promise<void> {
	const p = await getPlan(sql(), planId);
	if (p) await requireWriteOf(sql(), p.sessionId, viewer);
}

async function pendingExecution(id: string, viewer: Viewer) {
	const e = await getExecution(sql(), id);
	if (!e) throw new TRPCError({ code: 'NOT_FOUND', message: conflictMessages.not_found });
	await requireWriteOf(sql(), e.requestedBySession, viewer);
	if (e.status !== 'awaiting_approval') throw new TRPCError({ code: 'CONFLICT', message: conflictMessages.already_decided });
	return e;
}

/** A decision the caller's credential may not make: 403, with `stepUp` set when the password would allow it (see t.ts). */
async function allowed<T>(work: () => Promise<T>): Promise<T> {
	try {
		return await work();
	} catch (e) {
		if (e instanceof NotAllowed) throw new TRPCError({ code: 'FORBIDDEN', message: e.message, cause: e });
		throw e;
	}
}

/** The audit route of a click: decided here from the request (its credential, its page), never taken from the input. */
const routeOf = (ctx: Context) => decisionRoute(credential(ctx), surfaceOf(ctx.event));

/** Who acts, by which route, with which API token (if any): for the audit of what they do. */
const byOf = (ctx: Context & { user: { id: string; username: string } }) => ({ actor: ctx.user, route: routeOf(ctx), token: ctx.apiToken });

/** The request's API token as a Requester's: named in the audit, and never approving what it asked for. */
const requestedWith = (ctx: Context) => ({ detail: tokenDetail(ctx.apiToken), tokenId: ctx.apiToken?.id ?? null });

export const executionsRouter = router({
	/** Ops: what the caller's own and shared sessions asked for (and what no session did); an admin's, everything. */
	recent: operatorProcedure.query(async ({ ctx }) => keepListed(sql(), ctx.user, await listRecentExecutions(sql(), 200), (e) => e.requestedBySession)),

	/** What depends on an execution's target (the fleet's state, not the session's words: every operator). */
	blastRadius: operatorProcedure.input(executionIdInput).query(async ({ input }) => {
		const r = await blastRadius(sql(), input.executionId);
		if (!r) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution.' });
		return r;
	}),

	decide: operatorProcedure.input(decideInput).mutation(async ({ input, ctx }) => {
		await mayActOn(input.executionId, ctx.user);
		const r = await allowed(() =>
			decideAsOperator(input.executionId, {
				decision: input.decision,
				route: routeOf(ctx),
				operatorId: ctx.user.id,
				reason: input.reason ?? null,
				credential: credential(ctx)
			})
		);
		if (!r.ok) throw refusedDecision(r);
		return r.execution;
	}),

	/** The edit form of a pending execution: its params' schema, the requested values and the fields that name the target. */
	editForm: operatorProcedure.input(executionIdInput).query(async ({ input, ctx }) => {
		const form = editForm(await pendingExecution(input.executionId, ctx.user));
		if (!form) throw new TRPCError({ code: 'CONFLICT', message: 'This execution cannot be edited.' });
		return form;
	}),

	/** Validates edited params as a fresh request would be and returns the exact command and hash they would approve (writes nothing). */
	checkEdit: operatorProcedure
		.input(checkEditInput)
		.mutation(async ({ input, ctx }) => checkEdit(await pendingExecution(input.executionId, ctx.user), input.params)),

	/** Approves the edited params: an invalid edit comes back with an error per field; a stale one (or a second decision) is refused. */
	approveEdited: operatorProcedure.input(approveEditedInput).mutation(async ({ input, ctx }) => {
		await mayActOn(input.executionId, ctx.user);
		const r = await allowed(() =>
			approveEdited({ ...input, route: routeOf(ctx), operator: { id: ctx.user.id, username: ctx.user.username }, credential: credential(ctx) })
		);
		if (r.ok || r.reason === 'invalid') return r;
		throw refusedDecision(r);
	}),

	/** Stops a running execution (its remote command is killed) or withdraws an approved one not yet started. */
	cancel: operatorProcedure.input(executionIdInput).mutation(async ({ input, ctx }) => {
		await mayActOn(input.executionId, ctx.user);
		return cancelExecution(input.executionId, byOf(ctx));
	}),

	/** A retry is a new execution of the same action, target and params, and needs its own approval. */
	retry: operatorProcedure.input(executionIdInput).mutation(async ({ input, ctx }) => {
		const e = await getExecution(sql(), input.executionId);
		if (!e) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution.' });
		await requireWriteOf(sql(), e.requestedBySession, ctx.user);
		if (!['failed', 'cancelled', 'interrupted', 'expired'].includes(e.status)) {
			throw new TRPCError({ code: 'CONFLICT', message: `Only failed, cancelled, interrupted or expired executions can be retried (this one is ${e.status}).` });
		}
		const r = await requestExecution(
			e.requestedBySession,
			{ target: e.target, action: e.action, params: e.params, reason: `retry of ${e.id}: ${e.reason}` },
			{
				retryOf: e.id,
				requester: {
					operator: { id: ctx.user.id, username: ctx.user.username },
					route: routeOf(ctx),
					action: 'execution.retry_requested',
					...requestedWith(ctx),
					detail: { retryOf: e.id, ...tokenDetail(ctx.apiToken) }
				}
			}
		);
		if ('error' in r) throw new TRPCError({ code: 'BAD_REQUEST', message: r.error });
		return r.execution;
	}),

	/** Asks to roll the container back to the snapshot Nomos took before this (failed) execution; needs its own approval. */
	rollback: operatorProcedure.input(executionIdInput).mutation(async ({ input, ctx }) => {
		await mayActOn(input.executionId, ctx.user);
		const r = await requestRollback(input.executionId, {
			operator: { id: ctx.user.id, username: ctx.user.username },
			route: routeOf(ctx),
			action: 'execution.rollback_requested',
			...requestedWith(ctx)
		});
		if ('refused' in r) throw new TRPCError({ code: 'CONFLICT', message: r.refused });
		if ('error' in r) throw new TRPCError({ code: 'BAD_REQUEST', message: r.error });
		return r.execution;
	}),

	decidePlan: operatorProcedure.input(decidePlanInput).mutation(async ({ input, ctx }) => {
		await mayActOnPlan(input.planId, ctx.user);
		const plan = await allowed(() =>
			decidePlanAsOperator(input.planId, { decision: input.decision, operatorId: ctx.user.id, reason: input.reason ?? null, credential: credential(ctx) })
		);
		if (!plan) throw new TRPCError({ code: 'CONFLICT', message: 'This plan was already decided or replaced.' });
		return plan;
	}),

	/** Stop on a running plan: its current step is cancelled, the rest are not run. */
	stopPlan: operatorProcedure.input(planIdInput).mutation(async ({ input, ctx }) => {
		await mayActOnPlan(input.planId, ctx.user);
		return stopRunningPlan(input.planId, byOf(ctx));
	}),

	window: operatorProcedure.input(sessionIdInput).query(async ({ input, ctx }) => {
		await requireRead(sql(), input.sessionId, ctx.user);
		return activeWindow(sql(), input.sessionId);
	}),

	revokeWindow: operatorProcedure.input(sessionIdInput).mutation(async ({ input, ctx }) => {
		await requireWrite(sql(), input.sessionId, ctx.user);
		return { revoked: await revokeAssentWindow(input.sessionId, byOf(ctx)) };
	})
});
