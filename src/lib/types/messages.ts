// Chat messages as stored and as sent to the browser.

export const messageRoles = ['user', 'assistant', 'system'] as const;
export const messageStatuses = ['queued', 'streaming', 'complete', 'error', 'cancelled'] as const;
export const messageOrigins = ['chat', 'resume', 'continuation'] as const;
export type MessageStatus = (typeof messageStatuses)[number];
export type MessageOrigin = (typeof messageOrigins)[number];

/** One ordered part of a message, as stored and as rendered. */
export type MessagePart =
	| { type: 'text'; text: string }
	| {
			type: 'tool-call';
			toolCallId: string;
			toolName: string;
			input: unknown;
			state: 'running' | 'done' | 'error';
			output?: unknown;
			error?: string;
	  }
	| { type: 'note'; kind: string; text: string; data?: Record<string, unknown> };

export type MessageRow = {
	id: string;
	sessionId: string;
	seq: number;
	role: (typeof messageRoles)[number];
	parts: MessagePart[];
	status: MessageStatus;
	origin: MessageOrigin;
	error: string | null;
	rev: number;
	/** ISO 8601 text (see db/index.ts). */
	createdAt: string;
	updatedAt: string;
};
