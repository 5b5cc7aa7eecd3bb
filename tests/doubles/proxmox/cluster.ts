// A Proxmox VE cluster of doubles: each member is its own SSH server with its own node name and
// state dir (the guests it holds), and all share one folder whose cluster.json says which members
// exist, which are powered and which are still on the corosync link (see fake/cluster.mjs for how
// `pvesh get /cluster/resources`, `pvecm status` and the quorum check read it).
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startProxmoxDouble, type ProxmoxDouble, type SeedCt, type SeedVm } from './server';

export interface ClusterMemberSpec {
	name: string;
	seed?: SeedCt[];
	vms?: SeedVm[];
	/** its SSH port (default: a free one) */
	port?: number;
}

export interface ProxmoxClusterOptions {
	/** default 'homelab' */
	name?: string;
	members: ClusterMemberSpec[];
	delayMs?: number;
}

/** One member as cluster.json keeps it (the corosync address is made up; SSH goes to 127.0.0.1). */
export interface ClusterMember {
	name: string;
	nodeid: number;
	ip: string;
	stateDir: string;
	/** powered and running: false = down (others see it offline, and it answers nothing) */
	online: boolean;
	/** on the corosync link: false = it runs and answers SSH, but alone (no quorum in a 3-node cluster) */
	link: boolean;
}

export interface ProxmoxCluster {
	name: string;
	/** the shared folder (cluster.json) */
	dir: string;
	members: ProxmoxDouble[];
	member(name: string): ProxmoxDouble;
	/** the member that holds the guest (CT or VM), or undefined */
	holderOf(vmid: number): Promise<string | undefined>;
	/** moves a guest to another member behind Nomos's back (as a migration from the web UI would) */
	moveGuest(vmid: number, to: string): Promise<void>;
	/** shuts a member down (true) or starts it again: the others see it offline, its SSH connections close and new ones get nothing */
	setDown(name: string, down: boolean): Promise<void>;
	/** cuts a member's corosync link (true) or heals it: it still answers SSH, alone and (with 3 members) not quorate */
	setLinkDown(name: string, down: boolean): Promise<void>;
	close(): Promise<void>;
}

interface ClusterFile {
	name: string;
	configVersion: number;
	nodes: ClusterMember[];
}

async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
	const tmp = `${path}.${process.pid}.tmp`;
	await writeFile(tmp, JSON.stringify(value, null, 2) + '\n');
	await rename(tmp, path);
}

export async function startProxmoxCluster(opts: ProxmoxClusterOptions): Promise<ProxmoxCluster> {
	const name = opts.name ?? 'homelab';
	const dir = await mkdtemp(join(tmpdir(), 'pve-cluster-'));
	const file = join(dir, 'cluster.json');
	const members: ProxmoxDouble[] = [];
	const nodes: ClusterMember[] = [];
	try {
		for (const [i, spec] of opts.members.entries()) {
			const stateDir = join(dir, 'members', spec.name);
			await mkdir(stateDir, { recursive: true });
			nodes.push({ name: spec.name, nodeid: i + 1, ip: `10.10.10.${11 + i}`, stateDir, online: true, link: true });
			members.push(
				await startProxmoxDouble({ port: spec.port, nodeName: spec.name, stateDir, seed: spec.seed, vms: spec.vms, delayMs: opts.delayMs, clusterDir: dir })
			);
		}
	} catch (e) {
		await Promise.all(members.map((m) => m.close()));
		await rm(dir, { recursive: true, force: true });
		throw e;
	}
	await writeJsonAtomic(file, { name, configVersion: opts.members.length, nodes } satisfies ClusterFile);

	const read = async () => JSON.parse(await readFile(file, 'utf8')) as ClusterFile;
	const patch = async (node: string, change: Partial<ClusterMember>) => {
		const c = await read();
		const m = c.nodes.find((n) => n.name === node);
		if (!m) throw new Error(`no member ${node}`);
		Object.assign(m, change);
		await writeJsonAtomic(file, c);
	};
	const member = (node: string) => {
		const m = members.find((d) => d.nodeName === node);
		if (!m) throw new Error(`no member ${node}`);
		return m;
	};
	const holderOf = async (vmid: number) => {
		for (const m of members) {
			if ((await m.containers()).some((c) => c.vmid === vmid) || (await m.vms()).some((v) => v.vmid === vmid)) return m.nodeName;
		}
		return undefined;
	};

	return {
		name,
		dir,
		members,
		member,
		holderOf,
		async moveGuest(vmid, to) {
			const from = await holderOf(vmid);
			if (!from) throw new Error(`no member holds guest ${vmid}`);
			if (from === to) return;
			const src = member(from).stateDir;
			const dst = member(to).stateDir;
			const kind = (await member(from).containers()).some((c) => c.vmid === vmid) ? 'cts' : 'vms';
			await mkdir(join(dst, kind), { recursive: true });
			await mkdir(join(dst, 'guests'), { recursive: true });
			await rename(join(src, 'guests', String(vmid)), join(dst, 'guests', String(vmid))).catch((e: NodeJS.ErrnoException) => {
				if (e.code !== 'ENOENT') throw e;
			});
			await rename(join(src, kind, `${vmid}.json`), join(dst, kind, `${vmid}.json`));
		},
		async setDown(node, down) {
			await patch(node, { online: !down });
			// A shutdown stops sshd, which closes its connections; then the host answers nothing.
			if (down) member(node).dropConnections();
			member(node).setReachable(!down);
		},
		async setLinkDown(node, down) {
			await patch(node, { link: !down });
		},
		async close() {
			await Promise.all(members.map((m) => m.close()));
			await rm(dir, { recursive: true, force: true });
		}
	};
}
