// A Proxmox cluster as Settings → Hosts shows it: built by server/cluster/overview.ts from the
// `cluster` entity (the last quorate view, see db/queries/entities.ts recordClusterView) and the
// host entries.

/** One node's standing, load and guests. */
export interface ClusterNodeOverview {
	node: string;
	/** online | offline (down, as a quorate partition sees it) | unknown */
	status: string;
	/** when a quorate view first saw it offline (ISO 8601); null while online or when not known */
	offlineSince: string | null;
	/** it last read the cluster from outside a quorate partition (`Quorate: No`), since then */
	noQuorumSince: string | null;
	/**
	 * its host entry (null: none; commands for its guests are refused): its last error, when it last
	 * answered Nomos (null: never), and since when it has not (null: it answers, or it was never tried)
	 */
	host: { id: string; lastError: string | null; lastAnswerAt: string | null; unansweredSince: string | null } | null;
	/** an online node's figures at the last read; null when not known (offline, or never read) */
	freeMemMb: number | null;
	totalMemMb: number | null;
	cpuPct: number | null;
	cpus: number | null;
	uptimeSec: number | null;
	cts: number;
	vms: number;
	/** VM and CT templates, counted apart from the guests */
	templates: number;
}

export interface ClusterOverview {
	name: string;
	/** Nomos can reach a member in a quorate partition: changes can go through; false = changes are refused, reads still go */
	quorate: boolean;
	/** the member whose quorate view this is, and when it was read (ISO 8601) */
	readFrom: string;
	seenAt: string;
	nodes: ClusterNodeOverview[];
	/** what an "add it as a host" form starts with (the member that read the view: its port, user and, for an admin, its key paths; `mutationKeyPath` null when it has one key) */
	addDefaults: { port: number; username: string; keyPath: string; mutationKeyPath: string | null } | null;
}
