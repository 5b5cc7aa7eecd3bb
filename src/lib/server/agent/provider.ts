import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import { env } from '../env';
import { compatFetch } from './compat-fetch';

export const MODEL_SETUP_HELP =
	'No model is configured, so the agent cannot answer yet. Set OPENAI_BASE_URL, OPENAI_API_KEY and NOMOS_MODEL ' +
	'(any OpenAI-compatible Chat Completions server: OpenAI, Ollama, vLLM, llama.cpp) and restart Nomos.';

/** The models operators may choose from (NOMOS_MODEL first, then NOMOS_MODELS); empty without a server. */
export function configuredModels(): string[] {
	const config = env();
	if (!config.OPENAI_BASE_URL) return [];
	return [...new Set([config.NOMOS_MODEL, ...(config.NOMOS_MODELS ?? [])].filter((m): m is string => !!m))];
}

/** Which model a session's turns use: its chosen one while it is still configured, else the default. */
export function modelIdFor(chosen: string | null | undefined): string | null {
	const models = configuredModels();
	return chosen && models.includes(chosen) ? chosen : (models[0] ?? null);
}

/** The configured chat model (Chat Completions API, so local servers work too), or null; `id`: one of configuredModels(). */
export function getModel(id?: string | null): LanguageModel | null {
	const config = env();
	const modelId = modelIdFor(id);
	if (!config.OPENAI_BASE_URL || !modelId) return null;
	const provider = createOpenAI({
		baseURL: config.OPENAI_BASE_URL,
		apiKey: config.OPENAI_API_KEY ?? 'none',
		// Local servers' stream quirks (Ollama's reused tool-call indices, dropped streamed tool calls).
		fetch: compatFetch({ streamWithTools: config.NOMOS_MODEL_STREAM_TOOLS })
	});
	return provider.chat(modelId);
}
