// `npm start` entry: serves the built app (build/handler.js) on HOST:PORT with a clean shutdown.
import { existsSync } from 'node:fs';
import http from 'node:http';

// Settings from ./.env, if present; the environment wins.
if (existsSync('.env')) process.loadEnvFile('.env');

process.env.HOST ??= '127.0.0.1';
process.env.PORT ??= '3000';
// adapter-node assumes https unless told otherwise; direct http requests say so themselves,
// and a TLS proxy in front sets X-Forwarded-Proto (or set ORIGIN).
const markHttp = !process.env.ORIGIN && !process.env.PROTOCOL_HEADER;
if (markHttp) process.env.PROTOCOL_HEADER = 'x-forwarded-proto';

// The embedded Postgres starts now, while the app's code loads (half a second of a cold start);
// the app's boot takes it over. Nothing happens here with DATABASE_URL set.
const { logger } = await import('./src/lib/server/log.js');
const log = logger('http');
const pgLog = logger('postgres');
const { startEarlyPostgres } = await import('./src/lib/server/db/embedded.js');
startEarlyPostgres(process.env, (line) => (/FATAL|PANIC/.test(line) ? pgLog.error(line) : pgLog.info(line)));

const { liveness } = await import('./src/lib/server/health/liveness.js');
const { handler } = await import('./build/handler.js');

// The app loads its background parts (the worker, the model check) once the first request has
// been answered, so that answer does not wait for their code (see boot.ts, firstAnswer).
let answered = false;

const server = http.createServer((req, res) => {
	// Liveness without the app: answered even while the boot still waits for the database.
	if (req.url === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
		res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : JSON.stringify(liveness()));
		return;
	}
	if (!answered) {
		answered = true;
		res.once('finish', () => globalThis.__nomosAnswered?.());
	}
	if (markHttp && !req.headers['x-forwarded-proto']) req.headers['x-forwarded-proto'] = 'http';
	// Live event streams are served below SvelteKit: the hook (set at boot) matches the request
	// against the SSE route table (src/lib/server/realtime/sse-routes.ts) and returns null at once
	// for anything else, which SvelteKit answers.
	const streaming = globalThis.__nomosServeSse?.(req, res);
	if (!streaming) {
		handler(req, res);
		return;
	}
	streaming.catch((err) => {
		log.error({ err, url: req.url }, `event stream: ${err.message}`);
		if (!res.headersSent) res.writeHead(500).end();
		else res.end();
	});
});

server.listen(Number(process.env.PORT), process.env.HOST, () => {
	const a = server.address();
	const host = typeof a === 'object' && a ? a.address : process.env.HOST;
	const port = typeof a === 'object' && a ? a.port : process.env.PORT;
	log.info(`listening on http://${host.includes(':') ? `[${host}]` : host}:${port}`);
});

let stopping = false;
async function shutdown(signal) {
	if (stopping) return;
	stopping = true;
	log.info(`${signal}: shutting down`);
	server.close();
	// Long-lived event streams would hold close() open; the browser reconnects and replays.
	server.closeAllConnections();
	const runtime = await globalThis.__nomosRuntime;
	await runtime?.shutdown();
	process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
