// The argv shapes nomos-gate (deploy/nomos-gate) lets a key run, derived from the catalogue: each
// action's own step, read-back and resume builders run over sample params in which every free
// value is a sentinel, every boolean, enum and optional field enumerated; a sentinel in an argv
// word becomes the pattern of its zod schema. The non-catalogue reads (inventory, preconditions,
// cluster and migration facts) come from their own modules' argv. `npm run gate:allowlist`
// writes the result to deploy/nomos-gate.allow; tests/integration/gate.test.ts checks both agree.
import { createHash } from 'node:crypto';
import { ACTIONS, ACTION_NAMES, AGENT_WAIT_SCRIPT, type ActionDef, type StepContext } from './actions';
import { RESOURCES_ARGV } from './cluster';
import { nodeName, storage, vmid as vmidField } from '../../schemas/param-fields';
import { upid as upidField } from '../../schemas/health-params';
import { failedTaskArgv, taskLogArgv } from './task-cause';
import { GROUP_SCRIPT, STOP_SCRIPT } from '../ssh/quote';
import { keyRole, type KeyRole } from './key-role';
import { AGENT_IPV4, AGENT_IPV6 } from './guest-agent';

export type GateRole = KeyRole;

/** One allowed argv: its first word literally, then one Perl regex per further word (the last one may repeat). */
export interface GateShape {
	role: GateRole;
	/** the action (or read) it comes from, for the gate's log line */
	name: string;
	argv0: string;
	words: string[];
	/** the last word's pattern matches one or more words (pct_exec's argv) */
	repeatLast: boolean;
}

type Slot = { re: string; array?: number };

/** Stands for `$` (the end of the value) in a slot's pattern until its word is assembled. */
const END = '\u0003';

/** Variants of a params object: free values become sentinels recorded in `slots`. */
class Tracer {
	slots = new Map<string, Slot>();
	#n = 0;
	#arrays = 0;
	str(re: string, array?: number): string {
		const s = `\u0001${++this.#n}\u0002`;
		this.slots.set(s, { re, array });
		return s;
	}
	num(re = '[0-9]+'): number {
		const n = 987_650_000 + ++this.#n;
		this.slots.set(String(n), { re });
		return n;
	}
	array(re: string): [string, string] {
		const id = ++this.#arrays;
		return [this.str(re, id), this.str(re, id)];
	}
}

type Def = { type: string; [k: string]: unknown };
const defOf = (s: unknown): Def => (s as { _zod: { def: Def } })._zod.def;

/**
 * A JS regex source as a Perl pattern for one value inside an argv word: `^` dropped (a value
 * starts where its slot does), `$` becomes END, replaced later by a look-ahead at what follows
 * the value in its word (so `(?=.{1,63}$)` still bounds a node name inside `/nodes/<name>/lxc`).
 */
export function perlPattern(re: RegExp): string {
	let out = '';
	let inClass = false;
	const src = re.source;
	for (let i = 0; i < src.length; i++) {
		const c = src[i];
		if (c === '\\') {
			out += c + (src[i + 1] ?? '');
			i++;
		} else if (inClass) {
			if (c === ']') inClass = false;
			out += c;
		} else if (c === '[') {
			inClass = true;
			out += c;
		} else if (c === '^') out += '';
		else if (c === '$') out += END;
		else out += c;
	}
	return out;
}

/** Literal text as a Perl pattern: every character but [A-Za-z0-9_] escaped, newline and tab by name. */
export function perlLiteral(s: string): string {
	return s.replace(/[^A-Za-z0-9_]/g, (c) =>
		c === '\n' ? '\\n' : c === '\t' ? '\\t' : c.charCodeAt(0) < 128 ? `\\${c}` : `\\x{${c.codePointAt(0)!.toString(16)}}`
	);
}

/** A whole number's pattern: no leading zero, and no 0 at all when its schema's minimum is 1 or more (a size 0 means something else to pct). */
function numberPattern(d: Def): string {
	const min = ((d.checks as unknown[] | undefined) ?? [])
		.map((c) => defOf(c) as { check?: string; value?: number; inclusive?: boolean })
		.find((c) => c.check === 'greater_than' && typeof c.value === 'number');
	const positive = min !== undefined && (min.value! >= 1 || (min.value! >= 0 && !min.inclusive));
	return positive ? '[1-9][0-9]*' : '(?:0|[1-9][0-9]*)';
}

/** The pattern of one scalar schema: its regexes, enum values or literals; free text when it has none. */
function scalarPattern(schema: unknown): string {
	const d = defOf(schema);
	switch (d.type) {
		case 'optional':
		case 'default':
		case 'nullable':
			return scalarPattern(d.innerType);
		case 'pipe':
			return defOf(d.out).type === 'transform' ? scalarPattern(d.in) : scalarPattern(d.out);
		case 'union':
			return (d.options as unknown[]).map((o) => `(?:${scalarPattern(o)})`).join('|');
		case 'literal':
			return (d.values as unknown[]).map((v) => perlLiteral(String(v))).join('|');
		case 'enum':
			return Object.values(d.entries as Record<string, string>)
				.map((v) => perlLiteral(String(v)))
				.join('|');
		case 'number':
			return numberPattern(d);
		case 'string': {
			const res = ((d.checks as unknown[] | undefined) ?? [])
				.map((c) => defOf(c) as { check?: string; format?: string; pattern?: RegExp })
				.filter((c) => c.check === 'string_format' && c.format === 'regex' && c.pattern)
				.map((c) => perlPattern(c.pattern!));
			if (res.length > 1) throw new Error('gate shapes: a string param with more than one pattern');
			// No pattern: free text, one word (no NUL: it cannot be carried).
			return res[0] ?? '(?s:.*)';
		}
	}
	throw new Error(`gate shapes: no pattern for a ${d.type} param`);
}

/** Every combination of the finite choices of `schema`, free values as sentinels. */
function variants(schema: unknown, t: Tracer): unknown[] {
	const d = defOf(schema);
	switch (d.type) {
		case 'optional':
			return [undefined, ...variants(d.innerType, t)];
		case 'default':
		case 'nullable':
			return variants(d.innerType, t);
		case 'boolean':
			return [true, false];
		case 'enum':
			return Object.values(d.entries as Record<string, string>);
		case 'literal':
			return d.values as unknown[];
		case 'number':
			return [t.num(numberPattern(d))];
		case 'array':
			return [t.array(scalarPattern(d.element))];
		case 'object': {
			let acc: Record<string, unknown>[] = [{}];
			for (const [k, v] of Object.entries(d.shape as Record<string, unknown>)) {
				const vs = variants(v, t);
				acc = acc.flatMap((o) => vs.map((x) => (x === undefined ? o : { ...o, [k]: x })));
				if (acc.length > 5_000) throw new Error('gate shapes: too many param combinations');
			}
			return acc;
		}
		default:
			// strings, pipes, unions of scalars: one sentinel standing for the schema's pattern
			return [t.str(scalarPattern(schema))];
	}
}

// eslint-disable-next-line no-control-regex -- the sentinels are control characters no param holds
const SENTINEL = /\u0001\d+\u0002|98765\d{4}/g;

/** One argv as gate words, the sentinels replaced by their patterns. */
function shapeOf(argv: readonly string[], t: Tracer, role: GateRole, name: string): GateShape {
	const [argv0, ...rest] = argv;
	if (argv0 === undefined || new RegExp(SENTINEL.source).test(argv0)) throw new Error(`gate shapes: ${name}: the first word must be fixed`);
	const words: string[] = [];
	let repeatLast = false;
	for (let i = 0; i < rest.length; i++) {
		const w = rest[i];
		const whole = t.slots.get(w);
		if (whole?.array !== undefined) {
			const next = t.slots.get(rest[i + 1] ?? '');
			if (next?.array !== whole.array || i + 2 !== rest.length) throw new Error(`gate shapes: ${name}: a spread list must end the argv`);
			words.push(`\\A(?:${whole.re.split(END).join('(?=\\z)')})\\z`);
			repeatLast = true;
			break;
		}
		// The word as pieces (literal text, values, joined lists), assembled from its end so that each
		// value's END looks ahead at everything after it.
		const pieces: Array<{ lit: string } | { slot: Slot } | { list: Slot; sep: string }> = [];
		let at = 0;
		const find = new RegExp(SENTINEL.source, 'g');
		for (let m = find.exec(w); m; m = find.exec(w)) {
			const slot = t.slots.get(m[0]);
			if (!slot) continue;
			pieces.push({ lit: w.slice(at, m.index) });
			at = m.index + m[0].length;
			if (slot.array !== undefined) {
				// a joined list (`a;b`): its separator repeats, and the list may be empty
				const j = w.indexOf('\u0001', at);
				const second = j < 0 ? '' : w.slice(j, w.indexOf('\u0002', j) + 1);
				if (t.slots.get(second)?.array !== slot.array) throw new Error(`gate shapes: ${name}: a list used oddly`);
				pieces.push({ list: slot, sep: w.slice(at, j) });
				at = j + second.length;
				find.lastIndex = at;
			} else pieces.push({ slot });
		}
		pieces.push({ lit: w.slice(at) });
		let re = '\\z';
		for (const piece of pieces.reverse()) {
			if ('lit' in piece) re = perlLiteral(piece.lit) + re;
			else if ('slot' in piece) re = `(?:${piece.slot.re.split(END).join(`(?=${re})`)})` + re;
			else {
				const sep = perlLiteral(piece.sep);
				const el = `(?:${piece.list.re.split(END).join(`(?=${sep}|${re})`)})`;
				re = `(?:${el}(?:${sep}${el})*)?` + re;
			}
		}
		words.push(`\\A${re}`);
	}
	return { role, name, argv0, words, repeatLast };
}

/** Every argv an action can run (its steps, read-backs and resume reads) over all param variants. */
function actionShapes(name: string, action: ActionDef): GateShape[] {
	const t = new Tracer();
	const params = variants(action.params, t);
	const ctxs: StepContext[] = [];
	const vmid = t.str(scalarPattern(vmidField));
	// An agent's address must be an IP (guest-agent.ts urlHost checks it): sample ones, then patterns.
	const v4 = t.str(AGENT_IPV4);
	const v6 = t.str(AGENT_IPV6);
	const sampleAddress: [string, string][] = [
		['198.51.100.254', v4],
		['2001:db8::fe', v6]
	];
	for (const [address] of sampleAddress) {
		if (action.scope !== 'host') ctxs.push({ vmid, address });
		if (action.scope !== 'ct') ctxs.push({ address });
	}
	const traced = (argv: string[]) => argv.map((w) => sampleAddress.reduce((x, [a, s]) => x.split(a).join(s), w));
	const out: GateShape[] = [];
	const readOnly = action.classification === 'read_only';
	const add = (argv: string[], role: GateRole) => out.push(shapeOf(traced(argv), t, role, name));
	for (const p of params) {
		for (const ctx of ctxs) {
			for (const s of action.steps(p, ctx)) add(s.argv, keyRole(readOnly, s));
			for (const s of action.readBack?.(p, ctx) ?? []) add(s.argv, 'read');
			const r = action.resume?.(p, ctx);
			if (r) {
				add(r.state.argv, 'read');
				add(r.config, 'read');
			}
		}
	}
	return out;
}

/**
 * The reads Nomos runs outside the catalogue, each from the module that runs it: inventory
 * (proxmox/inventory.ts, agent/tools/get-lxc-state.ts), preconditions and leftovers
 * (executions/before-approval.ts, leftovers.ts, runner.ts), snapshots (safeguards.ts), the
 * cluster and migration facts (proxmox/cluster.ts, migrate.ts), a new vmid (prepare.ts), the
 * connection test (hosts/manage.ts), a failed start's task and its log (task-cause.ts).
 */
function hostReadShapes(): GateShape[] {
	const t = new Tracer();
	const id = t.str(scalarPattern(vmidField));
	const node = t.str(scalarPattern(nodeName));
	const store = t.str(scalarPattern(storage));
	const reads: [string, string[]][] = [
		['connection test', ['true']],
		['inventory', ['pvesh', 'get', '/nodes', '--output-format', 'json']],
		['inventory', ['pvesh', 'get', `/nodes/${node}/lxc`, '--output-format', 'json']],
		['cluster', [...RESOURCES_ARGV]],
		['cluster', ['pvecm', 'status']],
		['migration facts', ['pvesh', 'get', `/nodes/${node}/status`, '--output-format', 'json']],
		['migration facts', ['pvesh', 'get', `/nodes/${node}/storage`, '--output-format', 'json']],
		['new vmid', ['pvesh', 'get', '/cluster/nextid']],
		['storage', ['pvesm', 'status', '--storage', store]],
		['health', ['sh', '-c', AGENT_WAIT_SCRIPT, 'nomos-agent', id]],
		['guest agent', ['qm', 'guest', 'cmd', id, 'network-get-interfaces']],
		['failed start', taskLogArgv(t.str(scalarPattern(upidField)))]
	];
	for (const type of new Set(ACTION_NAMES.flatMap((n) => (ACTIONS[n] as ActionDef).failedTask?.({}, { vmid: '100' })?.type ?? [])))
		reads.push(['failed start', failedTaskArgv(type, id, t.num())]);
	for (const tool of ['pct', 'qm'])
		for (const verb of ['status', 'config', 'listsnapshot']) reads.push(['guest reads', [tool, verb, id]], ['guest reads', [tool, 'status', id, '--verbose']]);
	return reads.map(([name, argv]) => shapeOf(argv, t, 'read', name));
}

/** The group wrapper (ssh/quote.ts groupedArgv) and the remote stop (stopGroupArgv): the gate's own lines. */
function wrapperLines(): string[] {
	const tag = '[0-9a-f]{8,64}';
	const group = ['-w', 'sh', '-c', GROUP_SCRIPT, 'nomos'].map((w) => `\\A${perlLiteral(w)}\\z`);
	const stop = ['-c', STOP_SCRIPT, 'nomos-stop'].map((w) => `\\A${perlLiteral(w)}\\z`);
	return [
		['group', 'process group', 'setsid', ...group, `\\A${tag}\\z`].join('\t'),
		['stop', 'remote stop', 'sh', ...stop, '\\A[0-9]+\\z', `\\A${tag}\\z`].join('\t')
	];
}

const lineOf = (s: GateShape) => [s.repeatLast ? `${s.role}+` : s.role, s.name, s.argv0, ...s.words].join('\t');

/** Every allowed shape as the allowlist's lines, deduplicated and sorted (stable across runs). */
export function gateShapeLines(): string[] {
	const shapes = [...ACTION_NAMES.flatMap((n) => actionShapes(n, ACTIONS[n] as ActionDef)), ...hostReadShapes()];
	// One argv can be both a read (a read-back) and a mutation's step: the read line is enough.
	const lines = new Map<string, string>();
	for (const s of shapes) {
		const key = lineOf({ ...s, role: 'read', name: '' });
		const prev = lines.get(key);
		if (!prev || (prev.startsWith('mutate') && s.role === 'read')) lines.set(key, lineOf(s));
	}
	return [...new Set([...wrapperLines(), ...lines.values()])].sort();
}

/** The allowlist file: a header with the catalogue version (a hash of its lines), then one shape per line. */
export function gateAllowlist(): { version: string; text: string } {
	const body = gateShapeLines();
	const version = createHash('sha256').update(body.join('\n')).digest('hex').slice(0, 16);
	const header = [
		'# nomos-gate allowlist: generated by `npm run gate:allowlist` from the catalogue; do not edit.',
		'# role<TAB>name<TAB>argv0<TAB>one Perl pattern per further word (role+ : the last word repeats)',
		`catalogue ${version}`
	];
	return { version, text: [...header, ...body].join('\n') + '\n' };
}

let cached: string | undefined;
/** The catalogue version this Nomos needs its gates to carry. */
export function catalogueVersion(): string {
	return (cached ??= gateAllowlist().version);
}
