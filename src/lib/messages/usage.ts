import type { MessagePart, StepUsage, UsageData, UsagePart } from '../types/messages';
import type { PriceTable } from '../schemas/prices';

export const USAGE_PART_ID = 'usage';

export const isUsagePart = (p: MessagePart): p is UsagePart => p.type === 'data-usage';

/** A message's usage part's data, or null (a user message, an older turn, a turn with no model call). */
export function usageOf(parts: MessagePart[]): UsageData | null {
	const p = parts.find(isUsagePart);
	return p ? p.data : null;
}

/** Adds one model call to a turn's usage (a new object). */
export function addStep(u: UsageData | null, step: StepUsage): UsageData {
	const base = u ?? { steps: [], input: 0, output: 0, cached: 0 };
	return { steps: [...base.steps, step], input: base.input + step.input, output: base.output + step.output, cached: base.cached + step.cached };
}

/** Total tokens (input + output): what a turn budget counts. */
export const totalTokens = (u: Pick<UsageData, 'input' | 'output'> | null) => (u ? u.input + u.output : 0);

/** The sum of many messages' usage (steps concatenated). */
export function sumUsage(us: Array<UsageData | null>): UsageData {
	const out: UsageData = { steps: [], input: 0, output: 0, cached: 0 };
	for (const u of us) {
		if (!u) continue;
		out.steps.push(...u.steps);
		out.input += u.input;
		out.output += u.output;
		out.cached += u.cached;
	}
	return out;
}

/** 950 → "950", 1234 → "1.2k", 52_300 → "52k", 1_250_000 → "1.3M". */
export function formatTokens(n: number): string {
	if (n < 1000) return String(n);
	if (n < 10_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
	if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
	return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`;
}

/**
 * The cost in USD of these model calls, or null when a call's model has no price (a partial sum
 * would understate it). Cached input is billed at `cached` (else `input`), the rest at `input`.
 */
export function costOf(steps: StepUsage[], prices: PriceTable | null | undefined): number | null {
	if (!prices || steps.length === 0) return null;
	let usd = 0;
	for (const s of steps) {
		const p = Object.hasOwn(prices, s.model) ? prices[s.model] : undefined;
		if (!p) return null;
		const cached = Math.min(s.cached, s.input);
		usd += ((s.input - cached) * p.input + cached * (p.cached ?? p.input) + s.output * p.output) / 1_000_000;
	}
	return usd;
}

/** $0.0123 → "$0.012", $1.5 → "$1.50". */
export function formatCost(usd: number): string {
	if (usd === 0) return '$0';
	if (usd < 0.01) return `$${usd.toPrecision(2)}`;
	return `$${usd.toFixed(2)}`;
}

/** "1.2k in · 340 out · 800 cached" (cached only when there is some). */
export function usageLine(u: Pick<UsageData, 'input' | 'output' | 'cached'>): string {
	return [`${formatTokens(u.input)} in`, `${formatTokens(u.output)} out`, ...(u.cached > 0 ? [`${formatTokens(u.cached)} cached`] : [])].join(' · ');
}
