// The one place dates and durations become words, for the browser and the server alike (no
// imports: `$lib/format` sits below both). Timestamps arrive as the ISO 8601 text every query
// returns (db/index.ts); Postgres's own "YYYY-MM-DD HH:MM:SS+00" form is read too.

function parse(ts: string): Date {
	return new Date(ts.includes('T') ? ts : ts.replace(' ', 'T').replace(/\+00$/, 'Z'));
}

/** A length of time in seconds: "45 s", "12 min", "3 h 5 min". */
export function formatDuration(seconds: number): string {
	if (seconds < 60) return `${seconds} s`;
	const m = Math.round(seconds / 60);
	if (m < 60) return `${m} min`;
	return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A step's run time in milliseconds: "0.4 s", "12.0 s". */
export function formatSeconds(ms: number): string {
	return `${(ms / 1000).toFixed(1)} s`;
}

/** How long ago a moment was: "40 s ago", "12 min ago", "3 h ago" (the future reads as "0 s ago"). */
export function formatAgo(ts: string, now: number = Date.now()): string {
	const s = Math.max(0, Math.round((now - parse(ts).getTime()) / 1000));
	return s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}

/** Time left on a countdown as m:ss ("29:05"); never negative. */
export function formatCountdown(ms: number): string {
	const left = Math.max(0, ms);
	return `${Math.floor(left / 60000)}:${String(Math.floor((left % 60000) / 1000)).padStart(2, '0')}`;
}

/** A moment in UTC, to the minute, the same for every reader: "2025-05-01 10:00 UTC" (exports, the review). */
export function formatWhen(ts: string): string {
	const d = parse(ts);
	if (Number.isNaN(d.getTime())) return ts;
	return d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}

/** A moment in the reader's own time zone and locale (date and time); `none` for no moment. */
export function formatLocal(ts: string | null | undefined, none = ''): string {
	return ts ? parse(ts).toLocaleString() : none;
}

/** The time of day of a moment to the minute ("14:02"), in the reader's time zone and locale. */
export function formatLocalMinute(ts: string): string {
	return parse(ts).toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' });
}

/** The time of day of a moment in the reader's time zone and locale; `none` for no moment. */
export function formatLocalTime(ts: string | null | undefined, none = ''): string {
	return ts ? parse(ts).toLocaleTimeString() : none;
}
