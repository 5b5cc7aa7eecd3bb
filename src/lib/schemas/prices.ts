import { z } from 'zod';

const perMillion = z.number({ error: 'must be a number (USD per million tokens)' }).nonnegative('must not be negative').finite();

/** One model's prices in USD per million tokens; cached input costs `input` unless given. */
export const modelPrice = z.strictObject({ input: perMillion, output: perMillion, cached: perMillion.optional() });
export type ModelPrice = z.infer<typeof modelPrice>;

/** `NOMOS_PRICES`: model id → its prices. */
export const priceTable = z.record(z.string().min(1, 'a model name must not be empty'), modelPrice);
export type PriceTable = z.infer<typeof priceTable>;

/**
 * Parses `NOMOS_PRICES` JSON into a price table, or says in one phrase what is wrong with it
 * (`gpt-4.1.output: must be a number (USD per million tokens)`).
 */
export function parsePrices(raw: string): { ok: true; prices: PriceTable } | { ok: false; message: string } {
	let parsed: unknown;
	try {
		parsed = JSON.parse(raw);
	} catch {
		return { ok: false, message: 'is not valid JSON (expected {"<model>": {"input": …, "output": …, "cached": …}}, USD per million tokens)' };
	}
	const r = priceTable.safeParse(parsed);
	if (r.success) return { ok: true, prices: r.data };
	const issue = r.error.issues[0];
	const where = issue.path.map(String).join('.');
	return { ok: false, message: where ? `${where}: ${issue.message}` : `must be an object of model prices (${issue.message})` };
}
