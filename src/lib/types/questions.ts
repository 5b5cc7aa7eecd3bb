// Questions the agent asks the operator, as stored and as sent to the browser.

export type QuestionRow = {
	id: string;
	sessionId: string;
	messageId: string | null;
	prompt: string;
	why: string | null;
	options: string[];
	contextEntities: string[];
	status: 'open' | 'answered' | 'cancelled';
	answer: string | null;
	answeredVia: 'panel' | 'chat' | 'rest' | null;
	createdAt: string;
	answeredAt: string | null;
};

export type OpenQuestion = { id: string; sessionId: string; prompt: string; createdAt: string; title: string };
