import { router } from './t';
import { hostsRouter } from './routers/hosts';
import { knowledgeRouter } from './routers/knowledge';
import { chatRouter } from './routers/chat';
import { executionsRouter } from './routers/executions';
import { questionsRouter } from './routers/questions';
import { operatorsRouter } from './routers/operators';
import { systemRouter } from './routers/system';
import { allowRulesRouter } from './routers/allow-rules';
import { notificationsRouter } from './routers/notifications';
import { apiTokensRouter } from './routers/api-tokens';
import { jobsRouter } from './routers/jobs';
import { watchesRouter } from './routers/watches';
import { schedulesRouter } from './routers/schedules';

export const appRouter = router({
	hosts: hostsRouter,
	knowledge: knowledgeRouter,
	chat: chatRouter,
	executions: executionsRouter,
	questions: questionsRouter,
	operators: operatorsRouter,
	system: systemRouter,
	allowRules: allowRulesRouter,
	notifications: notificationsRouter,
	apiTokens: apiTokensRouter,
	jobs: jobsRouter,
	watches: watchesRouter,
	schedules: schedulesRouter
});

export type AppRouter = typeof appRouter;
