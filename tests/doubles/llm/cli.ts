/**
 * Standalone scripted LLM double: `npx tsx tests/doubles/llm/cli.ts --port 4010`.
 * Prints one JSON line `{"baseURL":"http://127.0.0.1:4010/v1","port":4010}` once listening;
 * stops on SIGTERM/SIGINT. Drive it with client.ts (llmControl).
 */
import { startScriptedLlm } from './server';

function parsePort(argv: string[]): number | undefined {
	const i = argv.findIndex((a) => a === '--port' || a.startsWith('--port='));
	if (i === -1) return undefined;
	const value = argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1];
	const port = Number(value);
	if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`Invalid --port: ${value}`);
	return port;
}

const llm = await startScriptedLlm({ port: parsePort(process.argv.slice(2)) });
process.stdout.write(`${JSON.stringify({ baseURL: llm.baseURL, port: llm.port })}\n`);

let stopping = false;
const stop = () => {
	if (stopping) return;
	stopping = true;
	llm.close().then(
		() => process.exit(0),
		(err: unknown) => {
			console.error(err);
			process.exit(1);
		}
	);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
