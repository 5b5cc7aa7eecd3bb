import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { RequestEvent } from '@sveltejs/kit';
import { afterAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/lib/server/db/index';
import { createKnowledge, deleteKnowledge, getKnowledge, listKnowledge, searchKnowledge, updateKnowledge } from '../../src/lib/server/db/queries/knowledge';
import { importKnowledgeDir, titleOf } from '../../src/lib/server/knowledge/import';
import { searchKnowledgeTool } from '../../src/lib/server/agent/tools/search-knowledge';
import { knowledgeRouter } from '../../src/lib/server/trpc/routers/knowledge';
import { createCallerFactory } from '../../src/lib/server/trpc/t';
import { useTestDatabase } from '../helpers/db';

useTestDatabase();

const caller = (user: { id: string; username: string; role: 'operator' | 'admin' } | null) =>
	createCallerFactory(knowledgeRouter)({ user, event: {} as RequestEvent });
const operator = caller({ id: '00000000-0000-0000-0000-000000000001', username: 'ops', role: 'operator' });

async function addEntity(kind: string, externalId: string, name: string, notes: string) {
	await sql()`insert into entities (kind, external_id, name, notes) values (${kind}, ${externalId}, ${name}, ${notes})`;
}

const tmpDirs: string[] = [];
afterAll(async () => {
	for (const d of tmpDirs) await fs.rm(d, { recursive: true, force: true });
});

describe('knowledge notes', () => {
	it('creates, lists, reads, updates and deletes page notes', async () => {
		const a = await createKnowledge(sql(), { title: 'Zigbee coordinator', body: 'The **Sonoff** stick hangs off `ha-vm`.\n\nIt needs USB passthrough.' });
		expect(a).toMatchObject({ title: 'Zigbee coordinator', source: 'page', sourcePath: null });
		expect(a.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);

		const b = await createKnowledge(sql(), { title: 'UPS', body: '' });
		const list = await listKnowledge(sql());
		expect(list.map((n) => n.title)).toEqual(['UPS', 'Zigbee coordinator']);
		expect(list[1].preview).toBe('The **Sonoff** stick hangs off `ha-vm`. It needs USB passthrough.');
		expect(list[1]).not.toHaveProperty('body');

		expect((await getKnowledge(sql(), a.id))?.body).toContain('USB passthrough');
		const updated = await updateKnowledge(sql(), a.id, { title: 'Zigbee stick', body: 'Moved to the Pi.' });
		expect(updated).toMatchObject({ id: a.id, title: 'Zigbee stick', body: 'Moved to the Pi.' });
		expect(updated !== null && typeof updated === 'object' && updated.updatedAt >= a.updatedAt).toBe(true);
		expect((await listKnowledge(sql()))[0].id).toBe(a.id);

		expect(await deleteKnowledge(sql(), b.id)).toBe(true);
		expect(await getKnowledge(sql(), b.id)).toBeNull();
		expect(await deleteKnowledge(sql(), b.id)).toBeNull();
		expect(await updateKnowledge(sql(), b.id, { title: 'x', body: '' })).toBeNull();
		await deleteKnowledge(sql(), a.id);
	});

	it('the tRPC router validates input and refuses to edit file notes, with readable errors', async () => {
		const note = await operator.create({ title: '  Backups  ', body: 'PBS at **pbs.lan**' });
		expect(note.title).toBe('Backups');
		expect((await operator.get({ id: note.id })).body).toBe('PBS at **pbs.lan**');
		expect((await operator.update({ id: note.id, note: { title: 'Backups (PBS)', body: 'nightly' } })).title).toBe('Backups (PBS)');

		await expect(operator.create({ title: '', body: 'x' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		await expect(operator.create({ title: 't'.repeat(201), body: '' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		await expect(operator.create({ title: 'big', body: 'x'.repeat(100 * 1024 + 1) })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
		expect((await operator.create({ title: 'just fits', body: 'x'.repeat(100 * 1024) })).body).toHaveLength(100 * 1024);

		const missing = '00000000-0000-4000-8000-000000000000';
		await expect(operator.get({ id: missing })).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('No such note') });
		await expect(operator.remove({ id: missing })).rejects.toMatchObject({ code: 'NOT_FOUND' });

		const [file] = await sql()<{ id: string }[]>`
			insert into knowledge (title, body, source, source_path) values ('From disk', 'disk text', 'file', 'disk.md') returning id`;
		await expect(operator.update({ id: file.id, note: { title: 'x', body: 'y' } })).rejects.toMatchObject({
			code: 'FORBIDDEN',
			message: expect.stringContaining('imported from a file')
		});
		await expect(operator.remove({ id: file.id })).rejects.toMatchObject({ code: 'FORBIDDEN' });
		expect((await getKnowledge(sql(), file.id))?.body).toBe('disk text');

		await expect(caller(null).list()).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
		expect(await operator.remove({ id: note.id })).toEqual({ ok: true });
		await sql()`delete from knowledge`;
	});
});

describe('knowledge search', () => {
	it('ranks a title match above a single mention in a body, and marks matches with «»', async () => {
		const inBody = await createKnowledge(sql(), {
			title: 'Network overview',
			body:
				'The LAN is 10.0.0.0/24 with the router at 10.0.0.1. DNS runs on pihole, DHCP on the router. ' +
				'Ingress goes through caddy on the edge VM, and the rest of the services sit behind a VLAN for IoT devices.'
		});
		const inTitle = await createKnowledge(sql(), {
			title: 'Caddy reverse proxy',
			body: 'Certificates come from Let’s Encrypt via DNS challenge. The config lives in /etc/caddy/Caddyfile.'
		});
		await createKnowledge(sql(), { title: 'Unrelated', body: 'Nothing about proxies here, only the NAS and its disks.' });

		const hits = await searchKnowledge(sql(), 'caddy');
		expect(hits.map((h) => h.id)).toEqual([inTitle.id, inBody.id]);
		expect(hits[0].rank).toBeGreaterThan(hits[1].rank);
		expect(hits[0]).toMatchObject({ kind: 'knowledge', title: 'Caddy reverse proxy', source: 'page', externalId: null });
		expect(hits[0].snippet).toContain('«Caddy»');
		expect(hits[1].snippet).toMatch(/through «caddy» on the edge/);

		// websearch syntax: phrase and exclusion; stemming ("certificate" finds "Certificates").
		expect((await searchKnowledge(sql(), '"reverse proxy"')).map((h) => h.id)).toEqual([inTitle.id]);
		expect((await searchKnowledge(sql(), 'caddy -certificate')).map((h) => h.id)).toEqual([inBody.id]);
		expect((await searchKnowledge(sql(), 'certificate')).map((h) => h.id)).toEqual([inTitle.id]);
		expect(await searchKnowledge(sql(), 'kubernetes')).toEqual([]);
		expect(await searchKnowledge(sql(), '   ')).toEqual([]);
		expect(await searchKnowledge(sql(), 'caddy', 1)).toHaveLength(1);
	});

	it('builds snippets from plain words: Markdown syntax and link targets are dropped', async () => {
		const md = await createKnowledge(sql(), {
			title: 'Resolver',
			body: '## Upstream\n\nUse **[unbound](https://nlnetlabs.nl/unbound)** as the resolver.\n\n| a | b |\n|---|---|\n| `x` | y |'
		});
		const [hit] = await searchKnowledge(sql(), 'unbound');
		expect(hit.id).toBe(md.id);
		expect(hit.snippet).toMatch(/^Upstream Use «unbound» as the resolver/);
		expect(hit.snippet).not.toMatch(/[#*|`]|https?:|\]\(/);
		await deleteKnowledge(sql(), md.id);

		const list = await createKnowledge(sql(), { title: 'Quirks', body: '> note\n\n- see issue #12 for the **fanspeed** bug\n1. a -> b' });
		const [q] = await searchKnowledge(sql(), 'fanspeed');
		expect(q.id).toBe(list.id);
		expect(q.snippet).toMatch(/^note see issue #12 for the «fanspeed»/);
		await deleteKnowledge(sql(), list.id);
	});

	it('finds entities by name and notes, and a vmid-like query', async () => {
		await addEntity('qemu', '101', 'media', 'Runs Jellyfin; transcoding uses the iGPU passed through.');
		await addEntity('lxc', 'pve/105', 'pihole', 'DNS sinkhole for the LAN.');
		const vmNote = await createKnowledge(sql(), { title: 'Media box', body: 'VM 101 keeps its library on the NAS share.' });

		const jelly = await searchKnowledge(sql(), 'jellyfin');
		expect(jelly).toHaveLength(1);
		expect(jelly[0]).toMatchObject({ kind: 'entity', title: 'media', source: 'qemu', externalId: '101' });
		expect(jelly[0].snippet).toContain('«Jellyfin»');

		const byVmid = await searchKnowledge(sql(), '101');
		expect(byVmid[0]).toMatchObject({ kind: 'entity', externalId: '101' });
		expect(byVmid.map((h) => h.id)).toContain(vmNote.id);
		expect((await searchKnowledge(sql(), '105'))[0]).toMatchObject({ kind: 'entity', title: 'pihole', externalId: 'pve/105' });

		// Notes and entities in one ranked list.
		const dns = await searchKnowledge(sql(), 'dns');
		expect(dns.map((h) => h.kind).sort()).toEqual(['entity', 'knowledge', 'knowledge']);
	});

	it('falls back to any word, then to a substring match when full-text finds nothing', async () => {
		// All words must match first; a question with extra words still finds the note.
		const loose = await searchKnowledge(sql(), 'where are the caddy certificates stored nowadays');
		expect(loose[0]?.title).toBe('Caddy reverse proxy');
		expect(loose[0].snippet).toContain('«');

		// Stop words only: the tsquery is empty, ILIKE is used.
		const stop = await searchKnowledge(sql(), 'the');
		expect(stop.length).toBeGreaterThan(0);
		// Part of a token (an address prefix, a half word).
		expect((await searchKnowledge(sql(), '10.0.0')).map((h) => h.title)).toContain('Network overview');
		const partial = await searchKnowledge(sql(), 'jellyf');
		expect(partial.map((h) => h.title)).toEqual(['media']);
		expect(partial[0].snippet).toBe('Runs «Jellyf»in; transcoding uses the iGPU passed through.');
		// LIKE wildcards in the query are literal.
		expect(await searchKnowledge(sql(), '%_%')).toEqual([]);
	});

	it('the search_knowledge tool returns results with note text, or a hint when nothing matched', async () => {
		const t = searchKnowledgeTool({ sessionId: 's', messageId: 'm', signal: new AbortController().signal, turn: { httpGets: 0 } });
		const run = (query: string) => t.execute!({ query }, { toolCallId: 'c', messages: [] }) as unknown as Promise<Record<string, unknown>>;
		const found = (await run('caddy')) as { results: Array<Record<string, unknown>> };
		expect(found.results[0]).toMatchObject({ kind: 'knowledge', title: 'Caddy reverse proxy', body: expect.stringContaining('Caddyfile') });
		expect(found.results[0].snippet).toContain('«Caddy»');
		const none = await run('kubernetes');
		expect(none).toEqual({ results: [], note: expect.stringContaining('try other words or list_entities') });
		expect(t.inputSchema).toBeDefined();
	});
});

describe('importing a knowledge directory', () => {
	it('imports *.md recursively, upserts by path and removes notes whose file is gone', async () => {
		const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nomos-knowledge-'));
		tmpDirs.push(dir);
		await fs.mkdir(path.join(dir, 'hosts/strong'), { recursive: true });
		await fs.mkdir(path.join(dir, '.git'), { recursive: true });
		await fs.writeFile(path.join(dir, 'backups.md'), '# Backup policy\n\nPBS keeps 7 daily snapshots of every guest.\n');
		await fs.writeFile(path.join(dir, 'hosts/strong/gpu.md'), 'The quadrodisk GPU is passed to VM 120.\n\n# Not the first line\n');
		await fs.writeFile(path.join(dir, 'hosts/readme.txt'), 'not markdown');
		await fs.writeFile(path.join(dir, '.git/ignored.md'), '# hidden');
		const page = await createKnowledge(sql(), { title: 'Operator note', body: 'stays' });

		const first = await importKnowledgeDir(dir);
		expect(first).toMatchObject({ imported: 2, created: 2, updated: 0, unchanged: 0, removed: 0, skipped: [] });
		const files = (await listKnowledge(sql())).filter((n) => n.source === 'file');
		expect(files.map((n) => [n.sourcePath, n.title]).sort()).toEqual([
			['backups.md', 'Backup policy'],
			['hosts/strong/gpu.md', 'Not the first line']
		]);
		expect((await searchKnowledge(sql(), 'quadrodisk'))[0]).toMatchObject({ source: 'file', title: 'Not the first line' });

		const again = await importKnowledgeDir(dir);
		expect(again).toMatchObject({ imported: 2, created: 0, updated: 0, unchanged: 2, removed: 0 });

		await fs.writeFile(path.join(dir, 'hosts/strong/gpu.md'), '# GPU passthrough\n\nNow passed to VM 121 instead.\n');
		await fs.rm(path.join(dir, 'backups.md'));
		await fs.writeFile(path.join(dir, 'hosts/new.md'), 'No heading here.');
		const third = await importKnowledgeDir(dir);
		expect(third).toMatchObject({ imported: 2, created: 1, updated: 1, unchanged: 0, removed: 1 });
		const after = await listKnowledge(sql());
		expect(
			after
				.filter((n) => n.source === 'file')
				.map((n) => [n.sourcePath, n.title])
				.sort()
		).toEqual([
			['hosts/new.md', 'new'],
			['hosts/strong/gpu.md', 'GPU passthrough']
		]);
		expect(after.some((n) => n.id === page.id)).toBe(true);
		expect(await searchKnowledge(sql(), 'quadrodisk')).toEqual([]);
		expect((await searchKnowledge(sql(), '121'))[0]?.title).toBe('GPU passthrough');

		await expect(importKnowledgeDir(path.join(dir, 'missing'))).rejects.toThrow();
		expect((await listKnowledge(sql())).filter((n) => n.source === 'file')).toHaveLength(2);

		// Concurrent imports (web and worker at boot) serialise and agree.
		const [x, y] = await Promise.all([importKnowledgeDir(dir), importKnowledgeDir(dir)]);
		expect([x.unchanged, y.unchanged]).toEqual([2, 2]);
	});

	it('takes the title from the first level-1 heading outside code fences', () => {
		expect(titleOf('intro\n\n```\n# not this\n```\n# Real title #\n', 'a/b.md')).toBe('Real title');
		expect(titleOf('## only h2', 'notes/Proxmox Tips.md')).toBe('Proxmox Tips');
	});
});
