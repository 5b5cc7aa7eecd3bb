// The chaos bench's slow-host mode (`--slow-host N`, issue #42): every host tool of the Proxmox double
// waits N seconds (a host mid-backup), no process is killed, and each session loops "propose a
// download + create + deploy plan → approve it → wait for its end" through the web processes' API.
// Counted afterwards: plans completed, how each of the others ended, and the false "absent"
// statements — an execution's error, result or step output, or a chat message, saying that a
// guest "does not exist" while the double holds it (goal 0) — beside the honest "could not check".
import type { Sql } from 'postgres';
import type { FallbackRule } from '../../tests/doubles/llm/types';
import { readContainers, readVms, setFaultIn, setHttpIn } from '../../tests/doubles/proxmox/state';
import { sleep, stats } from '../harness';
import type { DriverContext } from './sessions';

const TEMPLATE = 'ubuntu-22.04-standard_22.04-1_amd64.tar.zst';
const UNIT = '[Unit]\nDescription=App\n\n[Service]\nExecStart=/usr/bin/node /opt/app/server.js\n\n[Install]\nWantedBy=multi-user.target\n';
/** A session's plans create CT 500+i, 600+i, … (one per loop). */
const PLAN_VMID = 500;

/** The model proposes exactly the plan the operator's words carry (put before the chaos rules). */
export const PLAN_RULE: FallbackRule = {
	whenLastMessageRole: 'user',
	whenLastMessageMatches: '^chaos (\\S+) plan (\\{.*\\})$',
	respond: { toolCalls: [{ name: 'propose_plan', args: '$2' }] }
};

/** Makes every host tool of the double (state in `stateDir`) wait `seconds` first. */
export const slowTheHost = (stateDir: string, seconds: number) => setFaultIn(stateDir, 'slowHost', { ms: Math.round(seconds * 1000) });

export interface PlanRecord {
	session: number;
	k: number;
	vmid: number;
	planId?: string;
	/** the plan's end status, or where the loop stopped */
	outcome: string;
	error?: string | null;
	ms?: number;
}

function deployPlan(vmid: number) {
	return {
		title: `Deploy the app on CT ${vmid}`,
		steps: [
			{ action: 'pveam_download', target: 'strong', params: { storage: 'local', template: TEMPLATE }, why: 'the template' },
			{
				action: 'pct_create',
				target: 'strong',
				params: { vmid: String(vmid), hostname: `app${vmid}`, template: `local:vztmpl/${TEMPLATE}`, start: true },
				why: 'the CT'
			},
			{ action: 'pct_push', target: `strong/${vmid}`, params: { path: '/etc/systemd/system/app.service', content: UNIT }, why: 'its unit' },
			{ action: 'systemctl', target: `strong/${vmid}`, params: { unit: 'app.service', op: 'enable' }, why: 'start it at boot' },
			{ action: 'ct_http_check', target: `strong/${vmid}`, params: { port: 8080, path: '/healthz' }, why: 'it answers' }
		]
	};
}

async function until<T>(probe: () => Promise<T | undefined>, deadline: number): Promise<T | undefined> {
	for (;;) {
		const v = await probe().catch(() => undefined);
		if (v !== undefined) return v;
		if (Date.now() >= deadline) return undefined;
		await sleep(500);
	}
}

/** One session's plan loops until `stopping()`; each plan is waited for until `hardEnd()`. */
export async function runPlanLoops(
	ctx: DriverContext,
	stateDir: string,
	i: number,
	sessionId: string,
	stopping: () => boolean,
	hardEnd: () => number,
	records: PlanRecord[]
): Promise<void> {
	for (let k = 0; !stopping(); k++) {
		const vmid = PLAN_VMID + i + 100 * k;
		const rec: PlanRecord = { session: i, k, vmid, outcome: 'not-sent' };
		records.push(rec);
		const began = Date.now();
		const plan = deployPlan(vmid);
		await setHttpIn(stateDir, vmid, 8080, { paths: { '/healthz': { body: 'ok' } } });
		const sent = await ctx.operator.mutate('chat.send', { sessionId, text: `chaos s${i}k${k} plan ${JSON.stringify(plan)}` });
		if (sent.kind !== 'ok') {
			ctx.log(`session ${i} plan ${k}: not sent (${sent.kind === 'refused' ? sent.message : sent.error})`);
			await sleep(1000);
			continue;
		}
		const planId = await until(
			async () =>
				(await ctx.db<{ id: string }[]>`select id from plans where session_id = ${sessionId} and title = ${plan.title} and status = 'proposed'`)[0]?.id,
			Date.now() + ctx.patienceMs
		);
		if (!planId) {
			rec.outcome = 'not-proposed';
			continue;
		}
		rec.planId = planId;
		const approved = await ctx.operator.mutate('executions.decidePlan', { planId, decision: 'approved' });
		if (approved.kind !== 'ok') {
			rec.outcome = 'not-approved';
			rec.error = approved.kind === 'refused' ? approved.message : approved.error;
			continue;
		}
		const ended = await until(async () => {
			const [p] = await ctx.db<{ status: string; error: string | null }[]>`select status, error from plans where id = ${planId}`;
			return p && p.status !== 'approved' ? p : undefined;
		}, hardEnd());
		rec.outcome = ended?.status ?? 'no-end';
		rec.error = ended?.error ?? null;
		rec.ms = Date.now() - began;
		ctx.log(`session ${i} plan ${k} (CT ${vmid}): ${rec.outcome} in ${(rec.ms / 1000).toFixed(0)} s${rec.error ? ` — ${rec.error}` : ''}`);
	}
}

export interface AbsentFigures {
	/** "<CT|VM> <id> does not exist" said about a guest the double holds */
	falseAbsent: string[];
	/** the same words about guests it does not hold (true statements) */
	trueAbsent: number;
	/** "could not check …": unknown told as unknown */
	couldNotCheck: number;
	/** step rows that waited for the host (kind check, or a read asked again) */
	waitedSteps: number;
}

/** Reads what Nomos said in the sessions (executions and their plans, chat messages) against what the double holds. */
export async function measureAbsent(db: Sql, sessionIds: string[], stateDir: string): Promise<AbsentFigures> {
	const held = new Set([...(await readContainers(stateDir)).map((c) => `CT ${c.vmid}`), ...(await readVms(stateDir)).map((v) => `VM ${v.vmid}`)]);
	const runs = await db<{ id: string; text: string; steps: Array<{ kind?: string; stderrTail?: string }> }[]>`
		select id, concat_ws(' ', error, result, steps::text) as text, steps from executions
		where requested_by_session = any(${sessionIds}::uuid[]) or plan_id in (select id from plans where session_id = any(${sessionIds}::uuid[]))`;
	const msgs = await db<
		{ id: string; text: string }[]
	>`select id, parts::text as text from messages where session_id = any(${sessionIds}::uuid[]) and role <> 'user'`;
	const plans = await db<{ id: string; text: string }[]>`select id, coalesce(error, '') as text from plans where session_id = any(${sessionIds}::uuid[])`;
	const out: AbsentFigures = { falseAbsent: [], trueAbsent: 0, couldNotCheck: 0, waitedSteps: 0 };
	for (const { id, text } of [...runs, ...msgs, ...plans]) {
		for (const m of text.matchAll(/\b(CT|VM) (\d+) does not exist/g)) {
			if (held.has(`${m[1]} ${m[2]}`)) out.falseAbsent.push(`${m[0]} (in ${id})`);
			else out.trueAbsent++;
		}
		out.couldNotCheck += [...text.matchAll(/could not check/g)].length;
	}
	out.waitedSteps = runs.flatMap((r) => r.steps).filter((s) => s.kind === 'check' || /^attempt 1: /.test(s.stderrTail ?? '')).length;
	return out;
}

export function printSlowHostReport(o: {
	seconds: number;
	sessions: number;
	runMs: number;
	records: PlanRecord[];
	absent: AbsentFigures;
	settled: boolean;
}): void {
	const by = new Map<string, number>();
	for (const r of o.records) by.set(r.outcome, (by.get(r.outcome) ?? 0) + 1);
	const done = o.records.filter((r) => r.outcome === 'succeeded');
	const times = stats(done.map((r) => r.ms ?? NaN));
	const errors = [...new Set(o.records.filter((r) => r.error).map((r) => r.error!))].slice(0, 5);
	const line = (s: string) => console.log(s);
	line('');
	line(`== chaos: slow host (every host command +${o.seconds} s), ${o.sessions} sessions, ${(o.runMs / 1000).toFixed(0)} s, no kills ==`);
	line(
		`plans completed:            ${done.length} of ${o.records.filter((r) => r.outcome !== 'not-sent').length} started (${[...by].map(([k, v]) => `${k} ${v}`).join(', ')})`
	);
	line(`plan time (completed):      p50 ${(times.p50 / 1000).toFixed(0)} s, p95 ${(times.p95 / 1000).toFixed(0)} s, max ${(times.max / 1000).toFixed(0)} s`);
	line(
		`false "absent" statements:  ${o.absent.falseAbsent.length}   (goal 0)${o.absent.falseAbsent.length ? `: ${o.absent.falseAbsent.slice(0, 5).join('; ')}` : ''}`
	);
	line(`true "absent" statements:   ${o.absent.trueAbsent}`);
	line(`"could not check" said:     ${o.absent.couldNotCheck}`);
	line(`steps that waited for host: ${o.absent.waitedSteps}`);
	line(`settled at the end:         ${o.settled ? 'yes' : 'no'}`);
	for (const e of errors) line(`  error: ${e}`);
}
