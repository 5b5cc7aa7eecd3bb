// Deterministic generator of hostile shell words (valid Unicode, never NUL) for quoting fuzz tests.

/** mulberry32: a small, seeded PRNG returning floats in [0, 1). */
export function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/**
 * Payloads that would create a file in `canaryDir` if a shell ever interpreted them. Quoted
 * correctly they are inert data.
 */
export function injectionPayloads(canaryDir: string): string[] {
	const c = (n: string) => `${canaryDir}/${n}`;
	return [
		`$(touch ${c('subst')})`,
		`\`touch ${c('backtick')}\``,
		`;touch ${c('semicolon')}`,
		`; touch ${c('semicolon2')} #`,
		`&& touch ${c('and')}`,
		`|| touch ${c('or')}`,
		`| touch ${c('pipe')}`,
		`\ntouch ${c('newline')}\n`,
		`\rtouch ${c('cr')}\r`,
		`& touch ${c('background')}`,
		`> ${c('redirect')}`,
		`>>${c('append')}`,
		`<(touch ${c('procsubst')})`,
		`>(touch ${c('procsubst2')})`,
		`'; touch ${c('squote')}; '`,
		`'\\''; touch ${c('squote2')}; echo '`,
		`"; touch ${c('dquote')}; "`,
		`'"$(touch ${c('mixed')})"'`,
		`\\'$(touch ${c('escaped')})`,
		`$(IFS=,;x=touch,${c('ifs')};$x)`,
		`\${IFS}touch\${IFS}${c('ifs2')}`,
		`$({touch,${c('brace')}})`,
		`{touch,${c('brace2')}}`,
		`$'\\x3btouch ${c('ansic')}'`,
		`\`\`touch ${c('empty-bt')}\`\``,
		`'$(touch ${c('in-squote')})'`,
		`"\`touch ${c('in-dquote')}\`"`,
		`x';touch ${c('break-out')};'`,
		`\\\ntouch ${c('continuation')}`,
		`\u2028touch ${c('ls-sep')}`,
		`$((\`touch ${c('arith')}\`))`,
		`-exec touch ${c('find')} ;`
	];
}

const SHELL_BITS = [
	';',
	'$(',
	')',
	'$()',
	'`',
	"'",
	'"',
	'\\',
	'\n',
	'\r',
	'\t',
	'\r\n',
	' ',
	'  ',
	'$IFS',
	'${IFS}',
	'$IFS$9',
	'*',
	'?',
	'[',
	']',
	'[a-z]',
	'*.*',
	'/*',
	'~',
	'~root',
	'~/',
	'&&',
	'||',
	'|',
	'&',
	'>',
	'>>',
	'<',
	'<<EOF',
	'2>&1',
	'#',
	'!',
	'!!',
	'!$',
	'!-1',
	'-',
	'--',
	'-n',
	'-e',
	'-c',
	'--help',
	'-rf',
	'$0',
	'$1',
	'$@',
	'$*',
	'$$',
	'$?',
	'$!',
	'${x:-y}',
	'${#}',
	'$((1+1))',
	'{a,b}',
	'{1..3}',
	'%s',
	'%n',
	'%%',
	'%b',
	'\\0',
	'\\x00',
	'\\n',
	'\\t',
	"'\\''",
	"'\"'\"'",
	"\\'",
	'\\"',
	'\\\\',
	'=',
	'a=b',
	'PATH=',
	'(',
	'((',
	'[[',
	']]',
	'\x07',
	'\x1b[31m',
	'\x1b]0;title\x07',
	'\x7f',
	'\x01',
	'\x0b',
	'\x0c',
	'\u0085',
	'\u00a0',
	'eval',
	'exec',
	'rm -rf /',
	'/bin/sh',
	'sh -c',
	'..',
	'../..',
	'/dev/null',
	'.'
];

const UNICODE_BITS = [
	'\u202e',
	'\u202d',
	'\u200f',
	'\u200e',
	'\u2066',
	'\u2069',
	'שלום',
	'مرحبا',
	'\u202eevil\u202c',
	'abc\u202egpj.exe',
	'😀',
	'👩‍👩‍👧‍👦',
	'🏳️‍🌈',
	'🇩🇪',
	'👍🏽',
	'\u{1F4A9}',
	'\u{10FFFF}',
	'\u{1D11E}',
	'e\u0301',
	'a\u0308\u0323',
	'Z̴̡̛̖̜͍̈́̽a̷̢̛̟̓l̸̨̙̈́g̵̨̈́o̶͉͗',
	'\u0300',
	'\ufeff',
	'\u200b',
	'\u200d',
	'\u2028',
	'\u2029',
	'\u3000',
	'ｆｕｌｌ',
	'＄（ｔｏｕｃｈ）',
	'；',
	'｀',
	'＇',
	'″',
	'‘’“”',
	'日本語',
	'中文',
	'한국어',
	'Ελληνικά',
	'кириллица',
	'ﷺ',
	'\ufffd',
	'\uffff',
	'\ud7ff',
	'\ue000',
	'ß',
	'İı',
	'ǅ',
	'🀄'
];

const ALNUM = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@+,'];

/**
 * `count` hostile words: concatenations of shell metacharacters, injection payloads, control
 * characters and Unicode (RTL, emoji, combining marks), some empty, some leading `-`, some up
 * to 4096 UTF-16 units. Deterministic for a seed; never contains NUL or lone surrogates.
 */
export function hostileValues(count: number, seed: number, canaryDir: string): string[] {
	const rnd = prng(seed);
	const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
	const payloads = injectionPayloads(canaryDir);
	const word = () => Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => pick(ALNUM)).join('');
	const randomChar = () => {
		// Any scalar value but NUL and surrogates.
		const r = rnd();
		if (r < 0.3) return String.fromCharCode(1 + Math.floor(rnd() * 0x7f));
		if (r < 0.7) {
			let cp = 0x80 + Math.floor(rnd() * (0xffff - 0x80));
			if (cp >= 0xd800 && cp <= 0xdfff) cp -= 0x800;
			return String.fromCodePoint(cp);
		}
		return String.fromCodePoint(0x10000 + Math.floor(rnd() * (0x10ffff - 0x10000)));
	};
	const piece = (): string => {
		const r = rnd();
		if (r < 0.35) return pick(SHELL_BITS);
		if (r < 0.5) return pick(payloads);
		if (r < 0.7) return pick(UNICODE_BITS);
		if (r < 0.85) return word();
		return randomChar();
	};
	const fixed = ['', ' ', '-', '--', '-rf', "'", '"', '\\', '\n', '$', '`', '*', '~', '#', '!', ...payloads];
	const out: string[] = [...fixed];
	while (out.length < count) {
		const r = rnd();
		let s: string;
		if (r < 0.01) s = '';
		else if (r < 0.04) {
			// long: up to the 4096-character limit of one argv word
			const target = 256 + Math.floor(rnd() * (4096 - 256));
			s = '';
			while (s.length < target) s += piece();
			s = s.slice(0, target);
			// never end on half a surrogate pair
			if (/[\ud800-\udbff]$/.test(s)) s = s.slice(0, -1);
		} else {
			s = Array.from({ length: 1 + Math.floor(rnd() * 6) }, piece).join('');
			if (rnd() < 0.1) s = '-' + s;
		}
		out.push(s);
	}
	return out.slice(0, count);
}
