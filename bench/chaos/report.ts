// The chaos bench's printout: the counts against their goals, then what lies behind each one.
import os from 'node:os';
import { stats } from '../harness';
import type { Fleet } from './fleet';
import type { Figures } from './measure';
import { killResumption, type KillWork } from './resumption';
import type { LoopRecord, Outcome } from './sessions';
import type { Untruth } from './truth';

export interface ReportInput {
	web: number;
	workers: number;
	sessions: number;
	seed: number;
	runMs: number;
	wallMs: number;
	chaosMs: number;
	settled: boolean;
	records: LoopRecord[];
	works: KillWork[];
	fleet: Fleet;
	operatorUnreachable: number;
	figures: Figures;
	untruths: Untruth[];
	cpu: (Record<string, number> & { wall: number; machine: number; self: number }) | null;
}

const GAVE_UP: Outcome[] = ['not-sent', 'no-request', 'not-approved', 'approval-refused', 'no-terminal', 'no-continuation'];
const s1 = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : 'never');
const list = (title: string, lines: string[], max = 10) => {
	if (!lines.length) return;
	console.log(`${title}:`);
	for (const l of lines.slice(0, max)) console.log(`  - ${l}`);
	if (lines.length > max) console.log(`  … and ${lines.length - max} more`);
};

export function printReport(r: ReportInput): void {
	const f = r.figures;
	const kills = r.fleet.kills;
	const sigkill = kills.filter((k) => k.signal === 'SIGKILL').length;
	const escalated = kills.filter((k) => k.escalated).length;
	const completed = r.records.filter((x) => x.outcome === 'completed').length;
	const gaveUp = r.records.filter((x) => x.outcome && GAVE_UP.includes(x.outcome));
	// Not resends: a call whose web process died before answering is made again through another
	// one (what a browser's retry does; the operator does nothing), and an approval the server
	// refused is a fault of the bench's script or of a rule, read in its log line.
	const refused = gaveUp.filter((x) => x.outcome === 'approval-refused').length;
	const repeats = r.records.reduce((n, x) => n + x.repeats, 0);
	const resends = f.resendMessages.length + gaveUp.length - refused;
	const slow = f.waits.reduce((n, w) => n + w.over, 0);
	const withWork = r.works.filter((w) => w.pieces.length);
	const resumption = withWork.map((w) => killResumption(w) ?? NaN);
	const never = resumption.filter((x) => x === Infinity).length;
	const rs = stats(resumption.filter(Number.isFinite));
	// p95 and max over all kills with work: one that never resumed makes them "never".
	const sorted = [...resumption].sort((a, b) => a - b);
	const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;

	console.log('');
	console.log(
		`Chaos: ${r.web} web + ${r.workers} worker processes on one Postgres, ${r.sessions} sessions, ${r.runMs / 1000} s of kills (seed ${r.seed}), then a drain ` +
			`(${r.settled ? 'settled' : 'NOT settled: work still in flight at its end'}); ${os.cpus().length} CPUs, wall ${s1(r.wallMs)} s`
	);
	console.log('');
	console.log('| count | value | goal |');
	console.log('|:--|--:|--:|');
	console.log(
		`| kills (SIGKILL / SIGTERM) | ${kills.length} (${sigkill} / ${kills.length - sigkill}${escalated ? `, ${escalated} SIGTERM escalated to SIGKILL` : ''}) | |`
	);
	console.log(`| loops completed | ${completed} of ${r.records.length} | |`);
	console.log(`| messages lost | ${f.lost.length} | 0 |`);
	console.log(`| approvals without a terminal execution | ${f.stranded.length} of ${f.approved} approved | 0 |`);
	console.log(`| mutations run twice | ${f.twice.length} | 0 |`);
	console.log(`| resends needed | ${resends} (${f.resendMessages.length} replies/notes saying so, ${gaveUp.length - refused} loops given up) | 0 |`);
	console.log(`| calls retried after their web process died (a browser retries too; not resends) | ${repeats} | |`);
	console.log(`| approvals refused by the server (see their log lines) | ${refused} | 0 |`);
	console.log(`| operator-visible waits over 15 s | ${slow} | 0 |`);
	console.log(`| untruthful outcomes | ${r.untruths.length} | 0 |`);
	console.log(`| interrupted runs of repeatable actions (pct_start, pct_stop…) | ${f.repeatableInterrupted.length} of ${f.repeatableApproved} approved | 0 |`);
	console.log(
		`| runs resumed after their worker stopped (ran again / already done) | ${f.resumed.n} (${f.resumed.ranAgain} / ${f.resumed.alreadyDone}${
			Object.keys(f.resumed.statuses).length
				? `; ${Object.entries(f.resumed.statuses)
						.map(([k, n]) => `${k} ${n}`)
						.join(', ')}`
				: ''
		}) | |`
	);
	console.log(
		`| kill → resumption p50 / p95 / max (s) | ${s1(q(0.5))} / ${s1(q(0.95))} / ${s1(q(1))} (${withWork.length} kills with work in flight${never ? `, ${never} never resumed` : ''}) | p95 ≤ 10 |`
	);
	console.log('');

	console.log('| operator-visible wait (s) | n | p50 | p95 | max | over 15 s | never ended |');
	console.log('|:--|--:|--:|--:|--:|--:|--:|');
	for (const w of f.waits)
		console.log(`| ${w.name} | ${w.values.length + w.unended} | ${s1(w.stats.p50)} | ${s1(w.stats.p95)} | ${s1(w.stats.max)} | ${w.over} | ${w.unended} |`);
	console.log('');

	const outcomes = new Map<string, number>();
	for (const x of r.records) outcomes.set(x.outcome ?? 'unfinished', (outcomes.get(x.outcome ?? 'unfinished') ?? 0) + 1);
	console.log(`loop outcomes: ${[...outcomes].map(([k, n]) => `${k} ${n}`).join(', ')}`);
	console.log(
		`executions: ${Object.entries(f.statuses)
			.map(([k, n]) => `${k} ${n}`)
			.join(', ')}; duplicate requests (one loop's request asked again): ${f.duplicateRequests}`
	);
	console.log(
		`web calls that found no process to answer: ${r.operatorUnreachable}; process exits nobody asked for: ${r.fleet.crashes.length}; restarts: ${r.fleet.members.reduce((n, m) => n + m.starts - 1, 0)}`
	);
	if (f.exhaustedJobs.length)
		console.log(
			`jobs that used up their attempts: ${f.exhaustedJobs.map((j) => `${j.task} ×${j.n}${j.lastError ? ` (last error: ${j.lastError.slice(0, 120)})` : ' (no error recorded)'}`).join('; ')}`
		);
	if (rs.n) console.log(`resumption over the kills whose work resumed: n ${rs.n}, p50 ${s1(rs.p50)} s, p95 ${s1(rs.p95)} s, max ${s1(rs.max)} s`);
	console.log('');

	const byDelay = withWork.map((w, i) => ({ w, d: resumption[i] })).sort((a, b) => b.d - a.d);
	list(
		'slowest resumptions',
		byDelay.slice(0, 8).map(({ w, d }) => {
			const pieces = w.pieces.map(
				(p) =>
					`${p.task}${p.executionId ? ` ${p.executionId.slice(0, 8)} (${p.statusAt0})` : ''}${p.sessionId ? ` session ${p.sessionId.slice(0, 8)}${p.sessionBusy ? '' : ' (idle)'}` : ''}: ${p.resumedAt ? `${s1(p.resumedAt - w.kill.at)} s, ${p.how}` : 'never'}`
			);
			return `${s1(d)} s — ${w.kill.signal} ${w.kill.name} at +${s1(w.kill.at - r.fleet.kills[0].at)} s from the first kill: ${pieces.join('; ')}`;
		})
	);
	list(
		'messages lost',
		f.lost.map((l) => `${l.id} (session ${l.session.slice(0, 8)}): ${l.why}`)
	);
	list(
		'approved, never terminal',
		f.stranded.map((x) => `${x.id} ${x.tag}: ${x.status}`)
	);
	list('mutations run twice', f.twice);
	list(
		'interrupted runs of repeatable actions',
		f.repeatableInterrupted.map((x) => `${x.id} ${x.action} ${x.tag}: ${x.error ?? 'no error'}`)
	);
	list(
		'untruthful outcomes',
		r.untruths.map((u) => `execution ${u.executionId} on CT ${u.vmid} said ${u.said}; the host (${u.when}): ${u.host}`)
	);
	list(
		'replies and notes asking the operator to go on',
		f.resendMessages.map((m) => `${m.id}: ${m.why}`)
	);
	list(
		'loops given up',
		gaveUp.map((x) => `${x.tag} (${x.kind} CT ${x.vmid}): ${x.outcome}`)
	);
	for (const w of f.waits) list(`slowest: ${w.name}`, w.worst, 3);

	if (r.cpu) {
		const c = r.cpu;
		const capacity = c.wall * os.cpus().length;
		const nomos = Math.max(0, c.all - c.postgres - c.pve - c.llm - c.self);
		const row = (name: string, v: number) => console.log(`| ${name} | ${v.toFixed(1)} | ${((100 * v) / capacity).toFixed(0)}% |`);
		console.log('');
		console.log(
			`CPU over the chaos window and drain: ${c.wall.toFixed(0)} s × ${os.cpus().length} cores = ${capacity.toFixed(0)} CPU-s (other work on this machine included in "everything else")`
		);
		console.log('');
		console.log('| process | CPU-s | share |');
		console.log('|:--|--:|--:|');
		row(`Nomos processes (${r.web} web + ${r.workers} worker, restarts included)`, nomos);
		row('Postgres (all backends)', c.postgres);
		row('Proxmox SSH double', c.pve);
		row('LLM double', c.llm);
		row('this bench (operators, measuring)', c.self);
		row('everything else on the machine', Math.max(0, c.machine - c.all));
		row('idle', Math.max(0, capacity - c.machine));
	}
	console.log('');
}
