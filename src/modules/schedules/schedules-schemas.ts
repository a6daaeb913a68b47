import { type Static, Type } from '@sinclair/typebox';
import {
  PageQuerySchema,
  PaginationSchema,
  StrictObject,
  StringEnum,
  TimestampSchema,
  UuidSchema,
} from '../../http/common-schemas.js';
import { NAME_RULE } from '../../http/names.js';
import { MAX_MESSAGE_CHARS } from '../tasks/tasks-schemas.js';

export const MAX_SCHEDULES_PER_AGENT = 100;
export const MAX_CATCH_UP_SECONDS = 604_800;

const Name = Type.String({ minLength: 1, maxLength: 255, description: `1 to 255 characters. ${NAME_RULE}` });
const Cron = Type.String({
  maxLength: 255,
  description:
    'Five fields (minute hour day-of-month month day-of-week) or six (seconds first); numbers, names, lists, ranges and steps; or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.',
});
const Timezone = Type.String({ description: 'An IANA tz database name (Europe/Berlin, UTC). Default UTC.' });
const Message = Type.String({
  minLength: 1,
  maxLength: MAX_MESSAGE_CHARS,
  description:
    'The task message. Placeholders: {{schedule.uuid}}, {{schedule.name}}, {{schedule.scheduled_for}}, {{schedule.local_time}}, {{schedule.local_date}}.',
});
const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Copied into each task, with schedule_uuid, scheduled_for and run_id added. At most 16 KiB.',
});
const Priority = Type.Integer({ minimum: 1, maximum: 10, description: 'Of the tasks it creates; default 5.' });
const ConcurrencyKey = Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()], {
  description:
    "The concurrency_key of the tasks it creates (null: none). Tasks of one key share the agent's concurrency_per_key and take turns with other keys.",
});
const Overlap = StringEnum(['allow', 'skip'] as const, {
  description: 'skip: no occurrence fires while the latest task of the schedule is not final.',
});
const CatchUp = Type.Integer({
  minimum: 0,
  maximum: MAX_CATCH_UP_SECONDS,
  description: 'How late a missed occurrence may still fire (at least 10 s apply).',
});

export const ScheduleSchema = Type.Object(
  {
    uuid: UuidSchema,
    agent_uuid: UuidSchema,
    name: Type.String(),
    cron: Type.String(),
    timezone: Type.String(),
    message: Type.String(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    priority: Type.Integer(),
    concurrency_key: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    overlap: Type.String(),
    catch_up_seconds: Type.Integer(),
    next_run_at: Type.Union([TimestampSchema, Type.Null()], { description: 'Null while disabled.' }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  },
  { title: 'Schedule' },
);
export type ScheduleView = Static<typeof ScheduleSchema>;

export const CreateScheduleBody = StrictObject({
  name: Name,
  cron: Cron,
  timezone: Type.Optional(Timezone),
  message: Message,
  metadata: Type.Optional(Metadata),
  priority: Type.Optional(Priority),
  concurrency_key: Type.Optional(ConcurrencyKey),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true.' })),
  overlap: Type.Optional(Overlap),
  catch_up_seconds: Type.Optional(CatchUp),
});
export type CreateScheduleInput = Static<typeof CreateScheduleBody>;

export const PatchScheduleBody = StrictObject({
  name: Type.Optional(Name),
  cron: Type.Optional(Cron),
  timezone: Type.Optional(Timezone),
  message: Type.Optional(Message),
  metadata: Type.Optional(Metadata),
  priority: Type.Optional(Priority),
  concurrency_key: Type.Optional(ConcurrencyKey),
  enabled: Type.Optional(Type.Boolean()),
  overlap: Type.Optional(Overlap),
  catch_up_seconds: Type.Optional(CatchUp),
});
export type PatchScheduleInput = Static<typeof PatchScheduleBody>;

export const PreviewBody = StrictObject({
  cron: Cron,
  timezone: Type.Optional(Timezone),
  from: Type.Optional(Type.String({ description: 'ISO 8601 with a zone designator; default now.' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: '1 to 100, default 5.' })),
});
export type PreviewInput = Static<typeof PreviewBody>;

export const PreviewReply = Type.Object({
  occurrences: Type.Array(
    Type.Object({
      scheduled_for: TimestampSchema,
      local: Type.String({ description: 'The wall clock in the zone then, YYYY-MM-DDTHH:MM:SS±HH:MM.' }),
    }),
  ),
});

export const AgentParams = Type.Object({ id: UuidSchema });
export const ScheduleParams = Type.Object({ id: UuidSchema, scheduleId: UuidSchema });
export const ScheduleListQuery = PageQuerySchema;
export const ScheduleListReply = Type.Object({ schedules: Type.Array(ScheduleSchema), pagination: PaginationSchema });

export const RunSchema = Type.Object({
  run_id: UuidSchema,
  scheduled_for: TimestampSchema,
  fired_at: TimestampSchema,
  manual: Type.Boolean(),
  task_id: Type.Union([UuidSchema, Type.Null()]),
  skipped_reason: Type.Union([StringEnum(['overlap', 'agent_unavailable', 'missed'] as const), Type.Null()]),
});
export const RunListReply = Type.Object({ runs: Type.Array(RunSchema), pagination: PaginationSchema });

export const RunAccepted = Type.Object({
  task_id: UuidSchema,
  status: Type.Literal('queued'),
  schedule_uuid: UuidSchema,
  run_id: UuidSchema,
  scheduled_for: TimestampSchema,
  poll_url: Type.String(),
});
export type RunAccepted = Static<typeof RunAccepted>;
