// Plain JavaScript (types in JSDoc), like db/embedded.js: server.js logs with it before the app's
// bundle has loaded, and the bundle, scripts and tasks import this same file.
import pino from 'pino';

/** The levels NOMOS_LOG_LEVEL accepts (env.ts validates the setting with this list). */
export const LOG_LEVELS = /** @type {const} */ (['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/**
 * Keys whose values never reach a log line, wherever they sit in a logged object (one level
 * deep and in request-like `headers`): passwords, tokens, cookies, keys.
 */
const SECRET_KEYS = [
	'password',
	'newPassword',
	'token',
	'sessionToken',
	'setupToken',
	'apiKey',
	'secret',
	'cookie',
	'authorization',
	'privateKey',
	'passphrase',
	'OPENAI_API_KEY',
	'NOMOS_OPERATOR_PASSWORD',
	'NOMOS_SEAL_KEY',
	'NOMOS_SEAL_KEY_PREVIOUS',
	'DATABASE_URL'
];
export const REDACT_PATHS = [
	...SECRET_KEYS,
	...SECRET_KEYS.map((k) => `*.${k}`),
	'headers.cookie',
	'headers.authorization',
	'*.headers.cookie',
	'*.headers.authorization'
];

/**
 * Credentials that can hide inside a message string (an error naming a URL, a header echoed
 * back): `scheme://user:secret@` and `Bearer <token>`. Redaction by key cannot see these.
 * @param {string} s
 */
export function scrubSecrets(s) {
	return s.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, '$1[redacted]@').replace(/\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/g, '$1[redacted]');
}

/**
 * NOMOS_LOG_LEVEL when it names a level, else `info`. An invalid value falls back to `info`
 * here: the boot reports it (env.ts). (Tests quiet their own process: tests/helpers/quiet-logs.ts.)
 * @param {Record<string, string | undefined>} vars
 * @returns {import('pino').LevelWithSilent}
 */
export function levelFrom(vars) {
	const v = vars.NOMOS_LOG_LEVEL;
	if (v && /** @type {readonly string[]} */ (LOG_LEVELS).includes(v)) return /** @type {import('pino').LevelWithSilent} */ (v);
	return 'info';
}

const LABELS = /** @type {Record<number, string>} */ ({ 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' });
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'area', 'msg']);

/**
 * One readable line for a terminal from one of pino's JSON lines (pino-pretty's job, in small):
 * `12:03:04 INFO  [worker] message key=value`, an error's stack indented below.
 * @param {string} line
 */
export function prettyLine(line) {
	/** @type {Record<string, unknown>} */
	let o;
	try {
		o = JSON.parse(line);
	} catch {
		return line;
	}
	const time = typeof o.time === 'string' ? o.time.slice(11, 19) : new Date(Number(o.time)).toISOString().slice(11, 19);
	const text = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
	const area = o.area ? ` [${text(o.area)}]` : '';
	let out = `${time} ${LABELS[Number(o.level)] ?? text(o.level)}${area} ${text(o.msg)}`;
	let stack = '';
	for (const [k, v] of Object.entries(o)) {
		if (HIDDEN.has(k)) continue;
		if (k === 'err' && v && typeof v === 'object') {
			const e = /** @type {{ message?: string; stack?: string }} */ (v);
			stack = e.stack ? `\n    ${e.stack.split('\n').join('\n    ')}` : '';
			if (!stack) out += ` err=${JSON.stringify(e.message)}`;
			continue;
		}
		out += ` ${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`;
	}
	return out + stack + '\n';
}

/**
 * @typedef {object} LoggerOptions
 * @property {import('pino').LevelWithSilent} [level]
 * @property {boolean} [pretty] readable lines instead of JSON (default: stdout is a terminal)
 * @property {{ write(s: string): unknown }} [dest] where lines go (default: stdout, synchronously, so nothing is lost at exit)
 */

/**
 * A pino logger: JSON lines (time ISO 8601, level as a number, `area`, `msg`) unless pretty;
 * secret keys redacted, credentials in message strings scrubbed.
 * @param {LoggerOptions} [opts]
 * @returns {import('pino').Logger}
 */
export function createLogger(opts = {}) {
	const pretty = opts.pretty ?? process.stdout.isTTY === true;
	const raw = opts.dest ?? pino.destination({ fd: 1, sync: true });
	const dest = pretty ? { write: (/** @type {string} */ s) => raw.write(prettyLine(s)) } : raw;
	return pino(
		{
			level: opts.level ?? levelFrom(process.env),
			base: { pid: process.pid },
			timestamp: pino.stdTimeFunctions.isoTime,
			redact: { paths: REDACT_PATHS, censor: '[redacted]' },
			hooks: {
				logMethod(args, method) {
					method.apply(
						this,
						/** @type {Parameters<typeof method>} */ (/** @type {unknown} */ (args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a))))
					);
				}
			}
		},
		dest
	);
}

const g = /** @type {{ __nomosLogger?: import('pino').Logger }} */ (globalThis);

/** The process's root logger (one per process, also across dev reloads). */
export function rootLogger() {
	g.__nomosLogger ??= createLogger();
	return g.__nomosLogger;
}

/**
 * A child logger for one part of Nomos (`boot`, `worker`, `http`, `realtime`, …); its lines carry `area`.
 * @param {string} area
 * @returns {import('pino').Logger}
 */
export function logger(area) {
	return rootLogger().child({ area });
}
