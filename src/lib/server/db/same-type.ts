/**
 * True when A and B are the same type (not merely assignable one way). With `Expect`, a copy of a
 * row's shape that must live outside db/ (a client-facing type in src/lib/types) is held to the
 * table it copies: `type _Check = Expect<Same<Pick<Copy, K>, Pick<typeof table.$inferSelect, K>>>`
 * stops compiling when either side drifts.
 */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when T is `true`. */
export type Expect<T extends true> = T;

/** True when every field a copy shares by name with a row has the row's type there. */
export type SameColumns<Copy, Row> = Same<Pick<Copy, keyof Copy & keyof Row>, Pick<Row, keyof Copy & keyof Row>>;
