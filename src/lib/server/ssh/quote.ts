/**
 * The one place where values become shell words. SSH `exec` carries a single string that the
 * remote shell parses, so every argument is single-quoted (`'` becomes `'\''`); inside single
 * quotes the shell interprets nothing. NUL cannot be carried at all and is refused.
 */
export function shellQuote(arg: string): string {
	if (arg.includes('\0')) throw new Error('argument contains a NUL byte');
	return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Joins an argv array into one command string whose words the remote shell reads back exactly. */
export function toCommand(argv: readonly string[]): string {
	if (argv.length === 0) throw new Error('empty command');
	return argv.map(shellQuote).join(' ');
}
