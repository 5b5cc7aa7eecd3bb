import { error } from '@sveltejs/kit';
import { auditFilter, type AuditEntry } from '$lib/schemas/audit';
import { requireAdmin } from '$lib/server/auth/guard';
import { sql } from '$lib/server/db/index';
import { listAudit } from '$lib/server/db/queries/audit';
import type { RequestHandler } from './$types';

const COLUMNS: Array<keyof AuditEntry> = ['id', 'at', 'actorName', 'action', 'route', 'subjectType', 'subjectId', 'sessionId', 'detail'];

/** One CSV field: quoted, quotes doubled; a leading = + - @ is prefixed so spreadsheets do not run it. */
function csvField(v: unknown): string {
	let s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
	if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
	return `"${s.replace(/"/g, '""')}"`;
}

/** The filtered trail as CSV (`?format=csv`, default) or JSON (`?format=json`). */
export const GET: RequestHandler = async ({ url, locals }) => {
	requireAdmin(locals);
	const format = url.searchParams.get('format') === 'json' ? 'json' : 'csv';
	const params = Object.fromEntries([...url.searchParams].filter(([k, v]) => k !== 'format' && v !== ''));
	const parsed = auditFilter.safeParse(params);
	if (!parsed.success) error(400, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
	const entries = await listAudit(sql(), parsed.data, 100_000);
	const stamp = new Date().toISOString().slice(0, 10);
	const headers = { 'cache-control': 'no-store', 'content-disposition': `attachment; filename="nomos-audit-${stamp}.${format}"` };
	if (format === 'json') return new Response(JSON.stringify(entries, null, 2), { headers: { ...headers, 'content-type': 'application/json' } });
	const lines = [COLUMNS.join(','), ...entries.map((e) => COLUMNS.map((c) => csvField(e[c])).join(','))];
	return new Response(lines.join('\r\n') + '\r\n', { headers: { ...headers, 'content-type': 'text/csv; charset=utf-8' } });
};
