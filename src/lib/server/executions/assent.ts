const ASSENT =
	/^(yes|yep|yeah|y|ok|okay|sure|approved?|go( ahead)?|do it|run it|proceed|lgtm|sounds good|go for it|ship it|confirm(ed)?|please do)\b[\s,!.]*((yes|please|go ahead|run (it|them)|do it|approve(d)?|proceed|thanks?|thank you|go for it)[\s,!.]*)*$/i;
const NEGATION = /\b(no|not|don'?t|do not|never|stop|wait|hold|cancel|but|except|instead|change|only|first|later|unless|why|what|how)\b/i;

/**
 * True only for a message that clearly assents and says nothing else ("go ahead", "yes, run it",
 * "approve"). Anything with a question, a condition or a change ("yes but 2 GB") is not assent.
 */
export function isClearAssent(text: string): boolean {
	const t = text.trim();
	if (!t || t.length > 60 || t.includes('?')) return false;
	if (NEGATION.test(t)) return false;
	return ASSENT.test(t);
}
