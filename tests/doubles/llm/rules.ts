/** Declarative fallback: the first rule whose conditions all hold answers (a rule without conditions always matches). */
import type { ChatMessage, Fallback, FallbackRule, ScriptedResponse } from './types';

export function messageText(message: ChatMessage): string {
	const { content } = message;
	const parts: string[] = [];
	if (typeof content === 'string') parts.push(content);
	else if (Array.isArray(content)) for (const p of content) if (typeof p.text === 'string') parts.push(p.text);
	for (const call of message.tool_calls ?? []) parts.push(call.function.name, call.function.arguments);
	return parts.join('\n');
}

/** The rule's match against the conversation: null when it does not hold, else the capture groups of `whenLastMessageMatches` (none without it). */
export function ruleMatch(rule: FallbackRule, messages: ChatMessage[]): string[] | null {
	if (rule.whenLastMessageRole !== undefined && messages.at(-1)?.role !== rule.whenLastMessageRole) return null;
	if (rule.whenLastUserIncludes !== undefined) {
		const lastUser = [...messages].reverse().find((m) => m.role === 'user');
		if (!lastUser || !messageText(lastUser).includes(rule.whenLastUserIncludes)) return null;
	}
	if (rule.whenAnyMessageIncludes !== undefined) {
		const needle = rule.whenAnyMessageIncludes;
		if (!messages.some((m) => messageText(m).includes(needle))) return null;
	}
	if (rule.whenLastMessageMatches === undefined) return [];
	const last = messages.at(-1);
	const m = last ? new RegExp(rule.whenLastMessageMatches).exec(messageText(last)) : null;
	return m ? m.slice(1).map((g) => g ?? '') : null;
}

export function ruleMatches(rule: FallbackRule, messages: ChatMessage[]): boolean {
	return ruleMatch(rule, messages) !== null;
}

/** `$1` … `$9` in every string of `value` replaced by the groups (a missing group by ''). */
function fill<T>(value: T, groups: string[]): T {
	if (typeof value === 'string') return value.replace(/\$([1-9])/g, (_, i: string) => groups[Number(i) - 1] ?? '') as T;
	if (Array.isArray(value)) return value.map((v: unknown) => fill(v, groups)) as T;
	if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, groups)])) as T;
	return value;
}

export function fallbackFromRules(rules: FallbackRule[]): Fallback {
	return (req) => {
		const messages = req.body?.messages ?? [];
		for (const rule of rules) {
			const groups = ruleMatch(rule, messages);
			if (groups === null) continue;
			return rule.whenLastMessageMatches === undefined ? rule.respond : fill<ScriptedResponse>(rule.respond, groups);
		}
		return null;
	};
}
