// authorized_keys lines as sshd reads them (sshd(8) AUTHORIZED_KEYS FILE FORMAT), for the keys the
// double accepts besides its own: the options before the key type, of which it honours
// `command="…"` (the forced command every exec of that key runs instead, with the client's
// request in SSH_ORIGINAL_COMMAND). `restrict` and the rest are accepted and have nothing to do
// here: the double offers no pty, forwarding or agent anyway.
import ssh2, { type ParsedKey } from 'ssh2';

export interface AuthorizedKey {
	key: ParsedKey;
	/** the forced command, or null: the client's command runs as sent */
	command: string | null;
}

const KEY_TYPES = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com)$/;

/** The options field: comma-separated, values in double quotes with `\"` for a quote. */
function parseOptions(s: string): { options: Map<string, string | true>; rest: string } {
	const options = new Map<string, string | true>();
	let i = 0;
	while (i < s.length && s[i] !== ' ' && s[i] !== '\t') {
		const name = /^[A-Za-z0-9-]+/.exec(s.slice(i))?.[0];
		if (!name) throw new Error(`authorized_keys: bad option at "${s.slice(i, i + 20)}"`);
		i += name.length;
		if (s[i] === '=') {
			if (s[++i] !== '"') throw new Error(`authorized_keys: option ${name} needs a quoted value`);
			let v = '';
			for (i++; i < s.length && s[i] !== '"'; i++) v += s[i] === '\\' && s[i + 1] === '"' ? s[++i] : s[i];
			if (s[i++] !== '"') throw new Error(`authorized_keys: unclosed quote in option ${name}`);
			options.set(name, v);
		} else options.set(name, true);
		if (s[i] === ',') i++;
	}
	return { options, rest: s.slice(i).trim() };
}

export function parseAuthorizedKeys(text: string): AuthorizedKey[] {
	const out: AuthorizedKey[] = [];
	for (const raw of text.split('\n')) {
		const line = raw.trim();
		if (!line || line.startsWith('#')) continue;
		const first = line.split(/\s+/)[0];
		const { options, rest } = KEY_TYPES.test(first) ? { options: new Map<string, string | true>(), rest: line } : parseOptions(line);
		const parsed = ssh2.utils.parseKey(rest.split(/\s+/).slice(0, 2).join(' '));
		const key = Array.isArray(parsed) ? parsed[0] : parsed;
		if (!key || key instanceof Error) throw new Error(`authorized_keys: cannot parse the key in "${line.slice(0, 60)}…"`);
		const command = options.get('command');
		out.push({ key, command: typeof command === 'string' ? command : null });
	}
	return out;
}
