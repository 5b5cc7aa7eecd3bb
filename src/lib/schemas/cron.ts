// Five-field cron expressions (minute hour day-of-month month day-of-week), evaluated in UTC.
// Shared by the Settings form (next runs), the zod schema and the schedules__tick task.

type Field = { min: number; max: number; names?: string[] };
const FIELDS: Field[] = [
	{ min: 0, max: 59 },
	{ min: 0, max: 23 },
	{ min: 1, max: 31 },
	{ min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
	{ min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] }
];
const LABELS = ['minute', 'hour', 'day of month', 'month', 'day of week'];

export interface Cron {
	minutes: Set<number>;
	hours: Set<number>;
	days: Set<number>;
	months: Set<number>;
	weekdays: Set<number>;
	/** Vixie cron: when both day fields are restricted, a day matching either runs. */
	anyDay: boolean;
}

export type CronParse = { ok: true; cron: Cron } | { ok: false; error: string };

function value(s: string, f: Field): number | null {
	const named = f.names?.indexOf(s.toLowerCase()) ?? -1;
	if (named >= 0) return named + f.min;
	if (!/^\d{1,2}$/.test(s)) return null;
	const n = Number(s);
	return n >= f.min && n <= f.max ? n : null;
}

function field(text: string, i: number): Set<number> | string {
	const f = FIELDS[i];
	const out = new Set<number>();
	for (const part of text.split(',')) {
		const m = /^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:\/(\d{1,2}))?$/i.exec(part);
		if (!m) return `${LABELS[i]}: "${part}" is not a number, range, list or step`;
		const step = m[2] === undefined ? 1 : Number(m[2]);
		if (step < 1) return `${LABELS[i]}: a step must be at least 1`;
		let lo = f.min;
		let hi = f.max;
		if (m[1] !== '*') {
			const [a, b] = m[1].split('-');
			const x = value(a, f);
			const y = b === undefined ? (m[2] === undefined ? x : f.max) : value(b, f);
			if (x === null || y === null) return `${LABELS[i]}: "${part}" is outside ${f.min}–${f.max}`;
			if (y < x) return `${LABELS[i]}: "${part}" runs backwards`;
			lo = x;
			hi = y;
		}
		for (let n = lo; n <= hi; n += step) out.add(i === 4 && n === 7 ? 0 : n);
	}
	return out;
}

/** Parses `m h dom mon dow`: numbers, `*`, ranges `a-b`, steps `/n`, lists `a,b`, month and weekday names. */
export function parseCron(expr: string): CronParse {
	const parts = expr.trim().split(/\s+/);
	if (parts.length !== 5)
		return { ok: false, error: `a cron expression has 5 fields (minute hour day month weekday), this has ${parts[0] === '' ? 0 : parts.length}` };
	const sets: Set<number>[] = [];
	for (let i = 0; i < 5; i++) {
		const s = field(parts[i], i);
		if (typeof s === 'string') return { ok: false, error: s };
		sets.push(s);
	}
	const [minutes, hours, days, months, weekdays] = sets;
	return { ok: true, cron: { minutes, hours, days, months, weekdays, anyDay: !parts[2].startsWith('*') && !parts[4].startsWith('*') } };
}

function dayMatches(c: Cron, t: Date): boolean {
	const dom = c.days.has(t.getUTCDate());
	const dow = c.weekdays.has(t.getUTCDay());
	if (c.anyDay) return dom || dow;
	return dom && dow;
}

/** Steps to give up after: about ten years of months, days and hours (an expression like `0 0 31 2 *` never runs). */
const GIVE_UP = 100_000;

/** The first slot at or after `from` (rounded up to a whole minute), or null when the expression never runs. */
export function slotAtOrAfter(c: Cron, from: Date): Date | null {
	const t = new Date(Math.ceil(from.getTime() / 60_000) * 60_000);
	for (let i = 0; i < GIVE_UP; i++) {
		if (!c.months.has(t.getUTCMonth() + 1)) {
			t.setUTCMonth(t.getUTCMonth() + 1, 1);
			t.setUTCHours(0, 0, 0, 0);
		} else if (!dayMatches(c, t)) {
			t.setUTCDate(t.getUTCDate() + 1);
			t.setUTCHours(0, 0, 0, 0);
		} else if (!c.hours.has(t.getUTCHours())) {
			t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
		} else if (!c.minutes.has(t.getUTCMinutes())) {
			t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
		} else return t;
	}
	return null;
}

/** The first slot strictly after `after`. */
export function slotAfter(c: Cron, after: Date): Date | null {
	return slotAtOrAfter(c, new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000));
}

/** The next `n` slots after `from`. */
export function nextSlots(c: Cron, from: Date, n: number): Date[] {
	const out: Date[] = [];
	let t: Date | null = from;
	while (out.length < n && t) {
		t = out.length === 0 ? slotAtOrAfter(c, from) : slotAfter(c, t);
		if (t) out.push(t);
	}
	return out;
}

const HOUR_MS = 3_600_000;

/**
 * How late a slot may still run (a worker that was down comes back): half the time to the next
 * slot, at most an hour. Later than that the slot is recorded as missed.
 */
export function graceMs(c: Cron, slot: Date): number {
	const next = slotAfter(c, slot);
	return next ? Math.min((next.getTime() - slot.getTime()) / 2, HOUR_MS) : HOUR_MS;
}
