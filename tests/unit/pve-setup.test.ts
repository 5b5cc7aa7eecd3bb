// Issue #48 item 6: the Proxmox commands Settings shows run in a shell as written, and what pvesh
// receives decodes to the header values, secret and body the hook expects.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDelivery } from '../../src/lib/server/watches/parse';
import { PVE_BODY_TEMPLATE, pveTargetName, pveWebhookCommands } from '../../src/lib/watches/pve-setup';

/** Runs the lines with a `pvesh` on PATH that prints each call's argv, one JSON array a line. */
function run(commands: string): string[][] {
	const bin = mkdtempSync(path.join(tmpdir(), 'pvesh-'));
	writeFileSync(path.join(bin, 'pvesh'), '#!/usr/bin/env node\nconsole.log(JSON.stringify(process.argv.slice(2)))\n');
	chmodSync(path.join(bin, 'pvesh'), 0o755);
	const out = execFileSync('bash', ['-c', commands], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' });
	return out
		.trim()
		.split('\n')
		.map((l) => JSON.parse(l) as string[]);
}
const opt = (argv: string[], name: string) => argv.flatMap((a, i) => (a === name ? [argv[i + 1]] : []));
const value = (prop: string) => Buffer.from(/,value=(.*)$/.exec(prop)![1], 'base64').toString('utf8');

describe('Proxmox webhook setup commands', () => {
	it('create the target with base64 headers, secret and body, and a matcher for it', () => {
		const secret = "nomos_hook_ab'c$d";
		const [target, matcher] = run(pveWebhookCommands({ url: 'https://nomos.lan/api/hooks/1234', hookName: 'pve main!', secret }));
		expect(target.slice(0, 2)).toEqual(['create', '/cluster/notifications/endpoints/webhook']);
		expect(opt(target, '--name')).toEqual(['nomos-pve-main']);
		expect(opt(target, '--method')).toEqual(['post']);
		expect(opt(target, '--url')).toEqual(['https://nomos.lan/api/hooks/1234']);
		expect(opt(target, '--header').map((h) => [h.split(',')[0], value(h)])).toEqual([
			['name=Content-Type', 'application/json'],
			['name=Authorization', 'Bearer {{ secrets.nomos }}']
		]);
		expect(opt(target, '--secret').map((s) => [s.split(',')[0], value(s)])).toEqual([['name=nomos', secret]]);
		const body = Buffer.from(opt(target, '--body')[0], 'base64').toString('utf8');
		expect(body).toBe(PVE_BODY_TEMPLATE);
		// What PVE makes of the template for a failed backup is what the proxmox parser reads.
		const filled = body
			.replace('{{ escape title }}', 'vzdump backup status (pve1): backup failed')
			.replace('{{ escape message }}', 'ERROR: No space left on device')
			.replace('{{ severity }}', 'error')
			.replace('{{ timestamp }}', '1796160000')
			.replace('{{ json fields }}', '{"type":"vzdump","hostname":"pve1"}');
		expect(parseDelivery('proxmox', JSON.parse(filled))).toMatchObject({ ok: true, alerts: [{ node: 'pve1', kind: 'vzdump' }] });

		expect(matcher.slice(0, 2)).toEqual(['create', '/cluster/notifications/matchers']);
		expect(opt(matcher, '--target')).toEqual(['nomos-pve-main']);
		expect(opt(matcher, '--mode')).toEqual(['any']);
		expect(opt(matcher, '--match-severity')).toEqual(['warning', 'error']);
		expect(opt(matcher, '--match-field')).toEqual(['exact:type=vzdump']);
	});

	it('without the secret (shown once only) leave a placeholder to fill in', () => {
		expect(pveWebhookCommands({ url: 'https://x/api/hooks/1', hookName: 'h', secret: null }).split('\n')[0]).toBe("NOMOS_SECRET='<the hook secret>'");
		expect(pveTargetName('---')).toBe('nomos-hook');
	});
});
