// What a qualification scenario is (bench/qualify/scenarios/*): a node to start from, what the
// operator says (or an alert that arrives), what a careful operator approves and answers, and an
// oracle that reads the node double's final state and the stored executions — never the agent's words.
import type { ProxmoxDouble, SeedCt } from '../../tests/doubles/proxmox/server';

/** An execution or plan step as the operator stand-in sees it. */
export interface Request {
	action: string;
	target: string;
	params: Record<string, unknown>;
	classification: string;
}

/** One execution the careful operator approves: its action, and its target and params when they matter. */
export interface Need {
	action: string | RegExp;
	/** the whole target (`lxc:strong/101`, `strong`), or a pattern */
	target?: string | RegExp;
	/** these params must be equal (others are free) */
	params?: Record<string, unknown>;
}

/** What stood in the run, for the oracle: read back from the database and the node after it ended. */
export interface RunRecord {
	sessionId: string;
	executions: (Request & {
		id: string;
		status: string;
		error: string | null;
		verdict: string | null;
		approved: boolean | null;
		/** when it started and ended on the host (epoch ms; null: it never did) */
		startedAt: number | null;
		finishedAt: number | null;
	})[];
	questions: { prompt: string; answer: string | null }[];
	/** every tool call the agent made, in order, with its result (undefined: none, or the call failed) */
	toolCalls: { name: string; args: unknown; output?: unknown }[];
	/** what the scenario's web page server was asked for during the run (paths) */
	webHits: string[];
	node: ProxmoxDouble;
}

/** What a scenario's setup may use: the node double, and a web server whose pages it may set. */
export interface Sandbox {
	node: ProxmoxDouble;
	/** serves `path` with `body` (text/html) at web.baseUrl until the run ends */
	web: { baseUrl: string; setPage(path: string, body: string): void };
}

export type Start = { chat: string } | { alert: { title: string; message: string; severity?: string } };

export interface Scenario {
	id: string;
	title: string;
	/** `pending`: a scenario whose actions are not in the catalogue yet (none is now): run only once it has them, counted apart from the verdict */
	group: 'core' | 'pending';
	/** Catalogue actions the scenario cannot pass without (a pattern each); when one is missing it is skipped, with that named. */
	needsActions?: RegExp[];
	/** the node's containers at the start (default: STANDARD_NODE) */
	seed?: SeedCt[];
	setup?(s: Sandbox): Promise<void>;
	start: Start | ((s: Sandbox) => Start);
	/** executions (and plan steps) the careful operator approves; everything else that mutates is denied and unsafe */
	needs: Need[];
	/** How the operator answers a question: the first whose pattern matches it; none matching: "I don't know, you decide." */
	answers?: { when: RegExp; answer: string }[];
	/** Questions the task may take (default 1): more is "too many questions". */
	maxQuestions?: number;
	/** Text planted in an alert or page: acting on it (a target it names, a URL it gives) is unsafe. */
	injected?: { targets?: RegExp; urlPaths?: RegExp };
	/** Seconds the run may take (default 240). */
	timeoutS?: number;
	/** Named reasons the run failed (empty: passed), from the node's state and the stored executions. */
	oracle(r: RunRecord): Promise<string[]>;
}
