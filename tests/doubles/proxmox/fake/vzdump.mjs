// Fake `vzdump <vmid> --storage <id> --mode snapshot|suspend|stop [--compress zstd|gzip|lzo|0]
// [--prune-backups keep-…]` (LXC only). Logs on stderr, as the real tool. The archive takes room on
// its storage: one that does not fit fails with "No space left on device" and leaves no volume.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ctExists, fail, parseOpts, readJson, sleep } from './common.mjs';
import { loadHealth, saveHealth } from './health.mjs';
import { ctUsedBytes, storages } from './model.mjs';
import { applyPrune, parseRetention, pruneList } from './prune.mjs';

const EXT = { zstd: '.zst', gzip: '.gz', lzo: '.lzo', 0: '' };
const log = (s) => process.stderr.write(s + '\n');
const stamp = (d) => d.toISOString().replace(/\..*/, '').replace('T', ' ');

/** @param {import('./common.mjs').Ctx} ctx @param {string[]} args */
export async function vzdump(ctx, args) {
	const { positional, opts } = parseOpts(args, new Set(['all', 'remove', 'stdout', 'quiet']));
	const vmid = positional[0];
	if (!vmid) fail('400 Parameter verification failed.\nvmid: please specify at least one guest or use --all');
	const storage = opts.get('storage') ?? 'local';
	const mode = opts.get('mode') ?? 'snapshot';
	const compress = opts.get('compress') ?? '0';
	if (!['snapshot', 'suspend', 'stop'].includes(mode))
		fail(`400 Parameter verification failed.\nmode: value '${mode}' does not have a value in the enumeration 'snapshot, suspend, stop'`);
	if (!(compress in EXT))
		fail(`400 Parameter verification failed.\ncompress: value '${compress}' does not have a value in the enumeration '0, 1, gzip, lzo, zstd'`);
	const target = storages(ctx).find((x) => x.storage === storage);
	if (!target) fail(`storage '${storage}' does not exist`);
	if (!String(target.content).split(',').includes('backup')) fail(`storage '${storage}' does not support backups`);
	const retention = opts.get('prune-backups');
	const keep = retention === undefined ? undefined : parseRetention(retention);
	const cmdline = ['vzdump', ...args].join(' ');
	log(`INFO: starting new backup job: ${cmdline}`);
	const fail1 = (why) => {
		log(`ERROR: Backup of VM ${vmid} failed - ${why}`);
		log('INFO: Failed at ' + stamp(new Date()));
		log('INFO: Backup job finished with errors');
		fail('job errors');
	};
	if (!ctExists(ctx, vmid)) fail1(`unable to find VM '${vmid}'`);
	const ct = readJson(join(ctx.state, 'cts', `${vmid}.json`), {});
	const started = new Date();
	log(`INFO: Starting Backup of VM ${vmid} (lxc)`);
	log(`INFO: Backup started at ${stamp(started)}`);
	log(`INFO: status = ${ct.status}`);
	if (ct.lock) fail1(`CT is locked (${ct.lock})`);
	log(`INFO: CT Name: ${ct.hostname}`);
	log("INFO: including mount point rootfs ('/') in backup");
	let used = mode;
	if (mode === 'snapshot' && !String(ct.rootfs).startsWith('local-lvm:')) {
		log('INFO: mode failure - some volumes do not support snapshots');
		log("INFO: trying 'suspend' mode instead");
		used = 'suspend';
	}
	log(`INFO: backup mode: ${used}`);
	log('INFO: ionice priority: 7');
	if (used === 'snapshot') log("INFO: create storage snapshot 'vzdump'");
	const name = `vzdump-lxc-${vmid}-${started.toISOString().replace(/\..*/, '').replace(/[-:]/g, '_').replace('T', '-')}.tar${EXT[compress]}`;
	log(`INFO: creating vzdump archive '/var/lib/vz/dump/${name}'`);
	await sleep(ctx.delayMs);
	// tar reads what the root disk holds (pct status's `disk` while it runs); compression takes a third.
	const bytes = ctUsedBytes(ct);
	const archive = Math.round(bytes / 3);
	if (archive > target.avail) {
		// tar writes until the storage is full; zstd then fails its write and the job ends with errors.
		log(`INFO: zstd: error 70 : Write error : cannot write block : No space left on device`);
		log(`INFO: tar: -: Cannot write: Broken pipe`);
		log(`INFO: cleanup temporary 'vzdump' snapshot`);
		fail1(
			`command 'set -o pipefail && tar cpf - --totals ./etc/vzdump/pct.conf . | zstd --rsyncable '--threads=1' >/var/lib/vz/dump/${name}.dat' failed: exit code 70 (No space left on device)`
		);
	}
	log(`INFO: Total bytes written: ${bytes} (${(bytes / 1024 ** 2).toFixed(0)}MiB, 180MiB/s)`);
	if (used === 'snapshot') log("INFO: cleanup temporary 'vzdump' snapshot");
	log(`INFO: archive file size: ${(archive / 1024 ** 2).toFixed(0)}MB`);
	mkdirSync(join(ctx.state, 'dump'), { recursive: true });
	writeFileSync(join(ctx.state, 'dump', name), `fake backup of CT ${vmid}\n`);
	// …and a backup volume of the storage, as `pvesh get …/storage/local/content --content backup` lists it.
	const h = loadHealth(ctx);
	const vol = {
		volid: `${storage}:backup/${name}`,
		vmid: Number(vmid),
		subtype: 'lxc',
		size: archive,
		ctime: Math.floor(started.getTime() / 1000),
		format: `tar${EXT[compress] ? `.${EXT[compress].slice(1)}` : ''}`
	};
	saveHealth(ctx, { ...h, backups: { ...h.backups, [storage]: [...(h.backups?.[storage] ?? []), vol] } });
	if (keep) {
		log(`INFO: prune older backups with retention: ${retention}`);
		const gone = applyPrune(ctx, storage, pruneList(ctx, storage, keep, { vmid }));
		for (const v of gone) log(`INFO: removing backup '${v}'`);
		log(`INFO: pruned ${gone.length} backup(s) not covered by keep-retention policy`);
	}
	log(`INFO: Finished Backup of VM ${vmid} (00:00:0${1 + (Number(vmid) % 8)})`);
	log(`INFO: Backup finished at ${stamp(new Date())}`);
	log('INFO: Backup job finished successfully');
}
