// Fake `journalctl -u <unit> [-n N] [--no-pager]`: the unit's lines of the scope's journal
// (journal.json, written by systemctl.mjs as units start and stop, and by tests through
// journal.ts), as systemd prints them in its default `short` output.
import { join } from 'node:path';
import { fail, out, readJson, writeJson } from './common.mjs';

const base = (u) => u.replace(/\.service$/, '');
const file = (ctx) => join(ctx.scopeDir, 'journal.json');

/** Appends lines of a unit to the scope's journal, stamped now, as `<Mon dd hh:mm:ss> <host> <who>: <text>`. */
export function journalAppend(ctx, unit, who, lines) {
	const j = readJson(file(ctx), {});
	const d = new Date();
	const mon = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
	const stamp = `${mon} ${String(d.getUTCDate()).padStart(2, '0')} ${d.toISOString().slice(11, 19)}`;
	const host = ctx.ct === undefined ? ctx.node : `ct${ctx.ct}`;
	j[base(unit)] = [...(j[base(unit)] ?? []), ...lines.map((l) => `${stamp} ${host} ${who}: ${l}`)].slice(-500);
	writeJson(file(ctx), j);
}

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export function journalctl(ctx, args) {
	let unit;
	let n = 10;
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (a === '-u' || a === '--unit') unit = args[++i];
		else if (a === '-n' || a === '--lines') n = Number(args[++i]);
		else if (a.startsWith('--unit=')) unit = a.slice(7);
		else if (a.startsWith('--lines=')) n = Number(a.slice(8));
		else if (a === '--no-pager' || a === '-q' || a === '--quiet') continue;
		else fail(`journalctl: unrecognized option '${a}'`, 1);
	}
	if (!Number.isInteger(n) || n < 0) fail(`Failed to parse lines '${n}'.`, 1);
	const lines = unit === undefined ? Object.values(readJson(file(ctx), {})).flat() : (readJson(file(ctx), {})[base(unit)] ?? []);
	if (!lines.length) return out('-- No entries --');
	for (const l of lines.slice(-n)) out(l);
}
