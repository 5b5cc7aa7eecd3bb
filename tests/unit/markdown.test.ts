import { describe, expect, it } from 'vitest';
import { renderInlineMarkdown, renderMarkdown } from '../../src/lib/markdown';

const ALLOWED_TAGS = new Set([
	'a',
	'blockquote',
	'br',
	'code',
	'del',
	'em',
	'h1',
	'h2',
	'h3',
	'h4',
	'h5',
	'h6',
	'hr',
	'input',
	'li',
	'ol',
	'p',
	'pre',
	'span',
	'strong',
	'table',
	'tbody',
	'td',
	'th',
	'thead',
	'tr',
	'ul'
]);
const ALLOWED_ATTRS = new Set(['href', 'title', 'rel', 'target', 'class', 'align', 'checked', 'disabled', 'type']);

/** Every opening tag in the output with its attributes, as a browser would see them. */
function tags(html: string): Array<{ name: string; attrs: Record<string, string> }> {
	const out: Array<{ name: string; attrs: Record<string, string> }> = [];
	for (const m of html.matchAll(/<([a-zA-Z][\w-]*)([^>]*)>/g)) {
		const attrs: Record<string, string> = {};
		for (const a of m[2].matchAll(/([^\s=/]+)(?:="([^"]*)")?/g)) attrs[a[1].toLowerCase()] = a[2] ?? '';
		out.push({ name: m[1].toLowerCase(), attrs });
	}
	return out;
}

/** Only the allowed tags and attributes, and links only to http(s)/mailto. */
function expectSafe(html: string) {
	for (const t of tags(html)) {
		expect(ALLOWED_TAGS, `tag <${t.name}> in ${html}`).toContain(t.name);
		for (const [k, v] of Object.entries(t.attrs)) {
			expect(ALLOWED_ATTRS, `attribute ${k} in ${html}`).toContain(k);
			if (k === 'href') expect(v).toMatch(/^(https?:\/\/|mailto:)/);
		}
	}
	for (const m of html.matchAll(/<\/([a-zA-Z][\w-]*)/g)) expect(ALLOWED_TAGS).toContain(m[1].toLowerCase());
	expect(html).not.toMatch(/<(script|img|iframe|svg|style|object|embed|form|math)\b/i);
}

describe('renderMarkdown', () => {
	it('escapes raw HTML: script blocks, inline tags, event-handler attributes', () => {
		const cases = [
			'<script>alert(1)</script>',
			'before\n\n<script>\nfetch("/trpc")\n</script>\n\nafter',
			'hi <img src=x onerror=alert(1)> there',
			'<div onmouseover="alert(1)">*still text*</div>',
			'a <pre><svg/onload=alert(1)></pre> b',
			'<style>body{display:none}</style>',
			'<!-- comment --><iframe src="https://x"></iframe>',
			'<a href="javascript:alert(1)">x</a>'
		];
		for (const src of cases) expectSafe(renderMarkdown(src));
		const html = renderMarkdown('hi <img src=x onerror=alert(1)> there');
		expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
		expect(renderMarkdown('<script>alert(1)</script>')).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n');
	});

	it('keeps only http, https and mailto links, rendering others as text', () => {
		const html = renderMarkdown(
			'[a](javascript:alert(1)) [b](&#106;avascript:alert(1)) [c](JaVaScRiPt:alert(1)) [d](data:text/html,x) ' +
				'[e](vbscript:x) [f](/relative) <javascript:alert(1)> [g](https://example.com/x?a=1&b=2 "T") ' +
				'<https://auto.example> www.example.org ops@example.com [h](mailto:me@example.com)'
		);
		expectSafe(html);
		const hrefs = tags(html)
			.filter((t) => t.name === 'a')
			.map((t) => t.attrs.href);
		expect(hrefs).toEqual([
			'https://example.com/x?a=1&amp;b=2',
			'https://auto.example',
			'http://www.example.org',
			'mailto:ops@example.com',
			'mailto:me@example.com'
		]);
		for (const a of tags(html).filter((t) => t.name === 'a')) {
			expect(a.attrs.rel).toBe('noopener noreferrer');
			expect(a.attrs.target).toBe('_blank');
		}
		// Rejected links keep their text.
		expect(html).toMatch(/^<p>a b c d e f javascript:alert\(1\) <a /);
	});

	it('does not load images; an image becomes a link to it', () => {
		const html = renderMarkdown('![diagram](https://evil.example/p.png?leak=secret) ![x](javascript:alert(1))');
		expectSafe(html);
		expect(html).not.toContain('<img');
		expect(html).toContain('href="https://evil.example/p.png?leak=secret"');
	});

	it('renders GFM tables, fenced code with its language, task lists and inline code', () => {
		const html = renderMarkdown(
			[
				'| vmid | name | state |',
				'|-----:|------|:-----:|',
				'| 101 | media | `running` |',
				'',
				'```bash',
				'pct exec 101 -- ls "<dir>" && echo ok',
				'```',
				'',
				'- [x] backups',
				'- [ ] monitoring',
				'',
				'~~old~~ **bold** _em_'
			].join('\n')
		);
		expectSafe(html);
		expect(html).toContain('<table>');
		expect(html).toContain('<th align="right">vmid</th>');
		expect(html).toContain('<td align="center"><code>running</code></td>');
		expect(html).toContain('<pre><span class="md-lang">bash</span><code class="language-bash">');
		expect(html).toContain('pct exec 101 -- ls &quot;&lt;dir&gt;&quot; &amp;&amp; echo ok');
		expect(html).toContain('<input checked="" disabled="" type="checkbox">');
		expect(html).toContain('<del>old</del> <strong>bold</strong> <em>em</em>');
	});

	it('escapes a hostile code-block language and keeps character references', () => {
		const html = renderMarkdown('```"><script>x\ncode\n```\n\nAT&amp;T &copy; 5 < 6 & 7');
		expectSafe(html);
		expect(html).toContain('AT&amp;T &copy; 5 &lt; 6 &amp; 7');
	});

	it('handles empty input and short replies', () => {
		expect(renderMarkdown('')).toBe('');
		expect(renderMarkdown('Done.')).toBe('<p>Done.</p>\n');
	});
});

describe('a note preview (one line of Markdown)', () => {
	it('renders emphasis and code inline, drops a heading marker, and stays safe', () => {
		expect(renderInlineMarkdown('## TypeType on **CT 105** runs `node`')).toBe('TypeType on <strong>CT 105</strong> runs <code>node</code>');
		const evil = renderInlineMarkdown('see <img src=x onerror="alert(1)"> and [x](javascript:alert(1)) ```bash ls ```');
		expect(evil).not.toContain('<img');
		expect(evil).not.toContain('javascript:');
		expect(evil).not.toContain('```');
	});
});
