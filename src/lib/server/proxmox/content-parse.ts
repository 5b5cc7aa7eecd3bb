// A storage's volumes as `pvesh get /nodes/<n>/storage/<s>/content --output-format json` lists them
// (PVE 8 and 9: volid, content, format, size, used for thin volumes, vmid), largest first: what
// takes a storage's space (issue #45 incident (b): a storage over 90 % → its largest consumers).
import { z } from 'zod';

const GiB = 1024 ** 3;
const bytes = z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)]);
const row = z.looseObject({
	volid: z.string(),
	content: z.string().optional(),
	format: z.string().optional(),
	size: bytes.optional(),
	used: bytes.optional(),
	vmid: z.union([z.number(), z.string()]).optional(),
	subtype: z.string().optional()
});

const gib = (n: number) => `${(n / GiB).toFixed(1)} GiB`;
/** What a volume takes on its storage: its allocated bytes where the storage says (thin), else its size. */
const takes = (v: z.output<typeof row>) => v.used ?? v.size ?? 0;

/** The volumes largest first (at most `limit`), each with what it takes and whose it is; throws when the output does not parse. */
export function contentSummary(text: string, storage: string, limit: number): string {
	let data: unknown;
	try {
		data = JSON.parse(text);
	} catch {
		throw new Error(`pvesh get …/storage/${storage}/content did not answer JSON: ${text.trim().split('\n')[0]?.slice(0, 120) ?? '(empty)'}`);
	}
	const vols = z
		.array(row)
		.parse(data)
		.sort((a, b) => takes(b) - takes(a));
	if (!vols.length) return `${storage}: no volumes`;
	const total = vols.reduce((a, v) => a + takes(v), 0);
	const guest = (v: z.output<typeof row>) =>
		v.vmid === undefined
			? ''
			: ` ${v.content === 'images' || v.subtype === 'qemu' ? 'VM' : v.content === 'rootdir' || v.subtype === 'lxc' ? 'CT' : 'guest'} ${v.vmid},`;
	const line = (v: z.output<typeof row>) =>
		`${v.volid} (${guest(v).trim()} ${v.content ?? '?'}): ${gib(takes(v))}${v.used !== undefined && v.size !== undefined ? ` of ${gib(v.size)}` : ''}`.replace(
			'( ',
			'('
		);
	const shown = vols.slice(0, limit).map(line);
	return [
		`${storage}: ${vols.length} volume${vols.length === 1 ? '' : 's'}, ${gib(total)} in all, largest first:`,
		...shown,
		...(vols.length > limit ? [`… ${vols.length - limit} more`] : [])
	].join('\n');
}
