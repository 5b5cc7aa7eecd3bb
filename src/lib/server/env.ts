import { z } from 'zod';
import { parsePrices } from '../schemas/prices';
import { LOG_LEVELS } from './log.js';

const bool = z.enum(['1', '0', 'true', 'false', 'on', 'off', 'yes', 'no']).transform((v) => ['1', 'true', 'on', 'yes'].includes(v));

const hostSchema = z.object({
	name: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9.-]{0,62}$/, 'host name: letters, digits, dots, dashes'),
	address: z.string().min(1),
	port: z.number().int().min(1).max(65535).default(22),
	user: z.string().min(1).default('root'),
	keyPath: z.string().min(1),
	/** A second key for approved mutations only (docs/security.md "Two keys"); keyPath then reads. */
	mutationKeyPath: z.string().min(1).optional(),
	hostKeyFingerprint: z
		.string()
		.regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'hostKeyFingerprint must look like SHA256:<43 base64 chars>')
		.optional()
});
export type HostConfig = z.infer<typeof hostSchema>;

const hostsJson = z.string().transform((raw, ctx) => {
	let parsed: unknown;
	try {
		parsed = JSON.parse(raw);
	} catch {
		ctx.addIssue({ code: 'custom', message: 'is not valid JSON' });
		return z.NEVER;
	}
	const result = z.array(hostSchema).safeParse(parsed);
	if (!result.success) {
		const issue = result.error.issues[0];
		ctx.addIssue({ code: 'custom', message: `${issue.path.join('.')}: ${issue.message}` });
		return z.NEVER;
	}
	return result.data;
});

const pricesJson = z.string().transform((raw, ctx) => {
	const r = parsePrices(raw);
	if (r.ok) return r.prices;
	ctx.addIssue({ code: 'custom', message: r.message });
	return z.NEVER;
});

const empty = (v: unknown) => (v === '' ? undefined : v);

/** Every setting Nomos reads. `.env.example` lists the same names with their defaults. */
export const envSchema = z.object({
	NODE_ENV: z.preprocess(empty, z.enum(['development', 'production', 'test']).default('development')),
	HOST: z.preprocess(empty, z.string().default('127.0.0.1')),
	PORT: z.preprocess(empty, z.coerce.number().int().min(0).max(65535).default(3000)),
	/** The app's public origin (adapter-node reads it too); links in webhook notices start with it unless Settings names one. */
	ORIGIN: z.preprocess(empty, z.url({ protocol: /^https?$/ }).optional()),
	DATABASE_URL: z.preprocess(empty, z.url({ protocol: /^postgres(ql)?$/ }).optional()),
	/**
	 * With DATABASE_URL: the role that owns Nomos's tables and runs the migrations; DATABASE_URL's
	 * role is then granted what the app needs and nothing more (db/roles.ts). Unset: DATABASE_URL's
	 * role does both, as before.
	 */
	NOMOS_OWNER_DATABASE_URL: z.preprocess(empty, z.url({ protocol: /^postgres(ql)?$/ }).optional()),
	NOMOS_DATA_DIR: z.preprocess(empty, z.string().default('./.nomos')),
	/**
	 * The key approvals are sealed with (db/seal.ts), at least 32 characters; unset: the file
	 * `seal-key` in NOMOS_DATA_DIR, made on first start. NOMOS_SEAL_KEY_PREVIOUS: the key before a
	 * rotation, still accepted when an approval is checked, never used for new ones.
	 */
	NOMOS_SEAL_KEY: z.preprocess(empty, z.string().min(32, 'NOMOS_SEAL_KEY must be at least 32 characters').optional()),
	NOMOS_SEAL_KEY_PREVIOUS: z.preprocess(empty, z.string().min(32, 'NOMOS_SEAL_KEY_PREVIOUS must be at least 32 characters').optional()),
	NOMOS_PG_PORT: z.preprocess(empty, z.coerce.number().int().min(1).max(65535).default(54329)),
	/** What the log says: fatal, error, warn, info, debug, trace or silent (JSON lines unless stdout is a terminal). */
	NOMOS_LOG_LEVEL: z.preprocess(empty, z.enum(LOG_LEVELS).default('info')),
	NOMOS_WORKER: z.preprocess(empty, bool.default(true)),
	NOMOS_WORKER_CONCURRENCY: z.preprocess(empty, z.coerce.number().int().min(1).max(64).default(4)),
	/**
	 * Approved executions run in slots of their own, beside NOMOS_WORKER_CONCURRENCY: an approved
	 * command never waits for turns to finish (a slow local model holds a slot for minutes). The
	 * default, 16, is what one host's pooled SSH connections carry at once (ssh/pool.ts: 2 × 8
	 * channels), so a batch approved together starts together; an execution mostly waits on SSH.
	 */
	NOMOS_EXECUTION_CONCURRENCY: z.preprocess(empty, z.coerce.number().int().min(1).max(64).default(16)),
	NOMOS_OPERATOR_USERNAME: z.preprocess(empty, z.string().min(1).default('admin')),
	NOMOS_OPERATOR_PASSWORD: z.preprocess(empty, z.string().min(8, 'must be at least 8 characters').optional()),
	NOMOS_SESSION_DAYS: z.preprocess(empty, z.coerce.number().positive().default(30)),
	NOMOS_HOSTS: z.preprocess(empty, hostsJson.optional()),
	NOMOS_KNOWLEDGE_DIR: z.preprocess(empty, z.string().optional()),
	OPENAI_BASE_URL: z.preprocess(empty, z.url().optional()),
	OPENAI_API_KEY: z.preprocess(empty, z.string().optional()),
	NOMOS_MODEL: z.preprocess(empty, z.string().optional()),
	/**
	 * More models of the same server an operator may choose per session (comma-separated); the
	 * default stays NOMOS_MODEL (or the first of these). Unset: the one model, no choice shown.
	 */
	NOMOS_MODELS: z.preprocess(
		empty,
		z
			.string()
			.transform((s) => [
				...new Set(
					s
						.split(',')
						.map((m) => m.trim())
						.filter(Boolean)
				)
			])
			.optional()
	),
	/** Stream replies when tools are offered (off for servers that drop streamed tool calls, e.g. some Ollama builds). */
	NOMOS_MODEL_STREAM_TOOLS: z.preprocess(empty, bool.default(true)),
	/** The model's context window in tokens, when the server does not say (Ollama's OpenAI endpoint runs at 4096 unless told). */
	NOMOS_CONTEXT_TOKENS: z.preprocess(empty, z.coerce.number().int().min(1024).optional()),
	NOMOS_MAX_STEPS: z.preprocess(empty, z.coerce.number().int().min(1).max(500).default(40)),
	/** Seconds without a byte from the model server before the chat says the model is loading (a cold load takes 15–60 s). */
	NOMOS_MODEL_LOADING_SECONDS: z.preprocess(empty, z.coerce.number().min(0.1).max(600).default(15)),
	/** Seconds a model call may wait for its first byte (a cold model load) before it counts as stalled. */
	NOMOS_MODEL_LOAD_TIMEOUT_SECONDS: z.preprocess(empty, z.coerce.number().min(1).max(3600).default(300)),
	NOMOS_HTTP_ALLOW: z.preprocess(
		empty,
		z
			.string()
			.default('')
			.transform((s) =>
				s
					.split(',')
					.map((h) => h.trim().toLowerCase())
					.filter(Boolean)
			)
	),
	NOMOS_ASSENT_WINDOW_MIN: z.preprocess(empty, z.coerce.number().positive().default(30)),
	NOMOS_APPROVAL_TTL_H: z.preprocess(empty, z.coerce.number().positive().default(24)),
	/**
	 * How long a request waits for its host's answer to the checks before approval (seconds, connect
	 * and read together): past it the card says "could not check before approval" and approval stays
	 * possible. It is inside the agent's turn, so it stays short; the runner checks again anyway.
	 */
	NOMOS_BEFORE_APPROVAL_S: z.preprocess(empty, z.coerce.number().positive().max(60).default(10)),
	/** Before a mutation of a container on snapshot-capable storage, take a `nomos-<id>` snapshot (and offer Roll back). */
	NOMOS_SNAPSHOT_BEFORE: z.preprocess(empty, bool.default(true)),
	/** Nomos snapshots kept per container (older `nomos-*` ones are deleted after a new one is taken). */
	NOMOS_SNAPSHOT_KEEP: z.preprocess(empty, z.coerce.number().int().min(1).max(100).default(3)),
	/** After a mutation that worked, check what fits it (CT running, unit active) as steps of their own. */
	NOMOS_HEALTH_AFTER: z.preprocess(empty, bool.default(true)),
	/**
	 * Minutes a read of a host may take before a run (is the guest there, can it be snapshotted)
	 * and for a read-back or health step: a slow host (mid-backup) is asked again with longer
	 * limits until then; no answer ends the run "not run: could not check …", never "does not exist".
	 */
	NOMOS_HOST_WAIT_MIN: z.preprocess(empty, z.coerce.number().positive().max(120).default(5)),
	/**
	 * The first limit of one read-back after a mutation (`pct status`, `pct config`, a verify step):
	 * a host that does not answer is asked again within NOMOS_HOST_WAIT_MIN, then the verdict is inconclusive.
	 */
	NOMOS_READBACK_TIMEOUT_S: z.preprocess(empty, z.coerce.number().positive().max(3600).default(60)),
	NOMOS_MAX_CONTINUATIONS: z.preprocess(empty, z.coerce.number().int().min(0).default(20)),
	NOMOS_INVENTORY_SYNC: z.preprocess(empty, bool.default(true)),
	/**
	 * How long one command of an inventory read may take (seconds): a host in the middle of a backup
	 * or a scrub takes 30–70 s per command. A read that runs out keeps the last known state, marked stale.
	 */
	NOMOS_INVENTORY_READ_S: z.preprocess(empty, z.coerce.number().positive().max(3600).default(90)),
	/** Events (the live-update log) older than this are pruned hourly. */
	NOMOS_EVENTS_RETENTION_DAYS: z.preprocess(empty, z.coerce.number().positive().default(14)),
	/**
	 * Approving a destructive or irreversible action asks for the password again when the browser
	 * session last gave it longer ago than this (minutes): a borrowed, unlocked laptop cannot destroy.
	 */
	NOMOS_STEP_UP_MIN: z.preprocess(empty, z.coerce.number().positive().default(10)),
	/** The longest a username or address is made to wait after repeated failed sign-ins. */
	NOMOS_LOGIN_BACKOFF_MAX_S: z.preprocess(empty, z.coerce.number().int().min(1).max(3600).default(300)),
	/** What one turn replays of the session's history at most (characters of JSON); older tool output is shortened first. */
	NOMOS_HISTORY_BUDGET_CHARS: z.preprocess(empty, z.coerce.number().int().min(10_000).default(200_000)),
	/**
	 * Tokens (o200k) of history one request sends at most before its oldest whole turns are folded
	 * into a summary the model writes (agent/summary.ts); less when the context window is smaller.
	 * 0: never fold (only NOMOS_HISTORY_BUDGET_CHARS cuts). 4000 keeps a 60-turn session's request under 8,000.
	 */
	NOMOS_HISTORY_TOKENS: z.preprocess(empty, z.coerce.number().int().min(0).default(4000)),
	/** Model prices, USD per million tokens: {"<model>": {"input": …, "output": …, "cached": …}}; cost is shown where known. */
	NOMOS_PRICES: z.preprocess(empty, pricesJson.optional()),
	/** Tokens (input + output, every model call) one turn may use; over it the turn stops before its next call. Off when unset. */
	NOMOS_TURN_TOKEN_BUDGET: z.preprocess(empty, z.coerce.number().int().min(1).optional()),
	/** An alert's investigation (no operator watching): its steps and tokens per turn. */
	NOMOS_WATCH_MAX_STEPS: z.preprocess(empty, z.coerce.number().int().min(1).max(500).default(12)),
	NOMOS_WATCH_TOKEN_BUDGET: z.preprocess(empty, z.coerce.number().int().min(1).default(120000)),
	/** Alert investigations that may run at once; in a storm the rest join open incidents (watches/incidents.ts). */
	NOMOS_MAX_INVESTIGATIONS: z.preprocess(empty, z.coerce.number().int().min(1).max(100).default(3))
});
export type Env = z.infer<typeof envSchema>;

export class ConfigError extends Error {}

/** Parses an environment; throws a ConfigError whose message is one line naming the variable. */
export function parseEnv(source: Record<string, string | undefined>): Env {
	const result = envSchema.safeParse(source);
	if (result.success) {
		if (result.data.NOMOS_OWNER_DATABASE_URL && !result.data.DATABASE_URL) {
			throw new ConfigError('Invalid configuration: NOMOS_OWNER_DATABASE_URL is set without DATABASE_URL (the embedded Postgres makes its own roles)');
		}
		return result.data;
	}
	const issue = result.error.issues[0];
	const name = String(issue.path[0] ?? 'environment');
	throw new ConfigError(`Invalid configuration: ${name} ${issue.message}`);
}

let cached: Env | undefined;

/** The process's validated configuration (parsed once). */
export function env(): Env {
	cached ??= parseEnv(process.env);
	return cached;
}

/** For tests and tools that change process.env after start. */
export function resetEnvCache(): void {
	cached = undefined;
}
