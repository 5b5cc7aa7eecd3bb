import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { asSchema, type Tool } from 'ai';
import { ZodError } from 'zod';
import { sql } from '../db/index';
import { ensureMcpSession } from '../db/queries/sessions';
import type { Operator } from '../db/queries/operators';
import type { ApiTokenAuth } from '../db/queries/api-tokens';
import { capped } from '../agent/tools/index';
import { fleetTools } from '../agent/tools/fleet';
import { searchKnowledgeTool } from '../agent/tools/search-knowledge';
import { getExecutionStatusTool } from '../agent/tools/get-execution-status';
import { requestExecutionTool } from '../agent/tools/request-execution';
import type { ToolContext } from '../agent/tools/context';
import { describeZodError } from '../../schemas/zod-error';

/** Who calls: an operator through one of their API tokens (its scope decides which tools). */
export type McpClientAuth = { user: Operator; token: ApiTokenAuth };

/** The largest MCP request body read (a tool call's arguments are capped at 40 KB anyway). */
const MAX_BODY_BYTES = 256 * 1024;

const OPERATE_ONLY = new Set(['request_execution']);

/**
 * The tools MCP clients get: the agent's own implementations (no copies), built over a context
 * that says who asks. Read tools never touch the session; request_execution's session is the
 * token's MCP chat, created on its first request (see ensureMcpSession): its cards live there and
 * on Ops, and its results re-invoke no agent.
 */
function toolsFor(ctx: ToolContext): Record<string, Tool> {
	return {
		...fleetTools(ctx),
		search_knowledge: searchKnowledgeTool(ctx),
		get_execution: getExecutionStatusTool(ctx),
		request_execution: requestExecutionTool(ctx)
	};
}

function text(value: unknown, isError = false): CallToolResult {
	return { content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 1) }], ...(isError ? { isError } : {}) };
}

/** One MCP server per request (stateless Streamable HTTP): tools/list and tools/call for the caller. */
function buildServer(caller: McpClientAuth, signal: AbortSignal): Server {
	const server = new Server({ name: 'nomos', version: '1.0.0' }, { capabilities: { tools: {} } });
	const mcp = { operator: { id: caller.user.id, username: caller.user.username }, token: { id: caller.token.id, name: caller.token.name } };
	// Read tools ignore the session; request_execution gets the MCP chat's id below.
	const base: ToolContext = { sessionId: '', messageId: '', signal, turn: { httpGets: 0 }, mcp };
	const allowed = (name: string) => caller.token.scope !== 'read' || !OPERATE_ONLY.has(name);

	server.setRequestHandler(ListToolsRequestSchema, async () => {
		const tools = await Promise.all(
			Object.entries(toolsFor(base))
				.filter(([name]) => allowed(name))
				.map(async ([name, t]) => ({ name, description: t.description ?? '', inputSchema: (await asSchema(t.inputSchema).jsonSchema) as { type: 'object' } }))
		);
		return { tools };
	});

	server.setRequestHandler(CallToolRequestSchema, async (req) => {
		const name = req.params.name;
		if (!Object.hasOwn(toolsFor(base), name)) return text(`unknown tool ${name}`, true);
		if (!allowed(name)) return text(`${name} needs an API token with scope operate; this token (${caller.token.name}) has scope read`, true);
		const ctx =
			name === 'request_execution'
				? { ...base, sessionId: await sql().begin((tx) => ensureMcpSession(tx, caller.token.id, caller.user.id, caller.token.name)) }
				: base;
		const t = capped(toolsFor(ctx)[name]);
		const v = await asSchema(t.inputSchema).validate?.(req.params.arguments ?? {});
		if (v && !v.success) return text(`bad arguments: ${v.error instanceof ZodError ? describeZodError(v.error) : v.error.message}`, true);
		const out: unknown = await t.execute!(v ? v.value : req.params.arguments, { toolCallId: randomUUID(), messages: [], abortSignal: signal });
		return text(out, !!out && typeof out === 'object' && 'error' in out);
	});
	return server;
}

/**
 * Answers one MCP request (POST /mcp, JSON-RPC) for a token's caller. Stateless: a fresh server
 * and transport per request, JSON answers (no server-initiated stream to keep open).
 */
export async function handleMcpRequest(request: Request, caller: McpClientAuth): Promise<Response> {
	const server = buildServer(caller, request.signal);
	const transport = new WebStandardStreamableHTTPServerTransport({
		sessionIdGenerator: undefined,
		enableJsonResponse: true,
		maxRequestBodySize: MAX_BODY_BYTES
	});
	await server.connect(transport);
	try {
		return await transport.handleRequest(request);
	} finally {
		await server.close();
	}
}
