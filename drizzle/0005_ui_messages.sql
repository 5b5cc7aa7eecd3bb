-- Chat messages move from Nomos's own part shapes to the AI SDK's UIMessage parts:
--   tool-call -> tool-<name> with output-available / output-error,
--   note      -> data-note { kind, text, data? },
--   assistant messages get step-start parts where the SDK's stream puts them: first, and before a
--   text that follows tool calls (the start of the next step; notes in between do not count), so
--   convertToModelMessages replays history in the same assistant/tool blocks as the old code.
-- Only old-shaped rows change (a tool-call or note part, or an assistant message of text parts
-- only, which lacks its step-start); rev and updated_at stay. Rows that were 'streaming' are
-- orphaned and converted the same way: their running calls become interrupted output-errors.
-- Events need nothing: message.updated events carry only { messageId }.
UPDATE "messages" AS m
SET "parts" = conv.parts
FROM (
	SELECT src.id, jsonb_agg(out.part ORDER BY src.n, out.k) AS parts
	FROM (
		SELECT msg.id, msg.role, e.part, e.n,
			-- Notes are partitioned apart, so for any other part this is the previous non-note part's type.
			lag(e.part->>'type') OVER (PARTITION BY msg.id, e.part->>'type' = 'note' ORDER BY e.n) AS prev_type
		FROM "messages" AS msg
		CROSS JOIN LATERAL jsonb_array_elements(msg.parts) WITH ORDINALITY AS e(part, n)
		WHERE jsonb_typeof(msg.parts) = 'array'
			AND (
				msg.parts @> '[{"type": "tool-call"}]'::jsonb
				OR msg.parts @> '[{"type": "note"}]'::jsonb
				OR (msg.role = 'assistant' AND jsonb_array_length(msg.parts) > 0
					AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(msg.parts) AS t(p) WHERE t.p->>'type' IS DISTINCT FROM 'text'))
			)
	) AS src
	CROSS JOIN LATERAL (
		SELECT 0 AS k, '{"type": "step-start"}'::jsonb AS part
		WHERE src.role = 'assistant' AND (src.n = 1 OR (src.part->>'type' = 'text' AND src.prev_type = 'tool-call'))
		UNION ALL
		SELECT 1 AS k, CASE src.part->>'type'
			WHEN 'tool-call' THEN
				jsonb_build_object(
					'type', 'tool-' || coalesce(src.part->>'toolName', 'unknown'),
					'toolCallId', src.part->'toolCallId',
					'state', CASE WHEN src.part->>'state' = 'done' OR (src.part->>'state' = 'error' AND src.part ? 'output')
						THEN 'output-available' ELSE 'output-error' END)
				|| CASE WHEN src.part ? 'input' THEN jsonb_build_object('input', src.part->'input') ELSE '{}'::jsonb END
				|| CASE
					WHEN src.part->>'state' = 'done' OR (src.part->>'state' = 'error' AND src.part ? 'output') THEN
						CASE WHEN src.part ? 'output' THEN jsonb_build_object('output', src.part->'output') ELSE '{}'::jsonb END
					WHEN src.part->>'state' = 'running' THEN jsonb_build_object('errorText', 'interrupted before it finished')
					ELSE jsonb_build_object('errorText', coalesce(src.part->>'error', 'failed'))
				END
			WHEN 'note' THEN
				jsonb_build_object(
					'type', 'data-note',
					'data', jsonb_build_object('kind', src.part->'kind', 'text', src.part->'text')
						|| CASE WHEN src.part ? 'data' THEN jsonb_build_object('data', src.part->'data') ELSE '{}'::jsonb END)
			ELSE src.part
		END
	) AS out
	GROUP BY src.id
) AS conv
WHERE m.id = conv.id;
