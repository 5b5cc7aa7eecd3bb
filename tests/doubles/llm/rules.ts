/** Declarative fallback: the first rule whose conditions all hold answers (a rule without conditions always matches). */
import type { ChatMessage, Fallback, FallbackRule } from './types';

export function messageText(message: ChatMessage): string {
	const { content } = message;
	const parts: string[] = [];
	if (typeof content === 'string') parts.push(content);
	else if (Array.isArray(content)) for (const p of content) if (typeof p.text === 'string') parts.push(p.text);
	for (const call of message.tool_calls ?? []) parts.push(call.function.name, call.function.arguments);
	return parts.join('\n');
}

export function ruleMatches(rule: FallbackRule, messages: ChatMessage[]): boolean {
	if (rule.whenLastMessageRole !== undefined && messages.at(-1)?.role !== rule.whenLastMessageRole) return false;
	if (rule.whenLastUserIncludes !== undefined) {
		const lastUser = [...messages].reverse().find((m) => m.role === 'user');
		if (!lastUser || !messageText(lastUser).includes(rule.whenLastUserIncludes)) return false;
	}
	if (rule.whenAnyMessageIncludes !== undefined) {
		const needle = rule.whenAnyMessageIncludes;
		if (!messages.some((m) => messageText(m).includes(needle))) return false;
	}
	return true;
}

export function fallbackFromRules(rules: FallbackRule[]): Fallback {
	return (req) => {
		const messages = req.body?.messages ?? [];
		return rules.find((rule) => ruleMatches(rule, messages))?.respond ?? null;
	};
}
