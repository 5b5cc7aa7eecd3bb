import { router } from './t';
import { hostsRouter } from './routers/hosts';
import { knowledgeRouter } from './routers/knowledge';
import { chatRouter } from './routers/chat';

export const appRouter = router({
	hosts: hostsRouter,
	knowledge: knowledgeRouter,
	chat: chatRouter
});

export type AppRouter = typeof appRouter;
