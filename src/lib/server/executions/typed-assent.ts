import { isClearAssent } from './assent';
import { needsPerson } from '../proxmox/actions';

import type { AssentCandidate } from '../../types/executions';

export type { AssentCandidate };

export type TypedAssent =
	/** Not assent at all (or it names something that is not pending): nothing happens. */
	| { kind: 'none' }
	/** Assent, but more than one candidate and none named: nothing is approved, the agent asks which. */
	| { kind: 'ambiguous'; candidates: AssentCandidate[] }
	/** Approve these; `refused` were named (or implied) but need a person (needsPerson) and a click. */
	| { kind: 'approve'; approve: AssentCandidate[]; refused: AssentCandidate[] };

/** Words that carry no meaning for which execution is meant. */
const FILLER = new Set([
	'the',
	'with',
	'on',
	'for',
	'ct',
	'container',
	'lxc',
	'vm',
	'it',
	'that',
	'this',
	'one',
	'of',
	'to',
	'a',
	'an',
	'host',
	'service',
	'please'
]);
const ALL = new Set(['both', 'all', 'them', 'everything']);
const CLAUSE_SPLIT = new Set(['and', '&', '+']);

function tokens(text: string): string[] {
	return text
		.toLowerCase()
		.split(/[\s,;!?]+/)
		.map((t) => t.replace(/^[.:'"()[\]]+|[.:'"()[\]]+$/g, ''))
		.filter(Boolean);
}

/** The words by which an operator may name a candidate: its action, verb, vmid, name, host, simple params. */
function referenceWords(c: AssentCandidate): Set<string> {
	const out = new Set<string>([c.action.toLowerCase(), c.target.toLowerCase()]);
	for (const w of c.action.toLowerCase().split('_')) if (w !== 'pct') out.add(w);
	const ct = /^lxc:([^/]+)\/(\d+)$/.exec(c.target);
	if (ct) {
		out.add(ct[1].toLowerCase());
		out.add(ct[2]);
		out.add(`${ct[1]}/${ct[2]}`.toLowerCase());
	} else out.add(c.target.replace(/^host:/, '').toLowerCase());
	if (c.name) out.add(c.name.toLowerCase());
	for (const v of Object.values(c.params)) {
		if (typeof v === 'string' && /^[a-z0-9][a-z0-9._@-]{0,40}$/i.test(v)) {
			out.add(v.toLowerCase());
			out.add(v.toLowerCase().replace(/\.service$/, ''));
		}
	}
	return out;
}

/**
 * Reads a typed message as approval of the executions the operator has in front of them. It is
 * deliberately narrow: the message must be clear assent once the words naming executions are
 * set aside ("yes", "go ahead and start 102", "yes, restart caddy"); with several candidates it must
 * name which (or say "both"/"all"); a word naming something not pending cancels it. What needs a
 * person (destructive or irreversible: needsPerson, the one definition) is never approved this
 * way: it comes back as `refused` (and authority.ts refuses `typed` approvals of it again).
 */
export function resolveTypedAssent(text: string, candidates: AssentCandidate[]): TypedAssent {
	if (!candidates.length) return { kind: 'none' };
	const refs = candidates.map((c) => ({ c, words: referenceWords(c) }));
	const known = new Set(refs.flatMap((r) => [...r.words]));

	const words = tokens(text);
	const rest: string[] = [];
	const clauses: string[][] = [[]];
	let all = false;
	for (const w of words) {
		if (CLAUSE_SPLIT.has(w)) clauses.push([]);
		else if (ALL.has(w)) all = true;
		else if (known.has(w)) clauses[clauses.length - 1].push(w);
		else if (/^\d{3,9}$/.test(w))
			return { kind: 'none' }; // a vmid that is not pending
		else if (!FILLER.has(w)) rest.push(w);
	}
	// What is left once the references are set aside must be plain assent ("yes", "go ahead").
	if (!isClearAssent(rest.join(' '))) return { kind: 'none' };

	const named = new Set<AssentCandidate>();
	let namedSomething = false;
	for (const clause of clauses) {
		if (!clause.length) continue;
		namedSomething = true;
		const matching = refs.filter((r) => clause.every((w) => r.words.has(w))).map((r) => r.c);
		if (!matching.length) return { kind: 'none' };
		// "start 102" names one; a clause that fits several (just "start" with two starts) is not a choice.
		if (matching.length > 1 && !all) return { kind: 'ambiguous', candidates };
		matching.forEach((c) => named.add(c));
	}

	let chosen: AssentCandidate[];
	if (namedSomething) chosen = [...named];
	else if (all || candidates.length === 1) chosen = candidates;
	else return { kind: 'ambiguous', candidates };
	if (all && words.includes('both') && !namedSomething && candidates.length !== 2) return { kind: 'ambiguous', candidates };

	return {
		kind: 'approve',
		approve: chosen.filter((c) => !needsPerson(c.action)),
		refused: chosen.filter((c) => needsPerson(c.action))
	};
}
