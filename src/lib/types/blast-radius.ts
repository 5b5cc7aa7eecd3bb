// What depends on an execution's target, as the approval card and the agent see it. Built by
// db/queries/blast-radius.ts from the inventory, the knowledge base and past executions.

/** A knowledge note that mentions the target; `matched` names what it mentions ("CT 101", "10.0.0.5"). */
export type BlastNote = { id: string; title: string; matched: string[] };

/** Another container whose config (description, tags…) or inventory notes name the target's IP or hostname. */
export type BlastReference = {
	ref: string;
	name: string;
	status: string | null;
	where: ('config' | 'notes')[];
	matched: string[];
};

/** A unit inside the target that Nomos has acted on or checked (the inventory itself lists no units). */
export type BlastService = { unit: string; lastAction: string; lastStatus: string; at: string };

/** A container on a host target. */
export type BlastContainer = { ref: string; name: string; status: string | null };

export type BlastRadius = {
	executionId: string;
	target: string;
	kind: 'lxc' | 'host' | 'other';
	/** false when the target is not (or no longer) in the inventory */
	known: boolean;
	name: string | null;
	/** the inventory's state: `running`/`stopped` for a CT, the node status (`online`) for a host */
	status: string | null;
	/** when the inventory last read the target (ISO 8601) */
	seenAt: string | null;
	/** the identifiers searched for: "CT 101", IPs, names */
	identifiers: string[];
	services: BlastService[];
	notes: BlastNote[];
	notesTotal: number;
	referencedBy: BlastReference[];
	referencedByTotal: number;
	/** only for a host target */
	containers: BlastContainer[];
	containersTotal: number;
	containersRunning: number;
};
