// Polling baseline for bench/realtime.ts (the pre-SSE design): node:http, GET /events?after=<id>
// returns the events after that id as a JSON array (oldest first, at most 500). Clients ask
// every 3 s. No LISTEN, no auth.
//
// env: DATABASE_URL, PORT (HOST 127.0.0.1)
import http from 'node:http';
import postgres from 'postgres';

const sql = postgres(process.env.DATABASE_URL!, { max: 10, onnotice: () => undefined, connection: { application_name: 'bench-poll' } });

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
	const url = new URL(req.url ?? '/', 'http://x');
	if (url.pathname !== '/events') return void res.writeHead(404).end();
	const after = Number(url.searchParams.get('after')) || 0;
	try {
		const rows = await sql`
			select id::float8 as id, session_id as "sessionId", type, payload, created_at as "createdAt"
			from events where id > ${after} order by id limit 500`;
		const body = JSON.stringify(rows);
		res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
		res.end(body);
	} catch (e) {
		res.writeHead(500).end((e as Error).message);
	}
}

const server = http.createServer((req, res) => void handle(req, res));

server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`[poll] listening on 127.0.0.1:${process.env.PORT}`));
const stop = () => {
	server.close();
	server.closeAllConnections();
	void sql.end({ timeout: 1 }).finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
