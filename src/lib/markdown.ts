import { Marked, type Tokens } from 'marked';

/**
 * Markdown to HTML that is safe to `{@html}`: notes and assistant replies are not trusted markup.
 *
 * - Raw HTML in the source (blocks and inline tags) is shown as text, never interpreted.
 * - Links keep only http:, https: and mailto: destinations; any other (javascript:, data:,
 *   relative, entity-obfuscated) renders as its plain text. Links open in a new tab with
 *   rel="noopener noreferrer".
 * - Images are not loaded (a model could be talked into embedding a URL that leaks data);
 *   they render as a link to the image instead.
 * - Text is always escaped, including inside would-be raw blocks such as <pre>.
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
	return s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/** Like escapeHtml, but keeps character references the author wrote (`&copy;`, `&#169;`) intact. */
function escapeText(s: string): string {
	return s.replace(/&(?!#?[a-zA-Z0-9]+;)|[<>"']/g, (c) => HTML_ESCAPES[c]);
}

const SAFE_HREF = /^(?:https?:\/\/|mailto:)/i;

/** The href to emit (already attribute-escaped), or null when the destination is not allowed. */
export function safeHref(href: string | null | undefined): string | null {
	if (!href) return null;
	const h = href.trim();
	// Control characters and whitespace inside a scheme are how filters get bypassed.
	// eslint-disable-next-line no-control-regex -- matching control characters is the point
	if (!SAFE_HREF.test(h) || /[\u0000-\u001f\u007f]/.test(h)) return null;
	let encoded: string;
	try {
		encoded = encodeURI(h).replace(/%25/g, '%');
	} catch {
		return null;
	}
	return escapeHtml(encoded);
}

function anchor(href: string, title: string | null | undefined, inner: string): string {
	const t = title ? ` title="${escapeHtml(title)}"` : '';
	return `<a href="${href}"${t} rel="noopener noreferrer" target="_blank">${inner}</a>`;
}

const marked = new Marked({
	gfm: true,
	breaks: false,
	async: false,
	renderer: {
		html({ text, block }: Tokens.HTML | Tokens.Tag) {
			const escaped = escapeHtml(text);
			return block ? `<p>${escaped.trim()}</p>\n` : escaped;
		},
		text(token: Tokens.Text | Tokens.Escape) {
			if ('tokens' in token && token.tokens) return this.parser.parseInline(token.tokens);
			// Never trust `escaped`: marked sets it for text inside raw-HTML blocks, which we escape.
			return escapeText(token.text);
		},
		link({ href, title, tokens }: Tokens.Link) {
			const inner = this.parser.parseInline(tokens);
			const safe = safeHref(href);
			return safe ? anchor(safe, title, inner) : inner;
		},
		image({ href, title, text }: Tokens.Image) {
			const label = escapeHtml(text || 'image');
			const safe = safeHref(href);
			return safe ? anchor(safe, title, `<span class="md-image">🖼 ${label}</span>`) : label;
		},
		code({ text, lang }: Tokens.Code) {
			const language = (lang ?? '').match(/^\S*/)?.[0] ?? '';
			const cls = language ? ` class="language-${escapeHtml(language)}"` : '';
			const label = language ? `<span class="md-lang">${escapeHtml(language)}</span>` : '';
			return `<pre>${label}<code${cls}>${escapeHtml(text.replace(/\n$/, ''))}\n</code></pre>\n`;
		}
	}
});

/** Renders Markdown (GFM: tables, task lists, strikethrough, autolinks) to sanitised HTML. */
export function renderMarkdown(src: string): string {
	return marked.parse(src ?? '', { async: false });
}

/**
 * One line of Markdown (a note's preview, whitespace already collapsed) as sanitised inline HTML:
 * emphasis, code and links render; block markers (a heading's `#`, a fence) are dropped.
 */
export function renderInlineMarkdown(src: string): string {
	const line = (src ?? '').replace(/^\s*#{1,6}\s+/, '').replace(/`{3,}\S*/g, ' ');
	return marked.parseInline(line, { async: false });
}
