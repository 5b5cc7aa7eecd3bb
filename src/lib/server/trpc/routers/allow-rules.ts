import { TRPCError } from '@trpc/server';
import { createRuleInput, ruleIdInput, updateRuleInput } from '$lib/schemas/allow-rules';
import { sql } from '$lib/server/db/index';
import { ctHostname, listAllowRules } from '$lib/server/db/queries/allow-rules';
import { getExecution } from '$lib/server/db/queries/executions';
import { addRule, changeRule, withdrawRule } from '$lib/server/executions/allow-rules';
import { describeParams } from '$lib/server/proxmox/params-schema';
import { isActionName, needsPerson } from '$lib/server/proxmox/actions';
import { executionIdInput } from '$lib/schemas/executions';
import { adminProcedure, browserAdminProcedure, router } from '../t';

/**
 * Always-allow rules: only admins see, create, edit and revoke them (there is no agent tool for
 * this). A rule approves in advance, so creating or widening one needs a person signed in (never
 * an API token, which could otherwise approve its own MCP requests through a rule); revoking
 * only takes power away and may be done with a token.
 */
export const allowRulesRouter = router({
	list: adminProcedure.query(() => listAllowRules(sql())),

	/** What the "Always allow…" form needs for one execution: its CT's hostname and the params a rule can constrain. */
	draft: adminProcedure.input(executionIdInput).query(async ({ input }) => {
		const e = await getExecution(sql(), input.executionId);
		if (!e || !isActionName(e.action)) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such execution.' });
		const ct = /^lxc:([^/]+)\/([0-9]+)$/.exec(e.target);
		return {
			action: e.action,
			target: e.target,
			params: e.params,
			destructive: needsPerson(e.action),
			ctName: ct ? await ctHostname(sql(), ct[1], ct[2]) : null,
			schema: describeParams(e.action)
		};
	}),

	create: browserAdminProcedure.input(createRuleInput).mutation(({ input, ctx }) => addRule(input, ctx.user)),
	update: browserAdminProcedure.input(updateRuleInput).mutation(({ input, ctx }) => changeRule(input.id, input.rule, ctx.user)),
	revoke: adminProcedure.input(ruleIdInput).mutation(({ input, ctx }) => withdrawRule(input.id, ctx.user))
});
