// The backup reads' three outcomes (issue #45): a read-back that failed or did not parse is
// inconclusive, never "gone"; pvesm's dry-run table is read exactly, and anything else refuses.
import { describe, expect, it } from 'vitest';
import { judgeRead } from '../../src/lib/server/executions/verdict';
import { backupsGone, newBackup } from '../../src/lib/server/proxmox/actions/read-backs';
import { markedRemove, parsePruneDryRun } from '../../src/lib/server/proxmox/backup-facts';

const A = 'local:backup/vzdump-lxc-101-2026_12_01-02_00_00.tar.zst';
const B = 'local:backup/vzdump-lxc-101-2026_12_02-02_00_00.tar.zst';
const ok = (stdout: string) => ({ exitCode: 0, timedOut: false, stdout, stderr: '' });

describe('backup read-backs', () => {
	const gone = backupsGone('local', '101', [A]);
	it('gone only when a list that parses does not hold it', () => {
		expect(judgeRead(gone, ok(JSON.stringify([{ volid: B, vmid: 101 }]))).verdict).toBe('verified');
		expect(judgeRead(gone, ok(JSON.stringify([{ volid: A, vmid: 101 }])))).toMatchObject({ verdict: 'still_failing', detail: expect.stringContaining(A) });
	});
	it('a read that failed, timed out or gave no list is inconclusive, never gone', () => {
		expect(judgeRead(gone, { exitCode: 255, timedOut: false, stdout: '', stderr: "storage 'local' is not online" }).verdict).toBe('inconclusive');
		expect(judgeRead(gone, { exitCode: null, timedOut: true, stdout: '', stderr: '' }).verdict).toBe('inconclusive');
		expect(judgeRead(gone, ok('')).verdict).toBe('inconclusive');
		expect(judgeRead(gone, ok('{"volid":"x"}')).verdict).toBe('inconclusive');
	});
	it('a new backup is one the list did not hold before the run', () => {
		const step = newBackup('local', '101', [A]);
		expect(judgeRead(step, ok(JSON.stringify([{ volid: A, vmid: 101 }]))).verdict).toBe('still_failing');
		expect(
			judgeRead(
				step,
				ok(
					JSON.stringify([
						{ volid: A, vmid: 101 },
						{ volid: B, vmid: 101 }
					])
				)
			)
		).toMatchObject({ verdict: 'verified', detail: expect.stringContaining(B) });
		expect(judgeRead(step, { exitCode: 2, timedOut: false, stdout: '', stderr: 'ipcc_send_rec failed' }).verdict).toBe('inconclusive');
	});
});

describe("pvesm's dry-run table", () => {
	it('reads each line and its mark; "No backups found" is an empty list', () => {
		const table = [
			'NOTE: this is only a preview and might not be what a subsequent',
			'prune call does if backups are removed/added in the meantime.',
			'',
			`${'Backup'.padEnd(60)} ${'Backup-ID'.padStart(15)} ${'Prune-Mark'.padStart(10)}`,
			`${A.padEnd(60)} ${'lxc/101'.padStart(15)} ${'remove'.padStart(10)}`,
			`${B.padEnd(60)} ${'lxc/101'.padStart(15)} ${'protected'.padStart(10)}`
		].join('\n');
		expect(parsePruneDryRun(table)).toEqual([
			{ volid: A, id: 'lxc/101', mark: 'remove' },
			{ volid: B, id: 'lxc/101', mark: 'protected' }
		]);
		expect(markedRemove(parsePruneDryRun(table), '101')).toEqual([A]);
		expect(markedRemove(parsePruneDryRun(table), '1010')).toEqual([]);
		expect(parsePruneDryRun('No backups found\n')).toEqual([]);
	});
	it('anything else throws (the prune is then not run)', () => {
		expect(() => parsePruneDryRun("storage 'nas' does not exist")).toThrow(/not a prune dry run/);
		expect(() => parsePruneDryRun(`Backup Backup-ID Prune-Mark\n${A} lxc/101 maybe`)).toThrow(/cannot read/);
	});
});
