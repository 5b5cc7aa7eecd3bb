// Bare SSE reference for bench/realtime.ts: one node:http server, one postgres LISTEN on
// `nomos_events`, no framework, no auth. On every notification it reads the rows `where id > last`
// (ids are commit-ordered, like the app's Hub), formats each event ONCE and writes it to every
// open response. Same stream contract as Nomos: replay after `?after=`/Last-Event-ID, skip ids
// already sent, `: live` once the replay is done, a ping every 15 s.
//
// env: DATABASE_URL, PORT (HOST 127.0.0.1)
import http from 'node:http';
import postgres from 'postgres';

type Row = { id: number; sessionId: string | null; type: string; payload: unknown; createdAt: string };

const sql = postgres(process.env.DATABASE_URL!, { max: 4, onnotice: () => undefined, connection: { application_name: 'bench-bare' } });
const columns = sql`id::float8 as id, session_id as "sessionId", type, payload, created_at as "createdAt"`;
const after = (id: number) => sql<Row[]>`select ${columns} from events where id > ${id} order by id limit 500`;

const format = (e: Row) =>
	`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ id: e.id, sessionId: e.sessionId, type: e.type, payload: e.payload, createdAt: e.createdAt })}\n\n`;

interface Client {
	res: http.ServerResponse;
	lastSent: number;
	live: boolean;
	buffer: Array<{ id: number; text: string }>;
}
const clients = new Set<Client>();

function deliver(c: Client, id: number, text: string): void {
	if (id <= c.lastSent) return;
	c.lastSent = id;
	c.res.write(text);
}

let last = 0;
let fetching = false;
let again = false;
async function catchUp(): Promise<void> {
	if (fetching) return void (again = true);
	fetching = true;
	try {
		do {
			again = false;
			let rows: Row[];
			do {
				rows = await after(last);
				if (!rows.length) break;
				last = rows[rows.length - 1].id;
				const out = rows.map((e) => ({ id: e.id, text: format(e) }));
				for (const c of clients)
					for (const o of out) {
						if (c.live) deliver(c, o.id, o.text);
						else c.buffer.push(o);
					}
			} while (rows.length === 500);
		} while (again);
	} catch (e) {
		console.error(`[bare] ${(e as Error).message}`);
	} finally {
		fetching = false;
	}
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
	const url = new URL(req.url ?? '/', 'http://x');
	if (url.pathname !== '/events') return void res.writeHead(404).end();
	const raw = req.headers['last-event-id'] ?? url.searchParams.get('after') ?? '0';
	const c: Client = { res, lastSent: Number(raw) || 0, live: false, buffer: [] };
	res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
	res.write('retry: 1000\n\n');
	clients.add(c);
	res.on('close', () => clients.delete(c));
	try {
		let rows: Row[];
		do {
			rows = await after(c.lastSent);
			for (const e of rows) deliver(c, e.id, format(e));
		} while (rows.length === 500 && !res.destroyed);
	} catch {
		return void res.destroy();
	}
	for (const o of c.buffer.splice(0)) deliver(c, o.id, o.text);
	c.live = true;
	res.write(': live\n\n');
}

const server = http.createServer((req, res) => void handle(req, res));

setInterval(() => {
	for (const c of clients) c.res.write(': ping\n\n');
}, 15_000).unref();

let ready = false;
await sql.listen(
	'nomos_events',
	() => ready && void catchUp(),
	() => ready && void catchUp()
);
const [{ max }] = await sql<{ max: number }[]>`select coalesce(max(id), 0)::float8 as max from events`;
last = max;
ready = true;

server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`[bare] listening on 127.0.0.1:${process.env.PORT}`));
const stop = () => {
	server.close();
	server.closeAllConnections();
	void sql.end({ timeout: 1 }).finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
