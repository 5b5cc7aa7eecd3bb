// Always-allow rules: an admin's standing approval of one action on an explicit target pattern,
// optionally bounded by param constraints. Shared by the tRPC inputs, the server's matcher and
// the browser, so a rule reads the same everywhere (`describeRule`).
import { z } from 'zod';

const hostName = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,62})(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,62}))*$/;
const glob = /^[a-z0-9*-]{1,63}$/;

/**
 * A target pattern, one of exactly four shapes (ASCII only, no `*` outside a CT-hostname glob):
 * `host:<host>` (the host itself), `lxc:<host>/<vmid>` (one CT), `lxc:<host>/*` (every CT of
 * that host), `lxc:<host>/name=<glob>` (CTs of that host whose hostname matches; `*` is any run
 * of hostname characters). The host is always named exactly.
 */
export type TargetPattern =
	| { kind: 'host'; host: string }
	| { kind: 'ct'; host: string; vmid: string }
	| { kind: 'all-cts'; host: string }
	| { kind: 'ct-name'; host: string; glob: string };

export function parsePattern(p: string): TargetPattern | null {
	if (p.length > 200) return null;
	let m = /^host:([^/]+)$/.exec(p);
	if (m) return hostName.test(m[1]) ? { kind: 'host', host: m[1] } : null;
	m = /^lxc:([^/]+)\/(.+)$/.exec(p);
	if (!m || !hostName.test(m[1])) return null;
	const [, host, rest] = m;
	if (rest === '*') return { kind: 'all-cts', host };
	if (/^[1-9][0-9]{2,8}$/.test(rest)) return { kind: 'ct', host, vmid: rest };
	const g = /^name=(.+)$/.exec(rest);
	if (g && glob.test(g[1]) && /[a-z0-9]/.test(g[1])) return { kind: 'ct-name', host, glob: g[1] };
	return null;
}

export const PATTERN_HELP = 'host:<host>, lxc:<host>/<vmid>, lxc:<host>/* (every CT of the host) or lxc:<host>/name=<glob> (e.g. name=web-*)';

/** Whether a hostname matches a glob: `*` stands for any run of hostname characters, nothing else is special. */
export function globMatches(g: string, name: string): boolean {
	const re = new RegExp(
		`^${g
			.split('*')
			.map((s) => s.replace(/-/g, '\\-'))
			.join('[a-z0-9-]*')}$`
	);
	return re.test(name);
}

export const constraintOps = ['lte', 'gte', 'eq'] as const;
export type ConstraintOp = (typeof constraintOps)[number];
export const constraint = z
	.object({
		field: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'a top-level param name'),
		op: z.enum(constraintOps),
		value: z.union([z.number().finite(), z.boolean(), z.string().max(200)])
	})
	.strict();
export type ParamConstraint = z.infer<typeof constraint>;

const pattern = z
	.string()
	.trim()
	.refine((p) => parsePattern(p) !== null, `a target pattern: ${PATTERN_HELP}`);

export const ruleFields = z
	.object({
		action: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'an action name'),
		pattern,
		constraints: z.array(constraint).max(16).default([]),
		note: z.string().trim().max(500).default(''),
		/** Hours until it lapses; none: until revoked. */
		expiresInHours: z
			.number()
			.int()
			.min(1)
			.max(24 * 365)
			.nullable()
			.default(null)
	})
	.strict();
export const createRuleInput = ruleFields;
export const updateRuleInput = z.object({ id: z.uuid(), rule: ruleFields }).strict();
export const ruleIdInput = z.object({ id: z.uuid() }).strict();
export type RuleFields = z.input<typeof ruleFields>;

/** A rule as listed (timestamps ISO text). */
export type AllowRule = {
	id: string;
	action: string;
	pattern: string;
	constraints: ParamConstraint[];
	note: string;
	createdBy: string | null;
	createdByName: string | null;
	createdAt: string;
	updatedAt: string;
	expiresAt: string | null;
	revokedAt: string | null;
	revokedByName: string | null;
	uses: number;
};

const opWords: Record<ConstraintOp, string> = { lte: '≤', gte: '≥', eq: '=' };

export function describePattern(p: string): string {
	const t = parsePattern(p);
	if (!t) return `(invalid pattern ${p})`;
	switch (t.kind) {
		case 'host':
			return `host ${t.host} itself`;
		case 'ct':
			return `CT ${t.vmid} on host ${t.host}`;
		case 'all-cts':
			return `any CT on host ${t.host}`;
		case 'ct-name':
			return t.glob.includes('*') ? `CTs on host ${t.host} whose hostname matches ${t.glob}` : `the CT named ${t.glob} on host ${t.host}`;
	}
}

export function describeConstraint(c: ParamConstraint): string {
	return `${c.field} ${opWords[c.op]} ${typeof c.value === 'string' ? c.value : JSON.stringify(c.value)}`;
}

/** The rule in plain words, e.g. "pct_start on any CT on host strong" or "pct_create on host strong itself, when memory ≤ 4096". */
export function describeRule(r: { action: string; pattern: string; constraints: ParamConstraint[] }): string {
	const when = r.constraints.length ? `, when ${r.constraints.map(describeConstraint).join(' and ')}` : ', any params';
	return `${r.action} on ${describePattern(r.pattern)}${when}`;
}

/** The patterns an execution's target could be allowed by, most specific first (for the card's choices). */
export function patternChoices(target: string, ctName: string | null): string[] {
	const ct = /^lxc:([^/]+)\/([0-9]+)$/.exec(target);
	if (!ct) return [target];
	const out = [target, `lxc:${ct[1]}/*`];
	if (ctName && glob.test(ctName)) out.splice(1, 0, `lxc:${ct[1]}/name=${ctName}`);
	return out;
}
