import { z } from 'zod';
import type { AlertHookKind } from '../db/schema';

/** One alert as Nomos keeps it, whatever sent it. Every string is bounded; none is trusted. */
export interface Alert {
	/** Deliveries with the same key belong to one group: one investigation. */
	groupKey: string;
	status: 'firing' | 'resolved';
	title: string;
	message: string;
	severity: 'critical' | 'error' | 'warning' | 'info' | 'unknown';
	labels: Record<string, string>;
	/** What it is about, as far as the sender said (null: it did not): the incident key's parts. */
	node: string | null;
	guest: string | null;
	kind: string;
	/** A one-line summary beside the title (Alertmanager's summary annotation), or ''. */
	summary: string;
}

/** Bounds on what one delivery may carry (the body itself is capped at MAX_BODY_BYTES before parsing). */
export const MAX_BODY_BYTES = 64 * 1024;
const MAX_ALERTS = 50;
const TITLE = 200;
const MESSAGE = 4000;

const text = (max: number) =>
	z
		.string()
		.max(100_000)
		.transform((s) => clip(s, max));
const labels = z
	.record(z.string().max(200), z.union([z.string(), z.number(), z.boolean(), z.null()]))
	.refine((r) => Object.keys(r).length <= 50, 'at most 50 labels')
	.transform((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [clip(k, 100), clip(String(v ?? ''), 300)])));

/**
 * The Proxmox VE notification webhook (PVE 8.3+), with the body template docs/watches.md gives:
 * `{"title":"{{ escape title }}","message":"{{ escape message }}","severity":"{{ severity }}","timestamp":{{ timestamp }},"fields":{{ json fields }}}`
 */
const proxmoxBody = z.object({
	title: text(TITLE),
	message: text(MESSAGE).default(''),
	severity: z.enum(['info', 'notice', 'warning', 'error', 'unknown']).default('unknown'),
	timestamp: z.number().optional(),
	fields: labels.default({})
});

/** Alertmanager's webhook payload, version 4. */
const alertmanagerBody = z.object({
	version: z.literal('4'),
	groupKey: z.string().min(1).max(2000),
	status: z.enum(['firing', 'resolved']),
	groupLabels: labels.default({}),
	commonLabels: labels.default({}),
	commonAnnotations: labels.default({}),
	alerts: z
		.array(
			z.object({
				status: z.enum(['firing', 'resolved']),
				labels: labels.default({}),
				annotations: labels.default({}),
				fingerprint: z.string().max(200).optional()
			})
		)
		.max(1000)
});

/** Anything that can send JSON (Uptime Kuma, Healthchecks, a script): one alert, or `{ alerts: [...] }`. */
const genericAlert = z.object({
	title: text(TITLE),
	message: text(MESSAGE).default(''),
	severity: z.string().max(40).default('warning'),
	status: z.enum(['firing', 'resolved']).default('firing'),
	key: z.string().min(1).max(500).optional(),
	labels: labels.default({})
});
const genericBody = z.union([genericAlert, z.object({ alerts: z.array(genericAlert).min(1).max(MAX_ALERTS) })]);

export type ParseResult = { ok: true; alerts: Alert[] } | { ok: false; error: string };

/** Reads one delivery of a hook's kind. The error names the field, never echoes the body. */
export function parseDelivery(kind: AlertHookKind, body: unknown): ParseResult {
	const r = PARSERS[kind](body);
	return r;
}

const PARSERS: Record<AlertHookKind, (body: unknown) => ParseResult> = {
	proxmox(body) {
		const p = proxmoxBody.safeParse(body);
		if (!p.success) return refused(p.error);
		const f = p.data.fields;
		const type = f.type || 'notification';
		// PVE sends no "resolved": a successful backup or replication ends the group a failure opened.
		const resolves = p.data.severity === 'info' && (type === 'vzdump' || type === 'replication');
		return {
			ok: true,
			alerts: [
				{
					groupKey: ['pve', type, f.hostname ?? '', f['job-id'] ?? ''].join(':'),
					status: resolves ? 'resolved' : 'firing',
					title: p.data.title || `Proxmox ${type}`,
					message: p.data.message,
					severity: severityOf(p.data.severity),
					labels: f,
					node: f.hostname || null,
					guest: f.vmid || null,
					kind: type,
					summary: ''
				}
			]
		};
	},
	alertmanager(body) {
		const p = alertmanagerBody.safeParse(body);
		if (!p.success) return refused(p.error);
		const d = p.data;
		const name = d.commonLabels.alertname ?? d.groupLabels.alertname ?? 'Alertmanager alert';
		// What it is about: the common labels, else the first alert's (never the exporter's `job`).
		const about = { ...(d.alerts[0]?.labels ?? {}), ...d.groupLabels, ...d.commonLabels };
		const { node, guest } = subjectOf(about);
		const where = guest ? `${guest}${node ? ` on ${node}` : ''}` : (node ?? '');
		const summary = d.commonAnnotations.summary ?? (d.alerts.length === 1 ? (d.alerts[0].annotations.summary ?? '') : '');
		const lines = d.alerts.slice(0, MAX_ALERTS).map((a) => {
			const what = a.annotations.summary ?? a.annotations.description ?? a.labels.alertname ?? '';
			const at = a.labels.instance ?? '';
			return `- ${a.status}${at ? ` ${at}` : ''}: ${what}`;
		});
		const more = d.alerts.length > MAX_ALERTS ? `\n(${d.alerts.length - MAX_ALERTS} more alerts in this group)` : '';
		return {
			ok: true,
			alerts: [
				{
					groupKey: `am:${d.groupKey}`,
					status: d.status,
					title: clip(`${name}${where ? ` on ${where}` : ''}`, TITLE),
					message: clip([d.commonAnnotations.summary, d.commonAnnotations.description, ...lines].filter(Boolean).join('\n') + more, MESSAGE),
					severity: severityOf(d.commonLabels.severity),
					labels: { ...d.groupLabels, ...d.commonLabels },
					node,
					guest,
					kind: name,
					summary: clip(summary, TITLE)
				}
			]
		};
	},
	generic(body) {
		const p = genericBody.safeParse(body);
		if (!p.success) return refused(p.error);
		const list = 'alerts' in p.data ? p.data.alerts : [p.data];
		return {
			ok: true,
			alerts: list.map((a) => ({
				groupKey: `gen:${a.key ?? a.title}`,
				status: a.status,
				title: a.title,
				message: a.message,
				severity: severityOf(a.severity),
				labels: a.labels,
				...subjectOf(a.labels),
				kind: a.labels.kind || a.labels.alertname || a.key || a.title,
				summary: ''
			}))
		};
	}
};

/**
 * The node and guest an alert's labels name: `node`/`nodename` (or pve-exporter's `id="node/pve1"`,
 * else the `instance`/`host` without its port) and `vmid`/`guest` (or `id="lxc/105"` → "CT 105").
 */
export function subjectOf(l: Record<string, string>): { node: string | null; guest: string | null } {
	const id = /^(node|lxc|qemu)\/(.+)$/.exec(l.id ?? '');
	const node = l.node || l.nodename || (id?.[1] === 'node' ? id[2] : '') || (l.instance || l.host || l.hostname || '').replace(/:\d+$/, '');
	const guestId = l.vmid || l.guest || (id && id[1] !== 'node' ? `${id[1] === 'lxc' ? 'CT' : 'VM'} ${id[2]}` : '');
	const guest = guestId && l.name && !guestId.includes(l.name) ? `${guestId} (${l.name})` : guestId;
	return { node: node || null, guest: guest || null };
}

/** The session title of an alert's investigation: its title, the node when the title does not name it, and the summary. */
export function sessionTitleOf(a: Pick<Alert, 'title' | 'node' | 'summary'>): string {
	const where = a.node && !a.title.includes(a.node) ? `${a.node}: ` : '';
	const title = `${where}${a.title}${a.summary && !a.title.includes(a.summary) ? ` — ${a.summary}` : ''}`;
	return clip(title, 80) || 'Alert';
}

/** Ranked signals of the line that says what went wrong (the first best-ranked line wins). */
const DECISIVE: [RegExp, number][] = [
	[/no space left|out of memory|\boom\b|read-only file system|i\/o error|permission denied|quota exceeded/i, 4],
	[/\b(ERROR|FAILED|FATAL|CRITICAL|PANIC)\b/, 3],
	[/\berror:|\bfailed\b|\bfailure\b|timed? ?out|unreachable|refused|not responding|\bdown\b/i, 2],
	[/\bwarn(ing)?\b|degraded|unable to/i, 1]
];

/** The message's line that says what went wrong, for the top of the alert card; null when no line says so. */
export function decisiveLine(message: string): string | null {
	let best: { line: string; score: number } | null = null;
	for (const raw of message.split('\n').slice(0, 500)) {
		const line = raw.trim();
		if (!line) continue;
		const score = DECISIVE.reduce((n, [re, w]) => (re.test(line) ? n + w : n), 0);
		if (score > 0 && (!best || score > best.score)) best = { line, score };
	}
	return best ? clip(best.line, 300) : null;
}

function severityOf(s: string | undefined): Alert['severity'] {
	const v = (s ?? '').toLowerCase();
	if (v === 'critical' || v === 'page' || v === 'fatal') return 'critical';
	if (v === 'error' || v === 'err' || v === 'high' || v === 'down') return 'error';
	if (v === 'warning' || v === 'warn' || v === 'medium') return 'warning';
	if (v === 'info' || v === 'notice' || v === 'low' || v === 'up') return 'info';
	return 'unknown';
}

function refused(e: z.ZodError): ParseResult {
	const i = e.issues[0];
	return { ok: false, error: `${i.path.join('.') || 'body'}: ${i.message}` };
}

function clip(s: string, max: number): string {
	// Control characters (but newlines and tabs) never reach the screen or the model.
	// eslint-disable-next-line no-control-regex -- stripping control characters is the point
	const clean = s.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
	return clean.length > max ? clean.slice(0, max - 1) + '…' : clean;
}
