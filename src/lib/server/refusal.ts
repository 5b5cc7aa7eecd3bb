/**
 * A domain function's "no" that the caller can act on (no such thing, a conflict, a bad value):
 * thrown inside the function's transaction, so nothing it wrote stays. The tRPC edge answers it
 * with its code and message (trpc/t.ts); anything else thrown is a 500.
 */
export class Refusal extends Error {
	constructor(
		readonly code: 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT' | 'PRECONDITION_FAILED' | 'FORBIDDEN',
		message: string
	) {
		super(message);
		this.name = 'Refusal';
	}
}
