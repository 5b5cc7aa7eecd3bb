import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * Tokens of a text in o200k (GPT-4o's encoding; local models' tokenizers land within ~15 % of it
 * on English and JSON). BPE is quadratic in the length of one pre-tokenized word, and a word can
 * be as long as the model or an attacker makes it (100 KB of one letter took 13 s), so runs of 64
 * letters/digits or 64 symbols are cut apart first: at most one token more per 64 characters of
 * such a run, and linear time.
 */
export const tokensOf = (text: string): number => countTokens(text.replace(LONG_RUN, '$& '));
const LONG_RUN = /[\p{L}\p{N}]{64}|[^\s\p{L}\p{N}]{64}/gu;
/** The o200k tokens themselves (cut as tokensOf does), for comparing two prompts token by token. */
export const encodeTokens = (text: string): number[] => encode(text.replace(LONG_RUN, '$& '));

/** Per message, the chat template's framing (role markers, separators), as OpenAI counts it. */
const PER_MESSAGE = 4;

/** A Chat Completions request body, as much of it as counts. */
export type PromptBody = {
	messages?: Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>;
	tools?: unknown[];
};

export type PromptParts = { instructions: number; tools: number; history: number; total: number };

function messageTokens(m: NonNullable<PromptBody['messages']>[number]): number {
	const content = typeof m.content === 'string' ? m.content : m.content == null ? '' : JSON.stringify(m.content);
	return PER_MESSAGE + tokensOf(content) + (m.tool_calls ? tokensOf(JSON.stringify(m.tool_calls)) : 0);
}

/**
 * A request's prompt in o200k tokens, split as it is built: the system messages (instructions),
 * the tool definitions (their JSON, as servers render them into the template) and the rest
 * (the conversation).
 */
export function promptParts(body: PromptBody): PromptParts {
	let instructions = 0;
	let history = 0;
	for (const m of body.messages ?? []) {
		if (m.role === 'system') instructions += messageTokens(m);
		else history += messageTokens(m);
	}
	const tools = body.tools?.length ? tokensOf(JSON.stringify(body.tools)) : 0;
	return { instructions, tools, history, total: instructions + tools + history };
}
