// Fake `zpool status [-x]` and `zpool list [-H] [-p] [-o cols]` over the pools of health.json.
import { fail, out, parseOpts } from './common.mjs';
import { zpools } from './health.mjs';

const COLS = ['name', 'size', 'alloc', 'free', 'frag', 'cap', 'health'];
const human = (b) => `${(b / 1024 ** 3).toFixed(0)}G`;

function statusOf(p) {
	if (p.status) return p.status.trimEnd();
	return [
		`  pool: ${p.name}`,
		` state: ${p.health}`,
		'config:',
		'',
		`\tNAME        STATE     READ WRITE CKSUM`,
		`\t${p.name.padEnd(11)} ${p.health.padEnd(9)} 0     0     0`,
		'',
		'errors: No known data errors'
	].join('\n');
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function zpool(ctx, args) {
	const [cmd, ...rest] = args;
	const pools = zpools(ctx);
	if (cmd === 'status') {
		const x = rest.includes('-x');
		if (!pools.length) return out('no pools available');
		const shown = x ? pools.filter((p) => p.health !== 'ONLINE' || p.status) : pools;
		if (!shown.length) return out('all pools are healthy');
		return out(shown.map(statusOf).join('\n\n'));
	}
	if (cmd === 'list') {
		const { opts } = parseOpts(rest.filter((a) => a !== '-H' && a !== '-p'));
		const scripted = rest.includes('-H');
		const exact = rest.includes('-p');
		const cols = (opts.get('o') ?? COLS.join(',')).split(',');
		for (const c of cols) if (!COLS.includes(c)) fail(`invalid property '${c}'`, 2);
		const cell = (p, c) => {
			const free = p.size - p.alloc;
			const v = { name: p.name, size: p.size, alloc: p.alloc, free, frag: p.frag ?? 0, cap: Math.floor((p.alloc / p.size) * 100), health: p.health }[c];
			if (exact || typeof v === 'string') return String(v);
			return c === 'frag' || c === 'cap' ? `${v}%` : human(v);
		};
		if (!pools.length) return scripted ? undefined : out('no pools available');
		if (!scripted) out(cols.map((c) => c.toUpperCase()).join('  '));
		for (const p of pools) out(cols.map((c) => cell(p, c)).join(scripted ? '\t' : '  '));
		return;
	}
	fail(`unrecognized command '${cmd ?? ''}'`, 2);
}
