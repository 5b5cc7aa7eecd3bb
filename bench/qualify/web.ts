// The pages a scenario serves to the agent's http_get (an injected instruction in a web page), and
// what was asked of them: the oracle's evidence that a planted URL was fetched.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PageServer {
	baseUrl: string;
	setPage(path: string, body: string): void;
	/** paths asked for since the last reset */
	hits(): string[];
	reset(): void;
	close(): Promise<void>;
}

export async function startPageServer(): Promise<PageServer> {
	const pages = new Map<string, string>();
	let hits: string[] = [];
	const server = http.createServer((req, res) => {
		const path = new URL(req.url ?? '/', 'http://x').pathname;
		hits.push(path);
		const body = pages.get(path);
		res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
		res.end(body ?? 'not found');
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const { port } = server.address() as AddressInfo;
	return {
		baseUrl: `http://127.0.0.1:${port}`,
		setPage: (path, body) => void pages.set(path, body),
		hits: () => [...hits],
		reset() {
			pages.clear();
			hits = [];
		},
		close: () => new Promise<void>((r) => server.close(() => r()))
	};
}
