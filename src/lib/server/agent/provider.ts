import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import { env } from '../env';
import { compatFetch } from './compat-fetch';

export const MODEL_SETUP_HELP =
	'No model is configured, so the agent cannot answer yet. Set OPENAI_BASE_URL, OPENAI_API_KEY and NOMOS_MODEL ' +
	'(any OpenAI-compatible Chat Completions server: OpenAI, Ollama, vLLM, llama.cpp) and restart Nomos.';

/** The configured chat model (Chat Completions API, so local servers work too), or null. */
export function getModel(): LanguageModel | null {
	const config = env();
	if (!config.OPENAI_BASE_URL || !config.NOMOS_MODEL) return null;
	const provider = createOpenAI({
		baseURL: config.OPENAI_BASE_URL,
		apiKey: config.OPENAI_API_KEY ?? 'none',
		// Local servers' stream quirks (Ollama's reused tool-call indices, dropped streamed tool calls).
		fetch: compatFetch({ streamWithTools: config.NOMOS_MODEL_STREAM_TOOLS })
	});
	return provider.chat(config.NOMOS_MODEL);
}
